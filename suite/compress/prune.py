"""Global unstructured magnitude pruning (``torch.nn.utils.prune``), then fine-tuning with the zeros kept.

The smallest-magnitude ``sparsity`` fraction of the chosen weights, ranked together across
layers, is set to zero. ``torch.nn.utils.prune`` keeps each mask as a buffer and recomputes
``weight = weight_orig * mask`` before every forward pass, so fine-tuning (which updates
``weight_orig``) cannot revive a pruned weight; ``finish`` makes the zeros permanent. Dense
kernels do the same work on a zero as on any number: the record shows the (absent) speed-up
honestly, and the artefact is a dense state dict of the same size.

``schedule='gradual'`` (Zhu and Gupta 2017) starts the fine-tuning dense and raises the sparsity
along a cubic ramp, s_t = s (1 - (1 - t / T)^3) over the first T = ``ramp`` x the planned steps,
re-ranking the surviving weights every ``every`` steps, so the network adapts while it loses them
(a one-shot 90 % cut can leave too little to recover from). The best-weights callback takes only
epochs at the full sparsity, so a lower-sparsity snapshot is never restored as the result.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import torch
from torch import nn
from torch.nn.utils import prune

from suite.compress.method import Context, Method
from suite.training.callbacks import Callback

if TYPE_CHECKING:
    from suite.training.state import FitState

KINDS = ("linear", "recurrent", "embedding")
SCHEDULES = ("one_shot", "gradual")
log = logging.getLogger(__name__)


def check_fraction(name: str, value: float) -> float:
    """A fraction of weights, heads or units to remove: in [0, 1), or a ``ValueError`` naming the setting."""
    if not 0.0 <= float(value) < 1.0:
        raise ValueError(f"compress.{name} must be in [0, 1), got {value}")
    return float(value)


def prunable(model: nn.Module, kinds: Sequence[str]) -> Iterator[tuple[nn.Module, str]]:
    """(module, parameter name) of every weight matrix of the given kinds: Linear weights, recurrent input/hidden
    matrices, embedding tables."""
    for module in model.modules():
        if "linear" in kinds and isinstance(module, nn.Linear):
            yield module, "weight"
        elif "recurrent" in kinds and isinstance(module, nn.RNNBase):
            # by their registered names: once pruned, the parameter is weight_*_orig and weight_* the masked tensor
            yield from ((module, name) for name in module._flat_weights_names if name.startswith("weight_"))
        elif "embedding" in kinds and isinstance(module, nn.Embedding):
            yield module, "weight"


def set_sparsity(model: nn.Module, layers: Sequence[str], sparsity: float) -> None:
    """Re-rank the surviving weights of a pruned model (``torch.nn.utils.prune`` masks attached) globally and zero the
    smallest, so that exactly ``sparsity`` of them are masked; a weight masked before stays masked (its value is
    zero)."""
    pairs = list(prunable(model, layers))
    masks = [getattr(module, f"{name}_mask") for module, name in pairs]
    with torch.no_grad():
        scores = torch.cat(
            [(getattr(module, f"{name}_orig") * mask).abs().flatten() for (module, name), mask in zip(pairs, masks)]
        )
        keep = torch.ones_like(scores)
        keep[torch.topk(scores, round(sparsity * scores.numel()), largest=False).indices] = 0.0
        for mask, part in zip(masks, keep.split([m.numel() for m in masks])):
            mask.copy_(part.view_as(mask))


class GradualPruning(Callback):
    """Zhu and Gupta's cubic ramp as a training callback: sparsity ``target`` (1 - (1 - t / T)^3) at step t, T =
    ``ramp`` x the planned steps.

    Masks are re-ranked every ``every`` steps and at T; until T the epochs are not eligible as the
    best weights (``state.best_eligible``), so the result is never a lower-sparsity snapshot.
    """

    def __init__(self, target: float, layers: Sequence[str], ramp: float, every: int) -> None:
        self.target, self.layers, self.ramp, self.every = target, list(layers), ramp, every
        self.current = 0.0  # the sparsity the masks hold now

    def sparsity_at(self, step: int, total: int) -> float:
        end = max(1, round(self.ramp * total))
        return self.target * (1.0 - (1.0 - min(step, end) / end) ** 3)

    def on_step_end(self, state: FitState) -> None:
        wanted = self.sparsity_at(state.step, state.total)
        if wanted > self.current and (state.step % self.every == 0 or wanted == self.target):
            set_sparsity(state.model, self.layers, wanted)
            self.current = wanted

    def on_epoch_end(self, state: FitState) -> None:
        state.best_eligible = self.current >= self.target

    def state_dict(self) -> dict[str, Any]:
        return {"current": self.current}  # the masks themselves are buffers in the model's state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.current = state["current"]


class MagnitudePruning(Method):
    """Zero the ``sparsity`` fraction of smallest weights (ranked globally over ``layers``), fine-tune, keep them zero.

    Args:
        sparsity: fraction of the chosen weights set to zero, in [0, 1).
        layers: kinds of weight pruned: 'linear', 'recurrent' (LSTM/GRU/RNN matrices), 'embedding'.
        fine_tune: trainer settings of the fine-tuning (None: none).
        schedule: 'one_shot' (pruned to ``sparsity`` before fine-tuning) or 'gradual' (Zhu and Gupta's cubic ramp during
            it).
        ramp: for 'gradual', the fraction of the fine-tuning's planned steps over which the sparsity rises, in (0, 1].
        every: for 'gradual', the steps between mask updates.
    """

    name = "magnitude_pruning"

    def __init__(
        self,
        sparsity: float,
        layers: Sequence[str] = ("linear", "recurrent"),
        fine_tune: dict[str, Any] | None = None,
        schedule: str = "one_shot",
        ramp: float = 0.5,
        every: int = 10,
    ) -> None:
        super().__init__(fine_tune)
        self.sparsity = check_fraction("sparsity", sparsity)
        unknown = sorted(set(layers) - set(KINDS))
        if unknown or not layers:
            raise ValueError(f"compress.layers takes some of {list(KINDS)}, got {list(layers)}")
        if schedule not in SCHEDULES:
            raise ValueError(f"compress.schedule must be one of {SCHEDULES}, got {schedule!r}")
        if schedule == "gradual" and fine_tune is None:
            raise ValueError("compress.schedule=gradual prunes during fine-tuning: it needs compress.fine_tune")
        if not 0.0 < float(ramp) <= 1.0:
            raise ValueError(f"compress.ramp must be in (0, 1], got {ramp}")
        if int(every) < 1:
            raise ValueError(f"compress.every must be a positive number of steps, got {every}")
        self.layers, self.schedule, self.ramp, self.every = list(layers), schedule, float(ramp), int(every)
        self.reached_in_fine_tune: bool | None = None

    def check(self, model: nn.Module) -> None:
        if not any(True for _ in prunable(model, self.layers)):
            raise ValueError(f"compress.layers={self.layers}: the model has no such weights to prune")

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        pruned = copy.deepcopy(model)
        first = (
            self.sparsity if self.schedule == "one_shot" else 0.0
        )  # gradual: the masks start whole, the callback raises them
        prune.global_unstructured(
            list(prunable(pruned, self.layers)), pruning_method=prune.L1Unstructured, amount=first
        )
        return pruned

    def callbacks(self) -> list[Callback]:
        return [GradualPruning(self.sparsity, self.layers, self.ramp, self.every)] if self.schedule == "gradual" else []

    def finish(self, model: nn.Module) -> nn.Module:
        pairs = list(prunable(model, self.layers))
        if self.schedule == "gradual":
            masks = torch.cat([getattr(m, f"{n}_mask").flatten() for m, n in pairs])
            masked = int((masks == 0).sum())
            self.reached_in_fine_tune = masked >= round(self.sparsity * masks.numel())  # as set_sparsity counts
            if (
                not self.reached_in_fine_tune
            ):  # the fine-tuning stopped before the ramp's end (a time budget): cut the rest at once
                log.warning(
                    "the gradual schedule stopped at sparsity %.3f before its target %.3f: the "
                    "rest is pruned without fine-tuning",
                    masked / masks.numel(),
                    self.sparsity,
                )
                set_sparsity(model, self.layers, self.sparsity)
        for module, name in pairs:
            if prune.is_pruned(module) and hasattr(module, f"{name}_mask"):
                prune.remove(module, name)  # weight_orig * mask becomes the plain weight
        return model

    def describe(self) -> dict[str, Any]:
        out = {"method": self.name, "target_sparsity": self.sparsity, "layers": self.layers, "schedule": self.schedule}
        if self.schedule == "gradual":
            out |= {"ramp": self.ramp, "every": self.every, "reached_in_fine_tune": self.reached_in_fine_tune}
        return out


def pruned_sparsity(model: nn.Module, layers: Sequence[str]) -> float:
    """Fraction of zeros among the weights of the given kinds (the figure ``sparsity`` sets)."""
    total = zeros = 0
    for module, name in prunable(model, layers):
        weight = getattr(module, name)
        total += weight.numel()
        zeros += int((weight == 0).sum())
    return zeros / max(1, total)
