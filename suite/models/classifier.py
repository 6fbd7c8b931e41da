"""Task models composed from parts: content embedding -> positions -> backbone -> pooling -> head.

The task supplies what its inputs are (token, patch or residue embedding) and how many
classes there are; the model config supplies the backbone, positions and pooling.
"""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from torch import Tensor, nn

from suite.models.heads import ClassificationHead
from suite.nn import Dropout
from suite.runtime.compose import importable


class Classifier(nn.Module):
    """inputs -> (B, C) logits.

    Args:
        content: maps raw inputs to (B, L, D) (token ids, image patches, ...).
        positions: adds position information to (B, L, D).
        pooler: optionally prepends [CLS], then pools (B, L, D) -> (B, D).
        backbone: (B, L, D) -> (B, L, D), any ``suite.types.Backbone``.
        head: (B, D) -> (B, C).
        dropout: on the embedded input.
    """

    def __init__(
        self,
        content: nn.Module,
        positions: nn.Module,
        pooler: nn.Module,
        backbone: nn.Module,
        head: nn.Module,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.content, self.positions, self.pooler = content, positions, pooler
        self.backbone, self.head = backbone, head
        self.dropout = Dropout(dropout)

    def forward_features(self, inputs: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """Raw inputs, (B, L) mask -> pooled (B, D)."""
        x = self.content(inputs)  # (B, L, D)
        x, pad_mask = self.pooler.prepend(x, pad_mask)  # (B, L', D)
        x = self.dropout(self.positions(x))
        h = self.backbone(x, pad_mask)  # (B, L', D)
        return self.pooler(h, pad_mask)  # (B, D)

    def forward(self, inputs: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        return self.head(self.forward_features(inputs, pad_mask))  # (B, C)


def build_classifier(model_cfg: Any, content: nn.Module, n_classes: int, max_len: int) -> Classifier:
    """Build a ``Classifier`` from a ``conf/model/*.yaml`` node around the task's content embedding.

    Args:
        model_cfg: node with d_model, embed_dropout, positions, pooling, backbone, head.
        content: the task's input embedding, producing width ``model_cfg.d_model``.
        n_classes: output classes.
        max_len: longest input the model will see (before [CLS]).
    """
    d = model_cfg.d_model
    return Classifier(
        content=content,
        positions=instantiate(model_cfg.positions)(d_model=d, max_len=max_len + 1),
        pooler=instantiate(model_cfg.pooling)(d_model=d),
        backbone=build_sized(model_cfg.backbone, max_len + 1),
        head=ClassificationHead(d, n_classes, **model_cfg.head),
        dropout=model_cfg.embed_dropout,
    )


def build_sized(node: Any, max_len: int, where: str = "model.backbone", **settings: Any) -> nn.Module:
    """Instantiate a backbone or decoder node; one with a ``max_len`` key (the Transformer's, for
    attention variants of fixed length) is given the longest sequence it will see, and each of
    ``settings`` (e.g. ``causal=True``) goes to the node that has that key."""
    importable(node, where)  # a target that cannot be imported: the module and the config file named
    given = {"max_len": max_len, **settings}
    return instantiate(node, **{k: v for k, v in given.items() if k in node})


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
