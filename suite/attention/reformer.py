"""Reformer LSH attention (Kitaev et al. 2020): shared query/key, hashing into buckets, chunks.

Keys are the normalised queries (shared QK: the layer's key projection goes unused). Each of
``n_rounds`` hash rounds draws the angular LSH h(x) = argmax([xR, -xR]) with a random rotation R
(drawn at construction, fixed for the run); positions are sorted by (bucket, position) and cut
into chunks of ``chunk``; each chunk attends to itself and the chunk before it (cyclically, as the
paper does; with one chunk, to itself only). The rounds are combined weighted by their
log-sum-exp, i.e. as one softmax over the union of what each round saw. Cost O(R * L * chunk).

Self-position: with shared QK a query's own key scores highest, so a position attends to itself
only when nothing else is in reach: its own score is replaced by ``SELF_SCORE`` (-1e5), as in
the paper. Padded positions go to a bucket of their own, sorted after every real one, so they
never move a real token's chunk, and are masked. Encoder only: no causal mode.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import PADDING, AttentionCore, key_padding, positive_int, self_attention_only
from suite.nn import dropout

SELF_SCORE = -1e5


def with_previous_chunk(x: Tensor) -> Tensor:
    """(B, H, R, n, c, ...) -> (B, H, R, n, 2c, ...): each chunk preceded by the one before (cyclic); n == 1: itself."""
    return x if x.size(3) == 1 else torch.cat([x.roll(1, dims=3), x], dim=4)


class ReformerAttention(AttentionCore):
    """LSH attention with shared QK.

    Args:
        n_buckets: hash buckets per round (1, or even).
        n_rounds: hash rounds.
        chunk: chunk length in sorted order (clipped to the length).
        dropout: dropout on the attention weights while training.
    """

    name = "reformer"
    capabilities = frozenset({PADDING})

    def __init__(
        self, n_buckets: int = 8, n_rounds: int = 2, chunk: int = 64, dropout: float = 0.0, **sizes: int | None
    ) -> None:
        super().__init__(dropout, **sizes)
        if self.head_dim is None:
            raise ValueError(f"attention variant {self.name!r} needs head_dim at construction (the layer passes it)")
        self.n_buckets = positive_int(n_buckets, "n_buckets", self.name)
        if n_buckets > 1 and n_buckets % 2:
            raise ValueError(f"attention variant {self.name!r}: n_buckets must be 1 or even, got {n_buckets}")
        self.n_rounds, self.chunk = (
            positive_int(n_rounds, "n_rounds", self.name),
            positive_int(chunk, "chunk", self.name),
        )
        self.register_buffer("rotations", torch.randn(self.head_dim, self.n_rounds, max(1, n_buckets // 2)))

    def buckets(self, keys: Tensor, pad: Tensor) -> Tensor:
        """Normalised keys (B, H, L, Dh), pad (B, L) -> bucket ids (B, H, R, L); padding gets bucket n_buckets."""
        if self.n_buckets == 1:
            ids = keys.new_zeros(*keys.shape[:2], self.n_rounds, keys.size(2), dtype=torch.long)
        else:
            rotated = torch.einsum("bhld,drk->bhrlk", keys, self.rotations.to(keys.dtype))  # (B, H, R, L, nb/2)
            ids = torch.cat([rotated, -rotated], dim=-1).argmax(-1)
        return ids.masked_fill(pad[:, None, None, :], self.n_buckets)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 (k unused: keys are the normalised queries) -> (B, H, L, Dh)."""
        self_attention_only(self, q, k, causal)
        b, h, length, d = q.shape
        c = min(self.chunk, length)
        pad = key_padding(pad_mask, b, length, q.device)
        pos = torch.arange(length, device=q.device)
        order = (self.buckets(F.normalize(q, dim=-1), pad) * length + pos).argsort(
            dim=-1
        )  # (B, H, R, L): sorted by bucket, then position
        order = F.pad(order, (0, -length % c), value=length)  # dummy index L fills the last chunk
        r, lp = order.size(2), order.size(3)

        def sort(x: Tensor) -> Tensor:  # (B, H, L, Dh) -> (B, H, R, n, c, Dh) in sorted order
            x = F.pad(x, (0, 0, 0, 1))[:, :, None].expand(b, h, r, length + 1, d)
            return x.gather(3, order[..., None].expand(b, h, r, lp, d)).unflatten(3, (-1, c))

        sq, sv = sort(q), sort(v)
        sk = F.normalize(sq, dim=-1)  # the keys, sorted: normalising the sorted queries saves a gather and its backward
        real = ~F.pad(pad, (0, 1), value=True)[:, None, None, :].expand(b, h, r, length + 1).gather(3, order).unflatten(
            3, (-1, c)
        )  # (B, H, R, n, c)
        q_pos = order.unflatten(3, (-1, c))  # (B, H, R, n, c)
        k_pos, k_real = with_previous_chunk(q_pos), with_previous_chunk(real)  # (B, H, R, n, ck)
        sk, sv = with_previous_chunk(sk), with_previous_chunk(sv)  # (B, H, R, n, ck, Dh)
        # the queries scaled, not the scores: 2c / Dh times fewer multiplies
        scores = (sq * d**-0.5) @ sk.transpose(-2, -1)  # (B, H, R, n, c, ck)
        # one pass over the scores, not two: padding keys get the lowest score, a query's own key SELF_SCORE
        hidden = ~k_real[..., None, :]  # (B, H, R, n, 1, ck)
        own = q_pos[..., None] == k_pos[..., None, :]  # (B, H, R, n, c, ck)
        fill = torch.where(hidden, torch.finfo(scores.dtype).min, SELF_SCORE).to(scores.dtype)
        scores = torch.where(hidden | own, fill, scores)
        lse = scores.logsumexp(dim=-1, keepdim=True)  # (B, H, R, n, c, 1)
        # softmax, not exp(scores - lse): one fused pass forward and backward where exp and sub take two each
        out = dropout(scores.softmax(dim=-1), self.dropout, self.training) @ sv  # (B, H, R, n, c, Dh)
        undo = order[..., :length].argsort(dim=-1)  # (B, H, R, L): where each position went
        out = out.flatten(3, 4).gather(3, undo[..., None].expand(b, h, r, length, d))  # (B, H, R, L, Dh)
        lse = lse.flatten(3, 5).gather(3, undo)  # (B, H, R, L)
        return (out * lse.softmax(dim=2)[..., None]).sum(2)  # rounds combined by their log-sum-exp
