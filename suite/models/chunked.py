"""The gated linear recurrences of the modern baselines, each in a chunked form for training and a recurrent form
for decoding.

Two recurrences cover Mamba-2, gated linear attention (GLA), RetNet, DeltaNet and Gated DeltaNet. With a state
S (K, V) a head, row vectors q_t, k_t (K,) and v_t (V,), and log decays g_t <= 0:

* **gated** (Mamba-2's state-space duality with one decay a head, GLA with one a key dimension, RetNet with a
  fixed one a head): ``S_t = diag(exp g_t) S_(t-1) + k_t^T v_t`` and ``o_t = q_t S_t``;
* **delta rule** (DeltaNet; Gated DeltaNet with a decay a head): ``S_t = exp(g_t) (I - beta_t k_t^T k_t) S_(t-1) +
  beta_t k_t^T v_t`` and ``o_t = q_t S_t``: the state is corrected towards v_t at key k_t, not only added to.

The chunked forms (Yang et al. 2024, "Gated Linear Attention Transformers with Hardware-Efficient Training";
"Parallelizing Linear Transformers with the Delta Rule over Sequence Length") split the sequence into chunks of C
positions: inside every chunk at once, the outputs are a masked (C, C) product, as attention is; between chunks
one step a chunk carries the state on. The work is matrix products, what a CPU does best, and the loop runs L / C
times, not L. Every exponent taken is of a decay between two positions, ``b_t - b_s`` with s <= t, so it is <= 0
and nothing overflows however strong the decay. With one decay a key dimension (GLA) the (C, C) decays differ by
dimension, and the chunk's scores are summed over a (C, C, K) tensor instead of one product.

The delta rule's chunk in the WY form: with A_ts = beta_t exp(b_t - b_s) k_t . k_s (s < t) and gamma_t = exp(b_t),
the chunk's corrected values are U = T V - W S_0 where T = (I + A)^-1 diag(beta) and W = T diag(gamma) K, one
triangular solve a chunk for all of them.

Everything is computed in float32 at least, with autocast off. The tests hold each chunked form to its recurrence
written plainly, and to ``fla``'s reference functions where they import.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterator, ParamSpec, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor

P = ParamSpec("P")
R = TypeVar("R")


def _chunks(chunk: int, length: int, *tensors: Tensor) -> tuple[int, int, list[Tensor]]:
    """Pads (B, H, L, *) tensors with zeros to whole chunks and views them as (B, H, n, C, *): (C, n, views).

    A zero-padded step adds nothing (k = 0) and decays nothing (g = 0), so the state after it is the state before.
    """
    size = min(chunk, length)
    pad = -length % size
    n = (length + pad) // size
    out = []
    for t in tensors:
        if pad:
            t = F.pad(t, (0, 0) * (t.dim() - 3) + (0, pad))
        out.append(t.reshape(*t.shape[:2], n, size, *t.shape[3:]))
    return size, n, out


def _float(*tensors: Tensor) -> list[Tensor]:
    dtype = torch.promote_types(tensors[0].dtype, torch.float32)
    return [t.to(dtype) for t in tensors]


def in_float32(kernel: Callable[P, R]) -> Callable[P, R]:
    """Runs ``kernel`` with autocast off: under bf16 autocast its products would otherwise be computed in bf16, and
    the state carried over thousands of positions with them."""

    @functools.wraps(kernel)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with torch.autocast(args[0].device.type, enabled=False):
            return kernel(*args, **kwargs)

    return run


def positions(*tensors: Tensor) -> Iterator[tuple[Tensor, ...]]:
    """(B, H, L, *) tensors -> each position's slices, unbound once: indexing position t out of the whole tensor
    inside a loop costs a full-size zero-filled gradient a position in the backward pass, quadratic in L."""
    return zip(*(t.unbind(2) for t in tensors))


def _state(h0: Tensor | None, like: Tensor, k: int, v: int) -> Tensor:
    return like.new_zeros(like.shape[0], like.shape[1], k, v) if h0 is None else h0.to(like.dtype)


def _relative(b: Tensor, inclusive: bool = True) -> Tensor:
    """b (..., C) cumulative log decays -> exp(b_t - b_s) (..., C, C) where s <= t (s < t: not ``inclusive``),
    else 0."""
    size = b.shape[-1]
    mask = torch.ones(size, size, dtype=torch.bool, device=b.device).tril(0 if inclusive else -1)
    return (b[..., :, None] - b[..., None, :]).masked_fill(~mask, float("-inf")).exp()


@in_float32
def chunk_gated(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor, h0: Tensor | None = None, chunk: int = 64
) -> tuple[Tensor, Tensor]:
    """The gated recurrence in chunks: q, k (B, H, L, K), v (B, H, L, V), g (B, H, L, K) or (B, H, L, 1) log decays
    (<= 0), h0 (B, H, K, V) or None -> (o (B, H, L, V), the state after the last position (B, H, K, V)), float32."""
    q, k, v, g = _float(q, k, v, g)
    batch, heads, length, K = q.shape
    V = v.shape[-1]
    size, n, (q, k, v, g) = _chunks(chunk, length, q, k, v, g)
    b = g.cumsum(dim=3)  # (B, H, n, C, Kg): the decay from each chunk's start to each position, inclusive
    if b.shape[-1] == 1:  # one decay a head: the chunk's scores are one product
        if q.stride(1) == 0 and k.stride(1) == 0:  # every head reads the same q and k (Mamba-2's one group): once
            q_k = q[:, :1] @ k[:, :1].transpose(-1, -2)
        else:
            q_k = q @ k.transpose(-1, -2)
        scores = q_k * _relative(b[..., 0])
    else:  # one a key dimension: (C, C, K) decays, summed over K
        mask = torch.ones(size, size, dtype=torch.bool, device=q.device).tril()
        rel = (b[..., :, None, :] - b[..., None, :, :]).masked_fill(~mask[..., None], float("-inf")).exp()
        scores = (q[..., :, None, :] * rel * k[..., None, :, :]).sum(-1)
    inside = scores @ v  # (B, H, n, C, V): each position from its own chunk
    last = b[..., -1:, :]  # (B, H, n, 1, Kg)
    added = (k * torch.exp(last - b)).transpose(-1, -2) @ v  # (B, H, n, K, V): each chunk's own share of its end state
    kept = torch.exp(last)[..., 0, :, None]  # (B, H, n, Kg, 1): how much of the state entering a chunk leaves it
    state = _state(h0, q, K, V)
    starts = []
    # unbound once: indexing a chunk out of the whole tensor inside the loop costs a full-size zero-filled gradient a
    # chunk in the backward pass, quadratic in the number of chunks
    for keep, add in zip(kept.unbind(2), added.unbind(2)):  # one step a chunk: the state entering it
        starts.append(state)
        state = keep * state + add
    entering = (q * torch.exp(b)) @ torch.stack(starts, dim=2)  # (B, H, n, C, V): each position from the earlier chunks
    return (inside + entering).reshape(batch, heads, n * size, V)[:, :, :length], state


@in_float32
def recurrent_gated(q: Tensor, k: Tensor, v: Tensor, g: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """The gated recurrence one position at a time (decoding): the inputs and outputs of ``chunk_gated``."""
    q, k, v, g = _float(q, k, v, g)
    state = _state(h0, q, q.shape[-1], v.shape[-1])
    out = []
    for qt, kt, vt, gt in positions(q, k, v, g):
        state = torch.exp(gt)[..., None] * state + kt[..., :, None] * vt[..., None, :]
        out.append((qt[..., None, :] @ state)[..., 0, :])
    return torch.stack(out, dim=2), state


@in_float32
def parallel_gated(q: Tensor, k: Tensor, v: Tensor, g: Tensor) -> Tensor:
    """The gated recurrence with one decay a head as one masked (L, L) product from a zero state (RetNet's parallel
    form): q, k (B, H, L, K), v (B, H, L, V), g (B, H, L, 1) -> o (B, H, L, V). Memory grows as L^2."""
    q, k, v, g = _float(q, k, v, g)
    return ((q @ k.transpose(-1, -2)) * _relative(g[..., 0].cumsum(dim=-1))) @ v


@in_float32
def chunk_delta(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    g: Tensor | None = None,
    h0: Tensor | None = None,
    chunk: int = 64,
) -> tuple[Tensor, Tensor]:
    """The (gated) delta rule in chunks, WY form: q, k (B, H, L, K) (k of unit length keeps the state bounded),
    v (B, H, L, V), beta (B, H, L) in [0, 2], g (B, H, L) log decays or None (no decay), h0 (B, H, K, V) or None
    -> (o (B, H, L, V), the state after the last position (B, H, K, V)), float32."""
    q, k, v, beta = _float(q, k, v, beta)
    g = torch.zeros_like(beta) if g is None else g.to(q.dtype)
    batch, heads, length, K = q.shape
    V = v.shape[-1]
    size, n, (q, k, v, beta, g) = _chunks(chunk, length, q, k, v, beta[..., None], g[..., None])
    beta, b = beta[..., 0], g[..., 0].cumsum(dim=-1)  # (B, H, n, C)
    gamma = torch.exp(b)
    kk = k @ k.transpose(-1, -2)
    a = beta[..., :, None] * kk * _relative(b, inclusive=False)  # (B, H, n, C, C), strictly lower
    eye = torch.eye(size, dtype=q.dtype, device=q.device)
    rhs = torch.cat([beta[..., None] * v, (beta * gamma)[..., None] * k], dim=-1)
    solved = torch.linalg.solve_triangular(eye + a, rhs, upper=False, unitriangular=True)
    tv, w = solved.split([V, K], dim=-1)  # T V (B, H, n, C, V) and W = T diag(gamma) K (B, H, n, C, K)
    scores = (q @ k.transpose(-1, -2)) * _relative(b)  # (B, H, n, C, C), s <= t
    qg = q * gamma[..., None]
    kd = k * torch.exp(b[..., -1:] - b)[..., None]  # keys decayed to the chunk's end
    kept = gamma[..., -1, None, None]  # (B, H, n, 1, 1)
    state = _state(h0, q, K, V)
    starts, values = [], []
    for chunk_tv, chunk_w, keep, chunk_kd in zip(
        tv.unbind(2), w.unbind(2), kept.unbind(2), kd.transpose(-1, -2).unbind(2)
    ):
        # the corrected values need the state entering the chunk: one step a chunk (unbound once, as in chunk_gated)
        starts.append(state)
        u = chunk_tv - chunk_w @ state
        values.append(u)
        state = keep * state + chunk_kd @ u
    out = qg @ torch.stack(starts, dim=2) + scores @ torch.stack(values, dim=2)  # every chunk's outputs at once
    return out.reshape(batch, heads, n * size, V)[:, :, :length], state


@in_float32
def recurrent_delta(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    g: Tensor | None = None,
    h0: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The (gated) delta rule one position at a time (decoding): the inputs and outputs of ``chunk_delta``."""
    q, k, v, beta = _float(q, k, v, beta)
    state = _state(h0, q, q.shape[-1], v.shape[-1])
    out = []
    decays = torch.zeros_like(beta) if g is None else g.to(q.dtype)
    for qt, kt, vt, bt, gt in positions(q, k, v, beta, decays):
        state = torch.exp(gt)[..., None, None] * state
        error = vt - (kt[..., None, :] @ state)[..., 0, :]  # what the state predicts at k_t, against v_t
        state = state + kt[..., :, None] * (bt[..., None] * error)[..., None, :]
        out.append((qt[..., None, :] @ state)[..., 0, :])
    return torch.stack(out, dim=2), state
