"""Performer attention (Choromanski et al. 2021): FAVOR+, positive orthogonal random features.

softmax(q . k / sqrt(d)) is approximated by phi(q) . phi(k) with
phi(x) = exp(w_r . x' - |x'|^2 / 2) / sqrt(m), x' = x / d^(1/4), for m random directions w_r
drawn in orthogonal blocks with Gaussian norms; the sums are then those of linear attention
(``suite.attention.linear.kernel_attention``): O(L * m * Dh), causal through prefix sums. Padded
keys get zero features, out of numerator and normaliser alike. The features are drawn at
construction from the run's seeded generator; ``redraw_every`` n > 0 draws new ones every n
training forward passes (0: never). The error against softmax falls as ``n_features`` grows.
Step-by-step decoding keeps linear attention's sums, a state of fixed size (``decode_step``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from suite.attention.core import CACHE, CAUSAL, CROSS, PADDING, AttentionCore, positive_int
from suite.attention.linear import causal_sums, divided, kernel_attention, with_ones
from suite.types import State


def orthogonal_features(m: int, d: int, generator: torch.Generator | None = None) -> Tensor:
    """(m, d) random directions: orthogonal within each block of d, norms as Gaussian vectors' (chi_d)."""
    blocks = [torch.linalg.qr(torch.randn(d, d, generator=generator))[0].T for _ in range(math.ceil(m / d))]
    directions = torch.cat(blocks)[:m]  # (m, d), unit rows
    return directions * torch.randn(m, d, generator=generator).norm(dim=1, keepdim=True)


def exponents(x: Tensor, w: Tensor) -> tuple[Tensor, Tensor]:
    """The two parts of the features' exponents of x (B, H, L, Dh) for directions w (m, Dh), with x' = x / Dh^(1/4):
    x' w^T (B, H, L, m) and |x'|^2 / 2 (B, H, L, 1); a feature is exp(the first minus the second), stabilised."""
    x = x * x.size(-1) ** -0.25
    return x @ w.t(), x.pow(2).sum(-1, keepdim=True) / 2


def key_peak(k: Tensor, w: Tensor) -> Tensor:
    """The largest exponent of the keys k (B, H, L, Dh) over positions and features, (B, H, 1, 1): the stabiliser
    ``favor_features`` takes for keys without padding."""
    projected, half_norm = exponents(k, w)
    return (projected.amax(-1, keepdim=True) - half_norm).amax(-2, keepdim=True).detach()


def favor_features(
    x: Tensor, w: Tensor, is_query: bool, pad_mask: Tensor | None = None, stab: Tensor | None = None
) -> Tensor:
    """Positive features (B, H, L, m) of x (B, H, L, Dh) for directions w (m, Dh); padded keys get zeros.

    A stabiliser is subtracted in the exponent (per row for queries, one per head for keys, padded
    keys left out); it cancels between numerator and normaliser and is kept out of the gradient.
    Everything subtracted (|x'|^2 / 2, the stabiliser, log sqrt(m) for the 1 / sqrt(m) factor) is
    one (B, H, L, 1) offset, so the (B, H, L, m) features, m times the width of x and out of cache
    at long lengths, are passed over by one subtraction and one exp, not five elementwise passes.
    ``stab`` (B, H, 1, 1): the keys' stabiliser given (decoding's running peak, ``key_peak``), not taken from x.
    """
    projected, half_norm = exponents(x, w)  # (B, H, L, m), (B, H, L, 1)
    row_max = projected.detach().amax(-1, keepdim=True) - half_norm.detach()  # each row's largest exponent
    padded = None if pad_mask is None else pad_mask[:, None, :, None]  # (B, 1, L, 1)
    if is_query:
        stab = row_max
    elif stab is None:
        real = row_max if padded is None else row_max.masked_fill(padded, float("-inf"))
        stab = real.amax(dim=-2, keepdim=True)  # (B, H, 1, 1)
        stab = torch.where(torch.isfinite(stab), stab, torch.zeros_like(stab))
    if padded is not None:
        stab = stab.masked_fill(padded, float("inf"))  # exp(-inf) = 0: padded rows' features, with zero gradient
    return torch.exp(projected - (half_norm + stab + 0.5 * math.log(w.size(0))))


class PerformerAttention(AttentionCore):
    """FAVOR+ attention.

    Args:
        n_features: random features m (default 256).
        redraw_every: draw new features every n training forward passes; 0: never.
        chunk: chunk length of the causal prefix sums.
        dropout: accepted for the common signature; unused (no weights to drop).
    """

    name = "performer"
    capabilities = frozenset({PADDING, CAUSAL, CROSS, CACHE})

    def __init__(
        self, n_features: int = 256, redraw_every: int = 0, chunk: int = 64, dropout: float = 0.0, **sizes: int | None
    ) -> None:
        super().__init__(dropout, **sizes)
        if self.head_dim is None:
            raise ValueError(f"attention variant {self.name!r} needs head_dim at construction (the layer passes it)")
        self.n_features = positive_int(n_features, "n_features", self.name)
        self.redraw_every, self.chunk = (
            positive_int(redraw_every, "redraw_every", self.name, least=0),
            positive_int(chunk, "chunk", self.name),
        )
        self.register_buffer("features", orthogonal_features(self.n_features, self.head_dim))
        self.calls = 0

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, Lq, Dh), (B, H, Lk, Dh) x2 -> (B, H, Lq, Dh)."""
        if self.training and self.redraw_every:
            if self.calls and self.calls % self.redraw_every == 0:
                self.features.copy_(orthogonal_features(self.n_features, self.head_dim).to(self.features))
            self.calls += 1
        w = self.features.to(q.dtype)
        fq, fk = favor_features(q, w, True), favor_features(k, w, False, pad_mask)
        return kernel_attention(fq, fk, v, pad_mask, causal, self.chunk)

    def state_size(self, length: int) -> int:
        """The sums of ``decode_step`` and their stabiliser: H x (m x (Dh + 1) + 1), at any length."""
        h, d = self.sizes()
        return h * (self.n_features * (d + 1) + 1)

    def decode_step(self, q: Tensor, k: Tensor, v: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions q, k, v (B, H, t, Dh) after the state ({} at the start) -> ((B, H, t, Dh), the state after
        them): linear attention's running sums of phi(k) [v, 1]^T, (B, H, m, Dh + 1), with FAVOR+'s features.

        The keys' features need one stabiliser for every key a query reads; the state keeps the sums scaled by
        exp(-peak), the largest key exponent so far (B, H, 1, 1), and a key above it rescales them by exp(old - new)
        first, as an online softmax does, so no feature overflows and the state keeps its size. The stabiliser
        cancels between numerator and normaliser: the outputs are the causal pass's.
        """
        w = self.features.to(q.dtype)
        peak = key_peak(k, w) if not state else torch.maximum(state["peak"], key_peak(k, w))
        fq, fk, v1 = favor_features(q, w, True), favor_features(k, w, False, stab=peak), with_ones(v)
        sums = causal_sums(fq, fk, v1, self.chunk)  # among the new positions
        s = fk.transpose(-2, -1) @ v1  # (B, H, m, Dv + 1)
        if state:
            past = state["s"] * torch.exp(state["peak"] - peak)
            sums, s = sums + fq @ past, s + past
        return divided(sums), {"s": s, "peak": peak}
