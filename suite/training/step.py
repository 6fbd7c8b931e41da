"""One optimizer step: the step training takes and the step the speed harness times are this one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from suite.runtime import numerics
from suite.runtime.failures import Diverged
from suite.types import Batch, Task


@dataclass
class Update:
    """How a step changes the weights: the optimizer, its schedule (None: none) and the gradient-norm clip (None or 0:
    none)."""

    optimizer: torch.optim.Optimizer
    scheduler: Any = None
    grad_clip: float | None = None


def optimizer_step(
    model: nn.Module, task: Task, batch: Batch, update: Update, precision: str, device: torch.device
) -> Tensor:
    """Forward under ``precision`` autocast, the task's loss, backward, clipped gradients, optimizer and schedule step.

    Returns the loss, detached. Raises ``Diverged`` (before any update) when it is not finite.
    """
    with numerics.autocast(precision, device):
        loss = task.loss(model, batch)
    if not torch.isfinite(loss):
        raise Diverged(f"loss became {loss.item()}")
    update.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if update.grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), update.grad_clip)
    update.optimizer.step()
    if update.scheduler is not None:
        update.scheduler.step()
    return loss.detach()
