"""Mamba's selective scan as one loop over positions with its own backward, a few positions' inputs made at a time.

h_t = exp(delta_t A) h_(t-1) + (delta_t x_t) B_t and y_t = h_t C_t, for x, delta (B, L, E), A (E, N), B, C (B, L, N).
The parallel scans (``mambapy``'s pscan, the log-space scan) first build exp(delta A) and delta B x for every position,
(B, L, E, N) numbers each, and then pass over them and their gradients a dozen times or more: on a CPU the scan is
bound by those passes, not by its arithmetic. Here the positions go in chunks of a few (``chunk_positions``): a
chunk's decays and inputs are made in one operation each, (T, B, E, N) small enough to stay in cache, the loop inside
the chunk is one multiply-add a position, and the chunk's outputs are one batched product. Only the state before each
chunk is kept; the backward makes a chunk's states again from it (one more multiply-add a position), runs the
gradient's recurrence through the chunk in reverse, and takes every other gradient of the chunk in a few batched
operations. So nothing of size (L, B, E, N) is ever written: a fresh tensor that large costs its page faults on a CPU
at every step.

With ``negative``, the decay is 2 exp(delta_t A) - 1 in (-1, 1) rather than exp(delta_t A) in (0, 1): Grazzi et al.
2024's extended range (their Mamba [-1, 1]); its derivative with respect to delta_t A is the decay plus 1.
"""

from __future__ import annotations

import torch
from torch import Tensor

CHUNK = 8  # the most positions a chunk takes
CHUNK_BYTES = 2 << 20  # what a chunk's (T, B, E, N) tensor may take: its decays and its states, one each, stay in cache


def chunk_positions(batch: int, width: int, states: int, itemsize: int = 4) -> int:
    """Positions a chunk for a (B, E, N) state: the most that fit ``CHUNK_BYTES`` (a power of two), at least 2 (where
    not even 2 fit) and at most ``CHUNK``.

    Timed with ``python -m suite.tools.scan_bench --chunks`` (fp32, forward and backward of one layer's loop, one
    thread), on idle cores and beside a job on the other core, as the map runs: at the capability map's shapes (B 64,
    E 160) 2 positions were the fastest in both; at the LRA's (B 32, E 256) 4 on idle cores and 2 beside a job, 4
    ahead of 8 in both; at B 16, E 128, 8. Beside a job the best chunk is smaller: the cache the two cores share holds
    less of each. 1 position is never the fastest (a chunk's operations each pay their overhead a position)."""
    fit = CHUNK_BYTES // max(1, batch * width * states * itemsize)
    return max(2, min(CHUNK, 1 << max(0, fit.bit_length() - 1)))


def position_major(*xs: Tensor) -> list[Tensor]:
    """(B, L, ...) tensors -> (L, B, ...), contiguous: a position's slice is one block of memory."""
    return [x.transpose(0, 1).contiguous() for x in xs]


def chunk_states(
    h: Tensor, d: Tensor, u: Tensor, b: Tensor, A: Tensor, negative: bool = False
) -> tuple[Tensor, Tensor]:
    """The state h (B, E, N) before a chunk, its delta d and input u = delta x (T, B, E), its B rows b (T, B, N) ->
    (its states h_t (T, B, E, N), its decays exp(delta_t A), or 2 exp(delta_t A) - 1 if ``negative`` (T, B, E, N))."""
    decay = torch.exp(d[:, :, :, None] * A)
    if negative:
        decay = decay.mul_(2).sub_(1)
    states = u[:, :, :, None] * b[:, :, None, :]  # the inputs, each overwritten by its state
    for i in range(states.shape[0]):
        h = states[i].addcmul_(decay[i], h)
    return states, decay


def batched(x: Tensor, *shape: int) -> Tensor:
    """(T, B, ...) -> (T B, *shape): a chunk's positions and batch entries as one batch of small matrices."""
    return x.flatten(0, 1).view(-1, *shape)


