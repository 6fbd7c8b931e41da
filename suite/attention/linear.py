"""Linear attention (Katharopoulos et al. 2020): softmax replaced by the kernel phi(x) = elu(x) + 1.

    out_i = phi(q_i) . sum_j phi(k_j) v_j^T  /  phi(q_i) . sum_j phi(k_j)

Non-causal: the sums over keys are computed once, O(L * F * Dv). Causal: prefix sums, taken
chunk by chunk (states between chunks, the masked explicit form inside a chunk), so memory is
O(L * (c + Dv) + L/c * F * Dv), never L x L. As a recurrence ("Transformer as an RNN") the state
(S = sum phi(k) v^T, z = sum phi(k)) has a constant size: ``step`` decodes one position with it.
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


def causal_sums(fq: Tensor, fk: Tensor, v: Tensor, chunk: int) -> tuple[Tensor, Tensor]:
    """Causal numerator (B, H, L, Dv) and denominator (B, H, L, 1) from features (B, H, L, F), values (B, H, L, Dv)."""
    length = fq.size(2)
    c = min(chunk, length)
    extra = -length % c
    fq, fk, v = (F.pad(x, (0, 0, 0, extra)).unflatten(2, (-1, c)) for x in (fq, fk, v))  # (B, H, n, c, .)
    kv = fk.transpose(-2, -1) @ v  # (B, H, n, F, Dv): each chunk's sum of phi(k) v^T
    before = F.pad(kv.cumsum(2)[:, :, :-1], (0, 0, 0, 0, 1, 0))  # (B, H, n, F, Dv): sums over earlier chunks
    z = F.pad(fk.sum(3).cumsum(2)[:, :, :-1], (0, 0, 1, 0))  # (B, H, n, F)
    inside = (fq @ fk.transpose(-2, -1)).tril()  # (B, H, n, c, c): the masked explicit form within a chunk
    num = fq @ before + inside @ v  # (B, H, n, c, Dv)
    den = fq @ z.unsqueeze(-1) + inside.sum(-1, keepdim=True)  # (B, H, n, c, 1)
    return num.flatten(2, 3)[:, :, :length], den.flatten(2, 3)[:, :, :length]


def kernel_attention(fq: Tensor, fk: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False, chunk: int = 64) -> Tensor:
    """Kernelised attention from non-negative features fq (B, H, Lq, F), fk (B, H, Lk, F) and v (B, H, Lk, Dv).

    Padded keys are removed from numerator and denominator alike. Causal queries are the last
    Lq of the Lk positions (as with a cache). Returns (B, H, Lq, Dv).
    """
    if pad_mask is not None:
        pad = pad_mask[:, None, :, None]  # (B, 1, Lk, 1)
        fk, v = fk.masked_fill(pad, 0.0), v.masked_fill(pad, 0.0)
    if not causal:
        num = fq @ (fk.transpose(-2, -1) @ v)  # (B, H, Lq, Dv) through the (F, Dv) sums
        den = fq @ fk.sum(2).unsqueeze(-1)  # (B, H, Lq, 1)
        return safe_divide(num, den)
    lq, lk = fq.size(2), fk.size(2)
    num, den = causal_sums(F.pad(fq, (0, 0, lk - lq, 0)), fk, v, chunk)  # queries aligned to the end
    return safe_divide(num, den)[:, :, lk - lq :]


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

    def decode_step(self, q: Tensor, k: Tensor, v: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions q, k, v (B, H, t, Dh) after the state {'s': S, 'z': z} ({} at the start) -> ((B, H, t, Dh), the state after them).

        The new positions see each other causally (prefix sums) and everything before through
        the state, whose size does not depend on how many positions it has read.
        """
        fq, fk = elu_feature(q), elu_feature(k)
        num, den = causal_sums(fq, fk, v, self.chunk)  # among the new positions
        s, z = fk.transpose(-2, -1) @ v, fk.sum(2)  # (B, H, F, Dv), (B, H, F)
        if state:
            num, den = num + fq @ state["s"], den + fq @ state["z"].unsqueeze(-1)
            s, z = s + state["s"], z + state["z"]
        return safe_divide(num, den), {"s": s, "z": z}
