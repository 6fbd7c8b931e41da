"""Pooling (sequence -> vector) and classification heads.

A pooler may add a token to the input (the [CLS] token); ``prepend`` does that before
positions are added, so [CLS] gets position 0 as in BERT and ViT.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from suite.nn import Dropout


class Pooling(nn.Module):
    """(B, L, D), (B, L) mask -> (B, D). By default nothing is prepended to the input."""

    def __init__(self, d_model: int) -> None:
        super().__init__()

    def prepend(self, x: Tensor, pad_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
        return x, pad_mask


class MeanPooling(Pooling):
    """Average over real (non-pad) positions."""

    def forward(self, h: Tensor, pad_mask: Tensor | None) -> Tensor:
        """(B, L, D), (B, L) -> (B, D)."""
        if pad_mask is None:
            return h.mean(dim=1)
        keep = (~pad_mask)[..., None].to(h.dtype)
        return (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)


class LastPooling(Pooling):
    """The output at the last real position: a unidirectional RNN's summary of the whole input."""

    def forward(self, h: Tensor, pad_mask: Tensor | None) -> Tensor:
        if pad_mask is None:
            return h[:, -1]
        last = (~pad_mask).sum(dim=1).clamp(min=1) - 1  # (B,)
        return h[torch.arange(h.size(0), device=h.device), last]


class ClsPooling(Pooling):
    """A learned [CLS] vector prepended to the input; its output summarises the sequence."""

    def __init__(self, d_model: int) -> None:
        super().__init__(d_model)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))

    def prepend(self, x: Tensor, pad_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
        """(B, L, D) -> (B, 1 + L, D); the mask grows by one real position."""
        x = torch.cat([self.cls.expand(x.size(0), -1, -1).to(x.dtype), x], dim=1)
        if pad_mask is not None:
            pad_mask = torch.cat([pad_mask.new_zeros(pad_mask.size(0), 1), pad_mask], dim=1)
        return x, pad_mask

    def forward(self, h: Tensor, pad_mask: Tensor | None) -> Tensor:
        return h[:, 0]


class ClassificationHead(nn.Module):
    """(B, D) -> (B, C) logits, with an optional hidden layer.

    Args:
        d_model: input width D.
        n_classes: number of classes C.
        hidden: width of a tanh hidden layer (0: a single linear map).
        dropout: before the final linear map.
    """

    def __init__(self, d_model: int, n_classes: int, hidden: int = 0, dropout: float = 0.0) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if hidden:
            layers += [nn.Linear(d_model, hidden), nn.Tanh()]
        layers += [Dropout(dropout), nn.Linear(hidden or d_model, n_classes)]
        self.net = nn.Sequential(*layers)

    def forward(self, z: Tensor) -> Tensor:
        return self.net(z)


class Generator(nn.Module):
    """Decoder states (B, T, D) -> next-token logits (B, T, V); the softmax lives in the loss and the search.

    Args:
        d_model: width D.
        vocab_size: target vocabulary V.
        tie_to: an embedding whose (V, D) matrix doubles as the output projection
            ("Attention Is All You Need" §3.4; Press & Wolf 2017); None for its own matrix.
    """

    def __init__(self, d_model: int, vocab_size: int, tie_to: nn.Embedding | None = None) -> None:
        super().__init__()
        self.proj = nn.Linear(d_model, vocab_size, bias=False)
        if tie_to is not None:
            if tie_to.weight.shape != self.proj.weight.shape:
                raise ValueError(
                    f"cannot tie a {tuple(self.proj.weight.shape)} output to a {tuple(tie_to.weight.shape)} embedding"
                )
            self.proj.weight = tie_to.weight

    def forward(self, h: Tensor) -> Tensor:
        return self.proj(h)  # (B, T, V)
