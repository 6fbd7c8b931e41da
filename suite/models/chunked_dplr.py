"""The diagonal-plus-low-rank (generalised delta rule) recurrence of RWKV-7 in a chunked form for training and a
recurrent form for decoding.

With a state S (K, V) a head, row vectors q_t, k_t, alpha_t, beta_t (K,), v_t (V,) and log decays g_t (K,) <= 0:

    S_t = (diag(exp g_t) + beta_t^T alpha_t) S_(t-1) + k_t^T v_t,   o_t = q_t S_t

(``fla``'s ``dplr_recurrence``; RWKV-7 takes alpha = -k^, beta = k^ * a: the state is corrected towards v at the
normalised key k^ at the rate a, and decays by w a key dimension.)

The chunked form (the WY form of the delta rule with a decay a key dimension): inside a chunk, with b_t the
cumulative log decay from the chunk's start (inclusive) and u_t = alpha_t S_(t-1) the state read where the
correction aims,

    u_t = (alpha_t * e^(b_(t-1))) S_0 + sum_(s<t) [alpha_t e^(b_(t-1) - b_s) . beta_s] u_s + [... . k_s] v_s,

a triangular system solved for all positions at once (U = W S_0 + T A_ak V, W = T (alpha * e^b_(t-1)), T =
(I - A_ab)^-1); one step a chunk then carries the state on, and the outputs are masked (C, C) products. Each
score is a product of rows decayed from the chunk's start, exact while no chunk decays by more than e^60 (RWKV-7's
decay is at most e^-0.61 a position: e^-10 over its 16); past that, each (C, C) score is summed over a (C, C, K)
tensor of the decays between every two positions, whose exponents are <= 0, as in ``chunked.chunk_gated``.
Computed in float32 at least, autocast off.
"""

from __future__ import annotations

import torch
from torch import Tensor

from suite.models.chunked import _chunks, _float, _state, in_float32, positions

SPAN = 60.0  # the most a chunk may decay (in log) for the scores to be taken as products: e^60 is far from overflow


def _scores(
    q: Tensor, alpha: Tensor, k: Tensor, beta: Tensor, b: Tensor, before: Tensor
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The chunk's four (B, H, n, C, C) score matrices sum_k left_t e^(d_t - b_s) right_s: alpha against beta and k
    with d = b_(t-1), s < t; q against beta and k with d = b_t, s <= t. Inputs (B, H, n, C, K).

    Where no chunk decays by more than ``SPAN``, each is one product of decayed rows (left e^d against right e^-b);
    otherwise the decays between every two positions are formed, a (C, C, K) tensor, whose exponents are all <= 0."""
    size = q.shape[-2]
    ones = torch.ones(size, size, dtype=torch.bool, device=q.device)
    strict, inclusive = ones.tril(-1), ones.tril()
    if -b[..., -1, :].min() <= SPAN:
        lefts = torch.cat([alpha * before.exp(), q * b.exp()], dim=-2)  # (.., 2C, K)
        rights = torch.cat([beta, k], dim=-2) * torch.cat([-b, -b], dim=-2).exp()
        blocks = lefts @ rights.transpose(-1, -2)  # (.., 2C, 2C)
        (ab, ak), (qb, qk) = (row.split(size, dim=-1) for row in blocks.split(size, dim=-2))
    else:
        diff = before[..., :, None, :] - b[..., None, :, :]  # (.., C, C, K): b_(t-1) - b_s
        read = diff.masked_fill(~strict[..., None], float("-inf")).exp()
        out = (diff + (b - before)[..., :, None, :]).masked_fill(~inclusive[..., None], float("-inf")).exp()
        ab, ak, qb, qk = (
            (left[..., :, None, :] * rel * right[..., None, :, :]).sum(-1)
            for left, right, rel in ((alpha, beta, read), (alpha, k, read), (q, beta, out), (q, k, out))
        )
    return ab.tril(-1), ak.tril(-1), qb.tril(), qk.tril()


@in_float32
def chunk_dplr(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    alpha: Tensor,
    beta: Tensor,
    g: Tensor,
    h0: Tensor | None = None,
    chunk: int = 16,
) -> tuple[Tensor, Tensor]:
    """q, k, alpha, beta, g (B, H, L, K), v (B, H, L, V), h0 (B, H, K, V) or None -> (o (B, H, L, V), the state
    after the last position (B, H, K, V)), float32. A padded position (all zeros) changes nothing."""
    q, k, v, alpha, beta, g = _float(q, k, v, alpha, beta, g)
    batch, heads, length, K = q.shape
    V = v.shape[-1]
    size, n, (q, k, v, alpha, beta, g) = _chunks(chunk, length, q, k, v, alpha, beta, g)
    b = g.cumsum(dim=3)  # (B, H, n, C, K), inclusive
    before = b - g  # exclusive: the decay up to the position before
    a_ab, a_ak, a_qb, a_qk = _scores(q, alpha, k, beta, b, before)
    eye = torch.eye(size, dtype=q.dtype, device=q.device)
    solved = torch.linalg.solve_triangular(
        eye - a_ab, torch.cat([a_ak @ v, alpha * before.exp()], dim=-1), upper=False, unitriangular=True
    )
    u_own, w = solved.split([V, K], dim=-1)  # T A_ak V (.., C, V) and W (.., C, K)
    last = b[..., -1:, :]
    to_end = torch.exp(last - b)  # (.., C, K): each position's decay to the chunk's end
    kv_end = (k * to_end).transpose(-1, -2) @ v  # (B, H, n, K, V)
    beta_end = (beta * to_end).transpose(-1, -2)  # (B, H, n, K, C)
    kept = torch.exp(last).transpose(-1, -2)  # (B, H, n, K, 1)
    state = _state(h0, q, K, V)
    starts, reads = [], []
    for chunk_u, chunk_w, chunk_kv, chunk_beta, keep in zip(
        u_own.unbind(2), w.unbind(2), kv_end.unbind(2), beta_end.unbind(2), kept.unbind(2)
    ):
        starts.append(state)
        u = chunk_w @ state + chunk_u
        reads.append(u)
        state = keep * state + chunk_beta @ u + chunk_kv
    out = (q * b.exp()) @ torch.stack(starts, dim=2) + a_qb @ torch.stack(reads, dim=2) + a_qk @ v
    return out.reshape(batch, heads, n * size, V)[:, :, :length], state


@in_float32
def recurrent_dplr(
    q: Tensor, k: Tensor, v: Tensor, alpha: Tensor, beta: Tensor, g: Tensor, h0: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """The recurrence one position at a time (decoding): the inputs and outputs of ``chunk_dplr``."""
    q, k, v, alpha, beta, g = _float(q, k, v, alpha, beta, g)
    state = _state(h0, q, q.shape[-1], v.shape[-1])
    out = []
    for qt, kt, vt, at, bt, gt in positions(q, k, v, alpha, beta, g):
        read = (at[..., None, :] @ state)[..., 0, :]  # (B, H, V): alpha_t S_(t-1)
        state = torch.exp(gt)[..., None] * state + bt[..., :, None] * read[..., None, :]
        state = state + kt[..., :, None] * vt[..., None, :]
        out.append((qt[..., None, :] @ state)[..., 0, :])
    return torch.stack(out, dim=2), state
