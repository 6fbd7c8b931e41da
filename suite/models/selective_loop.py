"""Mamba's selective scan as one loop over positions with its own backward: no (B, L, E, N) tensor but the states.

h_t = exp(delta_t A) h_(t-1) + (delta_t x_t) B_t and y_t = h_t C_t, for x, delta (B, L, E), A (E, N), B, C (B, L, N).
The parallel scans (``mambapy``'s pscan, the log-space scan) first build exp(delta A) and delta B x for every position,
(B, L, E, N) numbers each, and then pass over them and their gradients a dozen times or more: on a CPU the scan is
bound by those passes, not by its arithmetic. Here each position's decay and input are made from the (B, E) and
(B, N) slices when the loop reaches it, the state (B, E, N) stays small enough to stay in cache, and the backward
runs the same loop in reverse, making each position's decay again rather than keeping it; only the states are kept
(one (L, B, E, N) tensor, which the gradients of A, delta and C need). The loop costs a few dozen small operations a
position, so it gains most where (B, E, N) is small and the parallel scan's passes are long.
"""

from __future__ import annotations

import torch
from torch import Tensor


class SelectiveLoop(torch.autograd.Function):
    """x, delta (B, L, E), A (E, N), B, C (B, L, N), h0 (B, E, N) -> (y (B, L, E), h_L (B, E, N)); float32 or 64."""

    @staticmethod
    def forward(ctx, x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, h0: Tensor) -> tuple[Tensor, Tensor]:
        length = x.shape[1]
        u = (delta * x).unbind(1)  # the input's share delta_t x_t, (B, E) a position
        deltas, Bs, Cs = delta.unbind(1), B.unbind(1), C.unbind(1)
        states = x.new_empty(length, *h0.shape)
        ys, h = [], h0
        for t in range(length):
            h = torch.addcmul(torch.exp(deltas[t][:, :, None] * A) * h, u[t][:, :, None], Bs[t][:, None, :])
            states[t] = h
            ys.append(torch.bmm(h, Cs[t][:, :, None]))  # (B, E, 1)
        ctx.save_for_backward(x, delta, A, B, C, h0, states)
        return torch.cat(ys, dim=2).transpose(1, 2), h

    @staticmethod
    def backward(ctx, gy: Tensor, gh: Tensor | None) -> tuple[Tensor, ...]:
        x, delta, A, B, C, h0, states = ctx.saved_tensors
        length = x.shape[1]
        u = delta * x
        xs, deltas, us, Bs, Cs, gys = (t.unbind(1) for t in (x, delta, u, B, C, gy))
        gu, gB, gC, gq = [], [], [], []
        gA = torch.zeros_like(h0)  # summed over the batch at the end
        g = torch.zeros_like(h0) if gh is None else gh.clone()  # the loss's gradient with respect to h_t
        for t in range(length - 1, -1, -1):
            g = torch.addcmul(g, gys[t][:, :, None], Cs[t][:, None, :])
            gC.append(torch.bmm(gys[t][:, None, :], states[t]))  # (B, 1, N)
            gu.append(torch.bmm(g, Bs[t][:, :, None]))  # (B, E, 1)
            gB.append(torch.bmm(us[t][:, None, :], g))  # (B, 1, N)
            decay = torch.exp(deltas[t][:, :, None] * A)
            q = g * decay * (states[t - 1] if t else h0)  # the gradient with respect to delta_t A, elementwise
            gq.append((q * A).sum(-1))  # its share of delta_t's gradient, (B, E)
            gA.addcmul_(q, deltas[t][:, :, None])
            g = g * decay
        gu_all = torch.cat(gu[::-1], dim=2).transpose(1, 2)  # (B, L, E)
        g_delta = torch.stack(gq[::-1], dim=1) + gu_all * x
        return (
            gu_all * delta,
            g_delta,
            gA.sum(0),
            torch.cat(gB[::-1], dim=1),
            torch.cat(gC[::-1], dim=1),
            g,
        )


def selective_loop(
    x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, h0: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """x, delta (B, L, E), A (E, N), B, C (B, L, N), h0 (B, E, N) or None (zeros) -> (y (B, L, E), h_L (B, E, N)),
    y_t = C_t . h_t without the skip D x_t, in the inputs' precision (autocast off: a bf16 state would drift)."""
    if h0 is None:
        h0 = x.new_zeros(x.shape[0], x.shape[2], A.shape[1])
    with torch.autocast(x.device.type, enabled=False):
        return SelectiveLoop.apply(x, delta, A, B, C, h0)
