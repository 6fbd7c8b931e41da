"""Global unstructured magnitude pruning (``torch.nn.utils.prune``), then fine-tuning with the zeros kept.

The smallest-magnitude ``sparsity`` fraction of the chosen weights, ranked together across
layers, is set to zero. ``torch.nn.utils.prune`` keeps each mask as a buffer and recomputes
``weight = weight_orig * mask`` before every forward pass, so fine-tuning (which updates
``weight_orig``) cannot revive a pruned weight; ``finish`` makes the zeros permanent. Dense
kernels do the same work on a zero as on any number: the record shows the (absent) speed-up
honestly, and the artefact is a dense state dict of the same size.
"""
from __future__ import annotations

import copy
from typing import Any, Iterator, Sequence

from torch import nn
from torch.nn.utils import prune

from suite.compress.method import Context, Method

KINDS = ("linear", "recurrent", "embedding")


def check_fraction(name: str, value: float) -> float:
    """A fraction of weights, heads or units to remove: in [0, 1), or a ``ValueError`` naming the setting."""
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"compress.{name} must be in [0, 1), got {value}")
    return float(value)


def prunable(model: nn.Module, kinds: Sequence[str]) -> Iterator[tuple[nn.Module, str]]:
    """(module, parameter name) of every weight matrix of the given kinds: Linear weights, recurrent input/hidden matrices, embedding tables."""
    for module in model.modules():
        if "linear" in kinds and isinstance(module, nn.Linear):
            yield module, "weight"
        elif "recurrent" in kinds and isinstance(module, nn.RNNBase):
            # by their registered names: once pruned, the parameter is weight_*_orig and weight_* the masked tensor
            yield from ((module, name) for name in module._flat_weights_names if name.startswith("weight_"))
        elif "embedding" in kinds and isinstance(module, nn.Embedding):
            yield module, "weight"


class MagnitudePruning(Method):
    """Zero the ``sparsity`` fraction of smallest weights (ranked globally over ``layers``), fine-tune, keep them zero.

    Args:
        sparsity: fraction of the chosen weights set to zero, in [0, 1).
        layers: kinds of weight pruned: 'linear', 'recurrent' (LSTM/GRU/RNN matrices), 'embedding'.
        fine_tune: trainer settings of the fine-tuning (None: none).
    """

    name = "magnitude_pruning"

    def __init__(self, sparsity: float, layers: Sequence[str] = ("linear", "recurrent"), fine_tune: dict[str, Any] | None = None) -> None:
        super().__init__(fine_tune)
        self.sparsity = check_fraction("sparsity", sparsity)
        unknown = sorted(set(layers) - set(KINDS))
        if unknown or not layers:
            raise ValueError(f"compress.layers takes some of {list(KINDS)}, got {list(layers)}")
        self.layers = list(layers)

    def check(self, model: nn.Module) -> None:
        if not any(True for _ in prunable(model, self.layers)):
            raise ValueError(f"compress.layers={self.layers}: the model has no such weights to prune")

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        pruned = copy.deepcopy(model)
        prune.global_unstructured(list(prunable(pruned, self.layers)), pruning_method=prune.L1Unstructured, amount=self.sparsity)
        return pruned

    def finish(self, model: nn.Module) -> nn.Module:
        for module, name in list(prunable(model, self.layers)):
            if prune.is_pruned(module) and hasattr(module, f"{name}_mask"):
                prune.remove(module, name)  # weight_orig * mask becomes the plain weight
        return model

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "target_sparsity": self.sparsity, "layers": self.layers}


def pruned_sparsity(model: nn.Module, layers: Sequence[str]) -> float:
    """Fraction of zeros among the weights of the given kinds (the figure ``sparsity`` sets)."""
    total = zeros = 0
    for module, name in prunable(model, layers):
        weight = getattr(module, name)
        total += weight.numel()
        zeros += int((weight == 0).sum())
    return zeros / max(1, total)
