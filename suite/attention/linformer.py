"""Linformer attention (Wang et al. 2020): keys and values projected along the length to k rows.

softmax(q (E K)^T / sqrt(d)) (F V) with learned E, F of shape (k, max_len), shared by the heads
of a layer: O(L * k) time and memory. The length is fixed at build time: ``max_len`` comes from
the layer (the task's longest input); a shorter input uses the first L columns of E and F, a
longer one is an error. Padded keys and values are zeroed before the projection, so their
content changes no output (they still take part as zero rows: Linformer has no per-key mask).
With E = F = the identity (k = L) it is full attention. Encoder only: no causal mode.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from suite.attention.core import PADDING, AttentionCore, positive_int, self_attention_only
from suite.nn import dropout


class LinformerAttention(AttentionCore):
    """Low-rank attention along the length.

    Args:
        proj_len: k, the projected length.
        dropout: dropout on the attention weights while training.
        max_len: from the layer; required.
    """

    name = "linformer"
    capabilities = frozenset({PADDING})

    def __init__(self, proj_len: int = 128, dropout: float = 0.0, **sizes: int | None) -> None:
        super().__init__(dropout, **sizes)
        if self.max_len is None:
            raise ValueError(
                f"attention variant {self.name!r} needs a fixed max_len at build time; the task sets "
                "model.backbone.max_len (got none)"
            )
        self.max_len = positive_int(self.max_len, "max_len", self.name)
        self.proj_len = positive_int(proj_len, "proj_len", self.name)
        self.e = nn.Parameter(torch.randn(self.proj_len, self.max_len) / math.sqrt(self.proj_len))  # for keys
        self.f = nn.Parameter(torch.randn(self.proj_len, self.max_len) / math.sqrt(self.proj_len))  # for values

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        """Weights trained for another length are refused by name (torch would only report a size mismatch)."""
        saved = state_dict.get(prefix + "e")
        if saved is not None and saved.size(1) != self.max_len:
            raise ValueError(
                f"attention variant {self.name!r} was trained for max_len={saved.size(1)} and is built "
                f"here for max_len={self.max_len}: its projections fix the length; compose the run "
                "with the training run's task length"
            )
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 -> (B, H, L, Dh), L <= max_len."""
        self_attention_only(self, q, k, causal)
        length = k.size(2)
        if length > self.max_len:
            raise ValueError(
                f"attention variant {self.name!r} was built for max_len={self.max_len}, got a sequence of {length}"
            )
        if pad_mask is not None:
            k, v = (x.masked_fill(pad_mask[:, None, :, None], 0.0) for x in (k, v))
        kp = self.e[:, :length] @ k  # (B, H, k, Dh)
        vp = self.f[:, :length] @ v  # (B, H, k, Dh)
        weights = (q @ kp.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(dim=-1)  # (B, H, L, k)
        return dropout(weights, self.dropout, self.training) @ vp
