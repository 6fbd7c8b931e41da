"""Linear attention (Katharopoulos et al. 2020): softmax replaced by the kernel phi(x) = elu(x) + 1.

    out_i = phi(q_i) . sum_j phi(k_j) v_j^T  /  phi(q_i) . sum_j phi(k_j)

Non-causal: the sums over keys are computed once, O(L * F * Dv). Causal: prefix sums, taken
chunk by chunk (states between chunks, the masked explicit form inside a chunk), so memory is
O(L * (c + Dv) + L/c * F * Dv), never L x L. As a recurrence ("Transformer as an RNN") the state
(S = sum phi(k) v^T and z = sum phi(k), kept side by side) has a constant size: ``step`` decodes one position with it.
No attention weights exist, so there is no attention dropout.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import CACHE, CAUSAL, CROSS, PADDING, AttentionCore, positive_int
from suite.types import State


def safe_divide(num: Tensor, den: Tensor) -> Tensor:
    """num (..., Dv) / den (..., 1); a zero denominator (a query with no key) gives zeros, not NaN."""
    return num / den.masked_fill(den == 0, 1.0)


def with_ones(v: Tensor, pad_mask: Tensor | None = None) -> Tensor:
    """Values (B, H, L, Dv) with a column of ones appended, (B, H, L, Dv + 1); padded keys' rows all zero.

    One product with the features then gives numerator (sum phi(k) v^T) and normaliser
    (sum phi(k)) together, each feature tensor read once instead of twice, and a padded key,
    whose row is zero, counts in neither.
    """
    out = F.pad(v, (0, 1), value=1.0)
    return out if pad_mask is None else out.masked_fill(pad_mask[:, None, :, None], 0.0)


def divided(sums: Tensor) -> Tensor:
    """Numerator and normaliser side by side (..., Dv + 1) -> their quotient (..., Dv)."""
    return safe_divide(sums[..., :-1], sums[..., -1:])


def causal_sums(fq: Tensor, fk: Tensor, v1: Tensor, chunk: int) -> Tensor:
    """Causal sums (B, H, L, Dv + 1) from features (B, H, L, F) and values with ones (``with_ones``, (B, H, L, Dv + 1)).

    Position i gets sum over j <= i of (phi(q_i) . phi(k_j)) [v_j, 1]: numerator and normaliser.
    """
    length = fq.size(2)
    c = min(chunk, length)
    extra = -length % c
    fq, fk, v1 = (F.pad(x, (0, 0, 0, extra)).unflatten(2, (-1, c)) for x in (fq, fk, v1))  # (B, H, n, c, .)
    kv = fk.transpose(-2, -1) @ v1  # (B, H, n, F, Dv + 1): each chunk's sum of phi(k) [v, 1]^T
    before = F.pad(kv.cumsum(2)[:, :, :-1], (0, 0, 0, 0, 1, 0))  # (B, H, n, F, Dv + 1): sums over earlier chunks
    inside = (fq @ fk.transpose(-2, -1)).tril()  # (B, H, n, c, c): the masked explicit form within a chunk
    return (fq @ before + inside @ v1).flatten(2, 3)[:, :, :length]


def kernel_attention(
    fq: Tensor, fk: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False, chunk: int = 64
) -> Tensor:
    """Kernelised attention from non-negative, finite features fq (B, H, Lq, F), fk (B, H, Lk, F) and v (B, H, Lk, Dv).

    Padded keys are removed from numerator and denominator alike (their value rows, ones
    column included, are zeroed). Causal queries are the last Lq of the Lk positions (as with a
    cache). Returns (B, H, Lq, Dv).
    """
    v1 = with_ones(v, pad_mask)
    if not causal:
        return divided(fq @ (fk.transpose(-2, -1) @ v1))  # through the (F, Dv + 1) sums
    lq, lk = fq.size(2), fk.size(2)
    return divided(causal_sums(F.pad(fq, (0, 0, lk - lq, 0)), fk, v1, chunk))[
        :, :, lk - lq :
    ]  # queries aligned to the end


def elu_feature(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1 > 0."""
    return F.elu(x) + 1.0


class LinearAttention(AttentionCore):
    """Kernelised attention with the elu+1 feature map.

    Args:
        chunk: chunk length of the causal prefix sums (memory/speed trade-off, same result).
        dropout: accepted for the common signature; unused (no weights to drop).
    """

    name = "linear"
    capabilities = frozenset({PADDING, CAUSAL, CROSS, CACHE})

    def __init__(self, chunk: int = 64, dropout: float = 0.0, **sizes: int | None) -> None:
        super().__init__(dropout, **sizes)
        self.chunk = positive_int(chunk, "chunk", self.name)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, Lq, Dh), (B, H, Lk, Dh) x2 -> (B, H, Lq, Dh)."""
        return kernel_attention(elu_feature(q), elu_feature(k), v, pad_mask, causal, self.chunk)

    def state_size(self, length: int) -> int:
        """[S, z] of ``decode_step``: H x F x (Dh + 1), F = Dh (the elu feature map keeps the width), at any length."""
        h, d = self.sizes()
        return h * d * (d + 1)

    def decode_step(self, q: Tensor, k: Tensor, v: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions q, k, v (B, H, t, Dh) after the state {'s': [S, z]} ({} at the start) -> ((B, H, t, Dh), the
        state after them).

        S = sum phi(k) v^T and z = sum phi(k) are kept side by side, (B, H, F, Dh + 1). The new
        positions see each other causally (prefix sums) and everything before through the state,
        whose size does not depend on how many positions it has read.
        """
        fq, fk, v1 = elu_feature(q), elu_feature(k), with_ones(v)
        sums = causal_sums(fq, fk, v1, self.chunk)  # among the new positions
        s = fk.transpose(-2, -1) @ v1  # (B, H, F, Dv + 1)
        if state:
            sums, s = sums + fq @ state["s"], s + state["s"]
        return divided(sums), {"s": s}
