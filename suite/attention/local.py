"""Sliding-window attention computed in blocks: O(L * w) time and memory, never an L x L mask.

Query i sees the keys j with |i - j| <= window (causal: i - window <= j <= i). Queries go in
blocks of ``window`` positions; each block reads its own key block and its neighbours (the one
before, and the one after unless causal), so a block's scores are (w, 3w) (causal (w, 2w)).
A window that reaches every key of the longest sequence (L - 1 or more) is refused at build time
(it would be full attention under this name); a core built without a length clips it to L.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import (
    CAUSAL,
    PADDING,
    AttentionCore,
    key_padding,
    positive_int,
    self_attention_only,
    sparse_reach,
)
from suite.types import State


def neighbourhood(x: Tensor, w: int, ahead: int, fill: float | bool = 0.0) -> Tensor:
    """(B, ..., n*w, [D]) along dim 2 for tensors, dim 1 for masks -> per block of w the previous,
    own and ``ahead`` following blocks: (B, ..., n, (2+ahead)*w, [D]); outside the sequence is ``fill``."""
    dim = 2 if x.dim() == 4 else 1
    before = x.new_full((*x.shape[:dim], w, *x.shape[dim + 1 :]), fill)
    after = x.new_full((*x.shape[:dim], ahead * w, *x.shape[dim + 1 :]), fill)
    padded = torch.cat([before, x, after], dim=dim)
    windows = padded.unfold(dim, (2 + ahead) * w, w)  # (..., n, [D], ctx)
    return windows.movedim(-1, dim + 1) if x.dim() == 4 else windows


def sliding_blocks(
    q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None, window: int, causal: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Blocked queries with their key/value neighbourhoods and what each query may see.

    Returns q (B, H, n, w, Dh), k and v (B, H, n, c, Dh), allowed (B, 1, n, w, c) and the key
    positions (n, c), with w = min(window, L) and c = 2w (causal) or 3w.
    """
    b, _, length, _ = q.shape
    w = min(window, length)  # a window >= L is clipped: all keys are in reach
    ahead = 0 if causal else 1
    extra = -length % w
    pad = F.pad(key_padding(pad_mask, b, length, q.device), (0, extra), value=True)  # (B, n*w)
    qb = F.pad(q, (0, 0, 0, extra)).unflatten(2, (-1, w))  # (B, H, n, w, Dh)
    kc = neighbourhood(F.pad(k, (0, 0, 0, extra)), w, ahead)  # (B, H, n, c, Dh)
    vc = neighbourhood(F.pad(v, (0, 0, 0, extra)), w, ahead)
    pad_c = neighbourhood(pad, w, ahead, fill=True)  # (B, n, c)
    n = qb.size(2)
    q_pos = torch.arange(n * w, device=q.device).view(n, w)  # (n, w)
    k_pos = neighbourhood(torch.arange(n * w, device=q.device)[None], w, ahead, fill=-1)[
        0
    ]  # (n, c); outside: masked by pad_c
    dist = q_pos[:, :, None] - k_pos[:, None, :]  # (n, w, c)
    near = (dist.abs() <= window) & ((dist >= 0) if causal else True)
    allowed = near[None] & ~pad_c[:, :, None, :]  # (B, n, w, c)
    return qb, kc, vc, allowed[:, None], k_pos


def refuse_full_window(variant: str, window: int, max_len: int | None) -> None:
    """A ValueError when a sliding window reaches every key of ``max_len`` positions (L - 1 or more); the widest
    window that stays sparse is L - 2."""
    reaches_all = max_len is not None and window >= max_len - 1
    sparse_reach(variant, "window", max_len, reaches_all, max_len - 2 if max_len is not None and max_len >= 3 else None)


def blocks_in_batch(x: Tensor) -> Tensor:
    """(B, H, n, ..., ...) -> (B * n, H, ..., ...): each block a batch entry of its own, the heads kept."""
    return x.transpose(1, 2).flatten(0, 1)


def unblock(x: Tensor, length: int) -> Tensor:
    """(B, H, n, w, Dh) -> (B, H, L, Dh), dropping the padding of the last block."""
    return x.flatten(2, 3)[:, :, :length]


class LocalAttention(AttentionCore):
    """Sliding-window softmax attention.

    Args:
        window: keys on each side a query sees (a positive int, below ``max_len - 1`` where that is known).
        dropout: dropout on the attention weights while training.
    """

    name = "local"
    capabilities = frozenset({PADDING, CAUSAL})

    def __init__(self, window: int = 64, dropout: float = 0.0, **sizes: int | None) -> None:
        super().__init__(dropout, **sizes)
        self.window = positive_int(window, "window", self.name)
        refuse_full_window(self.name, self.window, self.max_len)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 -> (B, H, L, Dh)."""
        self_attention_only(self, q, k, causal)
        qb, kc, vc, allowed, _ = sliding_blocks(q, k, v, pad_mask, self.window, causal)
        b, h, n, w, d = qb.shape
        # Each block of queries is one SDPA problem against its neighbourhood: the fused kernel never writes the
        # (w, c) scores and weights out, which the explicit softmax did forward and backward (1.4-1.6x faster
        # at 4K-16K, one AMX thread; docs/recurrence.md). A query with no key in reach gets zeros, not NaN.
        out = F.scaled_dot_product_attention(
            blocks_in_batch(qb),
            blocks_in_batch(kc),
            blocks_in_batch(vc),
            attn_mask=blocks_in_batch(allowed),
            dropout_p=self.dropout if self.training else 0.0,
        )  # (B * n, H, w, Dh)
        return unblock(out.unflatten(0, (b, n)).transpose(1, 2), q.size(-2))  # (B, H, L, Dh)

    def state_size(self, length: int) -> int:
        """The last ``window`` keys and values that ``decode_step`` keeps: bounded however long the text."""
        h, d = self.sizes()
        return 2 * h * d * min(self.window, length)

    def decode_step(self, q: Tensor, k: Tensor, v: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions q, k, v (B, H, t, Dh) after the state (the last ``window`` keys and values) -> ((B, H, t, Dh),
        the new state).

        Causal only (generation): new query j sees the keys within ``window`` before it. The state
        never holds more than ``window`` positions, however long the text grows.
        """
        if state:
            k, v = torch.cat([state["k"], k], dim=2), torch.cat([state["v"], v], dim=2)  # (B, H, past + t, Dh)
        t, n = q.size(-2), k.size(-2)
        dist = (
            torch.arange(n - t, n, device=q.device)[:, None] - torch.arange(n, device=q.device)[None, :]
        )  # (t, past + t)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=(dist >= 0) & (dist <= self.window))
        return out, {"k": k[:, :, -self.window :], "v": v[:, :, -self.window :]}  # what the next query can reach
