"""BigBird block-sparse attention (Zaheer et al. 2020): window, global and random blocks.

The sequence is cut into blocks of ``block`` positions. Each query block outside the global ones
reads the key blocks within ``window`` blocks of its own, the ``n_global`` leading blocks, and
``n_random`` other blocks drawn at random; the keys of those blocks are gathered block by block,
so the scores are (block, selected blocks x block) per query block, never L x L. The global query
blocks read every key. The random pattern comes from a seed drawn at construction (from the run's
seeded generator, so each layer has its own), kept as a buffer: fixed for the run and its checkpoints.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import (
    PADDING,
    AttentionCore,
    key_padding,
    masked_softmax,
    positive_int,
    self_attention_only,
    sparse_reach,
)
from suite.nn import dropout


class BigBirdAttention(AttentionCore):
    """Block-sparse softmax attention.

    Args:
        block: block size in positions (a positive int; clipped to the length). A block and window that read
            every key of ``max_len`` positions are refused (full attention under this name).
        window: neighbouring blocks on each side a query block reads (1: three blocks).
        n_global: leading global blocks (they read all keys and are read by all queries).
        n_random: random key blocks per query block (fewer when not that many are left).
        dropout: dropout on the attention weights while training.
    """

    name = "bigbird"
    capabilities = frozenset({PADDING})

    def __init__(
        self,
        block: int = 64,
        window: int = 1,
        n_global: int = 1,
        n_random: int = 2,
        dropout: float = 0.0,
        **sizes: int | None,
    ) -> None:
        super().__init__(dropout, **sizes)
        self.block = positive_int(block, "block", self.name)
        self.window, self.n_global, self.n_random = (
            positive_int(x, what, self.name, least=0)
            for x, what in ((window, "window"), (n_global, "n_global"), (n_random, "n_random"))
        )
        self.register_buffer("seed", torch.randint(0, 2**31 - 1, ()))
        if self.max_len is not None:
            sparse_reach(self.name, "block and window", self.max_len, self.reads_all(self.max_len), None)

    def reads_all(self, length: int) -> bool:
        """True when every query block reads every key block of ``length`` positions, whatever the random draw:
        the blocks outside a query block's window and the global ones are no more than ``n_random``."""
        n = -(-length // self.block)
        i, j = torch.arange(n)[:, None], torch.arange(n)[None]
        fixed = ((i - j).abs() <= self.window) | (j < self.n_global)  # (n, n)
        left = n - fixed[self.n_global :].sum(1)  # per windowed query block
        return left.numel() == 0 or int(left.max()) <= self.n_random

    def block_pattern(self, n: int) -> Tensor:
        """(n, n) bool: key blocks each query block reads (global query rows: all)."""
        i, j = torch.arange(n)[:, None], torch.arange(n)[None]
        chosen = ((i - j).abs() <= self.window) | (j < self.n_global)
        noise = torch.rand(n, n, generator=torch.Generator().manual_seed(int(self.seed)))
        noise[chosen] = 2.0  # already chosen: never drawn again
        drawn, idx = noise.topk(min(self.n_random, n), dim=1, largest=False)
        chosen.scatter_(1, idx, chosen.gather(1, idx) | (drawn < 2.0))
        chosen[: self.n_global] = True
        return chosen

    def selection(self, n: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """Per query block the chosen key blocks as indices (n, m), and which are real (n, m)."""
        chosen = self.block_pattern(n)
        m = int(chosen[self.n_global :].sum(1).max()) if n > self.n_global else 1
        idx = torch.argsort((~chosen).to(torch.int8), dim=1, stable=True)[:, :m]  # chosen first, in order
        return idx.to(device), chosen.gather(1, idx).to(device)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 -> (B, H, L, Dh)."""
        self_attention_only(self, q, k, causal)
        b, _, length, d = q.shape
        bs = min(self.block, length)
        extra = -length % bs
        pad = F.pad(key_padding(pad_mask, b, length, q.device), (0, extra), value=True)  # (B, n*bs)
        qb, kb, vb = (F.pad(x, (0, 0, 0, extra)).unflatten(2, (-1, bs)) for x in (q, k, v))  # (B, H, n, bs, Dh)
        n = qb.size(2)
        g = min(self.n_global, n)
        idx, real = self.selection(n, q.device)  # (n, m)
        idx, real = idx[g:], real[g:]  # windowed query blocks only
        ks, vs = (x[:, :, idx].flatten(3, 4) for x in (kb, vb))  # (B, H, n-g, m*bs, Dh)
        allowed = (~pad.unflatten(1, (n, bs))[:, idx] & real[None, :, :, None]).flatten(2, 3)  # (B, n-g, m*bs)
        scores = qb[:, :, g:] @ ks.transpose(-2, -1) / math.sqrt(d)  # (B, H, n-g, bs, m*bs)
        weights = dropout(masked_softmax(scores, allowed[:, None, :, None, :]), self.dropout, self.training)
        out = weights @ vs  # (B, H, n-g, bs, Dh)
        if g:  # global query blocks read every key
            qg = qb[:, :, :g].flatten(2, 3)  # (B, H, g*bs, Dh)
            scores = qg @ kb.flatten(2, 3).transpose(-2, -1) / math.sqrt(d)  # (B, H, g*bs, n*bs)
            weights = dropout(masked_softmax(scores, ~pad[:, None, None, :]), self.dropout, self.training)
            out = torch.cat([(weights @ vb.flatten(2, 3)).unflatten(2, (g, bs)), out], dim=2)
        return out.flatten(2, 3)[:, :, :length]  # (B, H, L, Dh)
