"""How much the loss depends on each group of a layer's inputs: attention heads, feed-forward neurons, recurrent units.

A gate xi (one per group, all ones) multiplies the groups of a layer's input; the
importance of group g is the sum over batches of |dL/dxi_g| (Michel et al. 2019 for heads;
for a neuron it is the first-order Taylor estimate |sum a dL/da| of Molchanov et al. 2017).
The gates never change the outputs: they only collect gradients.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import Tensor, nn

from suite.types import Batch


class InputGate:
    """Ones (G,) multiplied into the G equal groups of ``module``'s input (..., G * S), as a forward pre-hook."""

    def __init__(self, module: nn.Module, groups: int, device: torch.device) -> None:
        self.groups = groups
        self.gate = torch.ones(groups, device=device, requires_grad=True)
        self.handle = module.register_forward_pre_hook(self.hook)

    def hook(self, _module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        x = args[0]
        grouped = x.unflatten(-1, (self.groups, -1))  # (..., G, S)
        return ((grouped * self.gate.to(x.dtype)[:, None]).flatten(-2), *args[1:])


def gate_importance(
    model: nn.Module, task: Any, batches: Iterable[Batch], sites: dict[str, tuple[nn.Module, int]], device: torch.device
) -> dict[str, Tensor]:
    """Per site (a module, e.g. a Linear, and its number of input groups): (G,) summed |d loss / d gate| over
    ``batches``.

    The model's own gradients are left untouched (computed and discarded); dropout is off.
    """
    gates = {name: InputGate(module, groups, device) for name, (module, groups) in sites.items()}
    scores = {name: torch.zeros(g.groups, device=device) for name, g in gates.items()}
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            loss = task.loss(model, batch.to(device))
            grads = torch.autograd.grad(loss, [g.gate for g in gates.values()], allow_unused=True)
            for (name, _), grad in zip(gates.items(), grads):
                if grad is not None:
                    scores[name] += grad.abs()
    finally:
        for gate in gates.values():
            gate.handle.remove()
        model.train(was_training)
    return scores