class SelectiveLoop(torch.autograd.Function):
    """x, delta (B, L, E), A (E, N), B, C (B, L, N), h0 (B, E, N), chunk, negative -> (y (B, L, E), h_L (B, E, N));
    float32 or 64."""

    @staticmethod
    def forward(ctx, x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, h0: Tensor, chunk: int,
                negative: bool = False):  # fmt: skip
        length, (inner, n) = x.shape[1], A.shape
        d, u, b, c = position_major(delta, delta * x, B, C)  # (L, B, E) x2, (L, B, N) x2
        y = x.new_empty(d.shape)  # (L, B, E)
        befores, h = [], h0
        for t0 in range(0, length, chunk):
            t1 = min(t0 + chunk, length)
            befores.append(h)
            states, _ = chunk_states(h, d[t0:t1], u[t0:t1], b[t0:t1], A, negative)
            torch.matmul(batched(states, inner, n), batched(c[t0:t1], n, 1), out=batched(y[t0:t1], inner, 1))
            h = states[-1].clone()
        ctx.save_for_backward(x, delta, A, d, u, b, c, torch.stack(befores))
        ctx.chunk, ctx.negative = chunk, negative
        return y.transpose(0, 1), h

    @staticmethod
    def backward(ctx, gy: Tensor, gh: Tensor | None) -> tuple[Tensor | None, ...]:
        x, delta, A, d, u, b, c, befores = ctx.saved_tensors
        length, (inner, n) = d.shape[0], A.shape
        (gy_,) = position_major(gy)  # (L, B, E)
        gu, gq, gB, gC = torch.empty_like(d), torch.empty_like(d), torch.empty_like(b), torch.empty_like(b)
        gA = torch.zeros_like(A)
        g = torch.zeros_like(befores[0]) if gh is None else gh  # the loss's gradient reaching the chunk's last state
        for k, t0 in reversed(list(enumerate(range(0, length, ctx.chunk)))):
            t1 = min(t0 + ctx.chunk, length)
            states, decay = chunk_states(befores[k], d[t0:t1], u[t0:t1], b[t0:t1], A, ctx.negative)
            G = gy_[t0:t1, :, :, None] * c[t0:t1, :, None, :]  # gy_t C_t, then the whole gradient at h_t
            G[-1] += g
            for i in range(t1 - t0 - 2, -1, -1):
                G[i].addcmul_(decay[i + 1], G[i + 1])
            g = G[0] * decay[0]  # on to the chunk before
            torch.matmul(batched(gy_[t0:t1], 1, inner), batched(states, inner, n), out=batched(gC[t0:t1], 1, n))
            torch.matmul(batched(G, inner, n), batched(b[t0:t1], n, 1), out=batched(gu[t0:t1], inner, 1))
            torch.matmul(batched(u[t0:t1], 1, inner), batched(G, inner, n), out=batched(gB[t0:t1], 1, n))
            q = G.mul_(decay + 1 if ctx.negative else decay)  # times h_(t-1) below: the gradient at delta_t A
            q[1:] *= states[:-1]
            q[0] *= befores[k]
            torch.sum(q * A, -1, out=gq[t0:t1])  # its share of delta_t's gradient
            gA += q.mul_(d[t0:t1, :, :, None]).sum((0, 1))
        gu, gq = gu.transpose(0, 1), gq.transpose(0, 1)  # (B, L, E)
        return gu * delta, gq + gu * x, gA, gB.transpose(0, 1), gC.transpose(0, 1), g, None, None


def selective_loop(
    x: Tensor,
    delta: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    h0: Tensor | None = None,
    chunk: int | None = None,
    negative: bool = False,
) -> tuple[Tensor, Tensor]:
    """x, delta (B, L, E), A (E, N), B, C (B, L, N), h0 (B, E, N) or None (zeros) -> (y (B, L, E), h_L (B, E, N)),
    y_t = C_t . h_t without the skip D x_t, in the inputs' precision (autocast off: a bf16 state would drift);
    ``chunk``: positions a chunk (None: ``chunk_positions`` for these shapes); ``negative``: the decay
    2 exp(delta A) - 1."""
    if chunk is None:
        chunk = chunk_positions(x.shape[0], x.shape[2], A.shape[1], torch.promote_types(x.dtype, A.dtype).itemsize)
    if h0 is None:
        h0 = x.new_zeros(x.shape[0], x.shape[2], A.shape[1])
    with torch.autocast(x.device.type, enabled=False):
        return SelectiveLoop.apply(x, delta, A, B, C, h0, chunk, negative)
