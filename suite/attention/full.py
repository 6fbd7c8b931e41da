"""Full softmax attention: the fused SDPA kernel, and an explicit reference path that returns weights."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import ALL, AttentionCore


def allowed_mask(pad_mask: Tensor | None, causal: bool, lq: int, lk: int, device: torch.device) -> Tensor | None:
    """Boolean mask of allowed (query, key) pairs, broadcastable to (B, H, Lq, Lk); None if all allowed."""
    mask = None
    if pad_mask is not None:
        mask = ~pad_mask[:, None, None, :]  # (B, 1, 1, Lk)
    if causal:
        # Query i (aligned to the end of the keys, as with a cache) may see keys up to i + (lk - lq).
        tri = torch.ones(lq, lk, dtype=torch.bool, device=device).tril(diagonal=lk - lq)
        mask = tri if mask is None else mask & tri
    return mask


def attention_weights(q: Tensor, k: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
    """Textbook softmax(q k^T / sqrt(d_k)) with masking; (B, H, Lq, Dh), (B, H, Lk, Dh) -> (B, H, Lq, Lk).

    The reference path: slow and memory-hungry (it materialises the L x L matrix),
    used by tests and attention maps, never in training.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    mask = allowed_mask(pad_mask, causal, q.size(-2), k.size(-2), q.device)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)


class FullAttention(AttentionCore):
    """Softmax attention over all key positions through ``F.scaled_dot_product_attention``.

    Args:
        dropout: dropout on the attention weights while training.
        n_heads, head_dim, max_len: sizes from the layer (unused: full attention needs none).
    """

    name = "full"
    capabilities = ALL

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, Lq, Dh) x2 keys/values (B, H, Lk, Dh) -> (B, H, Lq, Dh)."""
        p = self.dropout if self.training else 0.0
        if pad_mask is None and causal and q.size(-2) == k.size(-2):
            # The kernel's own causal path avoids building a mask.
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        mask = allowed_mask(pad_mask, causal, q.size(-2), k.size(-2), q.device)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

    def reference(
        self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Explicit path without dropout: (output (B, H, Lq, Dh), weights (B, H, Lq, Lk))."""
        w = attention_weights(q, k, pad_mask, causal)
        return w @ v, w
