"""Explicit softmax attention: the L x L weight matrix materialised, as the paper writes it.

Numerically the same as ``FullAttention``; measured beside it, it shows what the fused kernel
saves: the O(L^2) bytes of the weights (kept for the backward pass), and their time.
"""

from __future__ import annotations

from torch import Tensor

from suite.attention.full import FullAttention, attention_weights
from suite.nn import dropout


class ExplicitAttention(FullAttention):
    """``FullAttention`` computed as softmax(q k^T / sqrt(d_k)) v, with the weights as a tensor."""

    name = "explicit"

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, Lq, Dh) x2 keys/values (B, H, Lk, Dh) -> (B, H, Lq, Dh), through (B, H, Lq, Lk) weights."""
        weights = attention_weights(q, k, pad_mask, causal)
        return dropout(weights, self.dropout, self.training) @ v
