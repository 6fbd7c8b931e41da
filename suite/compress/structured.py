"""Structured pruning of a Transformer encoder: heads and feed-forward neurons ranked by importance, physically removed.

Heads are ranked together across layers by their importance (``suite.compress.importance``),
normalised per layer as Michel et al. (2019) do, and the least important ``heads`` fraction is
removed, keeping at least one head in every layer. Feed-forward neurons are ranked within their
layer and the ``neurons`` fraction of each layer removed. Removal makes the matrices smaller
(``suite.compress.slicing``), so the work really drops; fine-tuning then recovers accuracy.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch
from torch import Tensor, nn

from suite.attention.full import FullAttention
from suite.compress.importance import gate_importance
from suite.compress.method import Context, Method
from suite.compress.prune import check_fraction
from suite.compress.slicing import keep_heads, keep_neurons
from suite.models.transformer import EncoderLayer
from suite.training.trainer import limited


def encoder_layers(model: nn.Module) -> list[EncoderLayer]:
    return [m for m in model.modules() if isinstance(m, EncoderLayer)]


def heads_to_keep(scores: list[Tensor], fraction: float) -> list[Tensor]:
    """Per layer, the indices of the heads kept when the ``fraction`` least important of all are removed (scores
    normalised per layer; one head at least per layer)."""
    normalised = [s / s.norm().clamp(min=1e-12) for s in scores]
    flat = [
        (float(s), layer, head) for layer, layer_scores in enumerate(normalised) for head, s in enumerate(layer_scores)
    ]
    to_remove = math.floor(fraction * len(flat))
    kept = [set(range(len(s))) for s in scores]
    for _, layer, head in sorted(flat):
        if to_remove == 0:
            break
        if len(kept[layer]) > 1:
            kept[layer].discard(head)
            to_remove -= 1
    return [torch.tensor(sorted(k), dtype=torch.long) for k in kept]


def neurons_to_keep(score: Tensor, fraction: float) -> Tensor:
    """The indices of the most important ``1 - fraction`` of a layer's neurons (one at least)."""
    keep = max(1, len(score) - math.floor(fraction * len(score)))
    return score.topk(keep).indices.sort().values.cpu()


class StructuredPruning(Method):
    """Remove the least important attention heads and feed-forward neurons of every encoder layer, then fine-tune.

    Args:
        heads: fraction of all heads removed, in [0, 1) (ranked across layers).
        neurons: fraction of each feed-forward layer's neurons removed, in [0, 1).
        importance_batches: training batches over which importance is summed.
        fine_tune: trainer settings of the fine-tuning (None: none).
    """

    name = "structured_pruning"

    def __init__(
        self,
        heads: float = 0.0,
        neurons: float = 0.0,
        importance_batches: int = 32,
        fine_tune: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(fine_tune)
        self.heads, self.neurons = check_fraction("heads", heads), check_fraction("neurons", neurons)
        if self.heads == self.neurons == 0.0:
            raise ValueError("compress.heads and compress.neurons are both 0: nothing to remove")
        self.importance_batches = int(importance_batches)
        self.kept: dict[str, list[int]] = {}  # heads and neurons left in each layer, once compressed

    def check(self, model: nn.Module) -> None:
        layers = encoder_layers(model)
        if not layers:
            raise ValueError(
                f"compress={self.name} (heads {self.heads}, neurons {self.neurons}) applies to Transformer encoders: "
                f"this model ({type(model).__name__}) has no encoder layer with attention heads or a feed-forward block"
            )
        cores = {
            type(layer.self_attn.core).__name__
            for layer in layers
            if not isinstance(layer.self_attn.core, FullAttention)
        }
        if self.heads and cores:
            raise ValueError(
                f"compress.heads={self.heads}: attention variant(s) {sorted(cores)} may hold per-head state; "
                "head removal supports full attention"
            )

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        pruned = copy.deepcopy(model)
        layers = encoder_layers(pruned)
        sites = {}
        for i, layer in enumerate(layers):
            sites[f"heads.{i}"] = (layer.self_attn.out_proj, layer.self_attn.n_heads)
            sites[f"neurons.{i}"] = (layer.ff.linear2, layer.ff.linear2.in_features)
        batches = limited(context.task.loaders(32, context.seed)["train"], self.importance_batches)
        scores = gate_importance(pruned, context.task, batches, sites, context.device)
        if self.heads:
            for layer, kept in zip(
                layers, heads_to_keep([scores[f"heads.{i}"] for i in range(len(layers))], self.heads)
            ):
                keep_heads(layer.self_attn, kept.to(context.device))
        if self.neurons:
            for i, layer in enumerate(layers):
                keep_neurons(layer.ff, neurons_to_keep(scores[f"neurons.{i}"], self.neurons).to(context.device))
        self.kept = {
            "heads": [layer.self_attn.n_heads for layer in layers],
            "neurons": [layer.ff.linear1.out_features for layer in layers],
        }
        return pruned

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "heads_removed": self.heads,
            "neurons_removed": self.neurons,
            "importance_batches": self.importance_batches,
            "kept_heads": self.kept.get("heads"),
            "kept_neurons": self.kept.get("neurons"),
        }
