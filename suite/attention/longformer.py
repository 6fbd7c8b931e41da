"""Longformer attention (Beltagy et al. 2020): a sliding window plus global positions.

The first ``n_global`` positions (with [CLS] pooling, [CLS] is position 0) attend to every key
and every query attends to them; the other queries see their window (as ``local``) and the
global keys, each key once. Cost O(L * (w + g)) for the windowed rows and O(g * L) for the
global rows, never an L x L matrix. Encoder only (no causal mode).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.attention.core import PADDING, AttentionCore, key_padding, masked_softmax, positive_int, self_attention_only
from suite.attention.local import refuse_full_window, sliding_blocks, unblock
from suite.nn import dropout


class LongformerAttention(AttentionCore):
    """Sliding-window attention with global tokens at the start.

    Args:
        window: keys on each side a windowed query sees (a positive int, below ``max_len - 1`` where known).
        n_global: number of leading global positions (0: plain ``local``).
        dropout: dropout on the attention weights while training.
    """

    name = "longformer"
    capabilities = frozenset({PADDING})

    def __init__(self, window: int = 64, n_global: int = 1, dropout: float = 0.0, **sizes: int | None) -> None:
        super().__init__(dropout, **sizes)
        self.window = positive_int(window, "window", self.name)
        self.n_global = positive_int(n_global, "n_global", self.name, least=0)
        refuse_full_window(self.name, self.window, self.max_len)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 -> (B, H, L, Dh)."""
        self_attention_only(self, q, k, causal)
        b, _, length, d = q.shape
        g = min(self.n_global, length)
        pad = key_padding(pad_mask, b, length, q.device)  # (B, L)
        qb, kc, vc, allowed, k_pos = sliding_blocks(q, k, v, pad_mask, self.window, causal=False)
        allowed = allowed & (k_pos[:, None, :] >= g)  # (B, 1, n, w, c); global keys are read below, once
        local = qb @ kc.transpose(-2, -1)  # (B, H, n, w, c)
        to_global = qb @ k[:, :, None, :g].transpose(-2, -1)  # (B, H, n, w, g)
        allowed_g = ~pad[:, None, None, None, :g].expand(*allowed.shape[:4], g)  # (B, 1, n, w, g)
        allowed_all = torch.cat([allowed, allowed_g], dim=-1)  # (B, 1, n, w, c + g)
        weights = masked_softmax(torch.cat([local, to_global], dim=-1) / math.sqrt(d), allowed_all)
        weights = dropout(weights, self.dropout, self.training)
        c = local.size(-1)
        out = unblock(weights[..., :c] @ vc + weights[..., c:] @ v[:, :, None, :g], length)  # (B, H, L, Dh)
        if g == 0:
            return out
        # Global rows: the first g queries read every key.
        scores = q[:, :, :g] @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, g, L)
        weights = dropout(masked_softmax(scores, ~pad[:, None, None, :]), self.dropout, self.training)
        return torch.cat([weights @ v, out[:, :, g:]], dim=2)
