"""The linear recurrence h_t = a_t * h_(t-1) + b_t (elementwise) as one loop over positions with its own backward.

minGRU's and minLSTM's parallel form (``suite.models.scan.log_scan``) pays for its parallelism with a ``logcumsumexp``
over every (B, L, H) number, forward and backward: an exp and a log each, and a backward that autograd composes of
several more passes. A GPU has the threads to spend on that; two CPU cores do not, and there the plain recurrence,
one multiply-add of a (B, H) slice a position, is the cheaper way (``python -m suite.tools.scan_bench`` prints both).
The backward is the same recurrence run in reverse: with G_t the loss's whole gradient at h_t,
G_t = dL/dh_t + a_(t+1) G_(t+1), and then dL/db_t = G_t, dL/da_t = G_t h_(t-1), dL/dh_0 = a_1 G_1. Only a and the
states are kept (what autograd would keep for the same loop, without its graph of 2L nodes). The loop takes a and b
themselves, so a layer that feeds it need not make their logs (minGRU's ``linear_coefficients``).
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from suite.models.selective_loop import position_major


class LinearLoop(torch.autograd.Function):
    """a, b (B, L, H), h0 (B, H) -> h (B, L, H), in the inputs' precision."""

    @staticmethod
    def forward(ctx, a: Tensor, b: Tensor, h0: Tensor) -> Tensor:
        a_, b_ = position_major(a, b)  # (L, B, H): a position's slice is one block of memory
        h = torch.empty_like(b_)
        prev = h0
        for t in range(a_.shape[0]):
            prev = torch.addcmul(b_[t], a_[t], prev, out=h[t])
        ctx.save_for_backward(a_, h, h0)
        return h.transpose(0, 1)

    @staticmethod
    @once_differentiable  # the backward's own loop is not differentiable again
    def backward(ctx, gh: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        a_, h, h0 = ctx.saved_tensors
        # a copy always: the loop below writes the whole gradient into it, and at batch 1 the transpose of gh is
        # already contiguous (``contiguous`` would hand back gh itself, which autograd may pass to another branch)
        G = gh.transpose(0, 1).clone(memory_format=torch.contiguous_format)
        for t in range(G.shape[0] - 2, -1, -1):
            G[t].addcmul_(a_[t + 1], G[t + 1])
        before = torch.cat([h0[None], h[:-1]])  # h_(t-1) for every t
        return (G * before).transpose(0, 1), G.transpose(0, 1), G[0] * a_[0]


def linear_loop(a: Tensor, b: Tensor, h0: Tensor | None = None) -> Tensor:
    """a, b (B, L, H), h0 (B, H) or None (zeros) -> h (B, L, H), in float32 at least (autocast off: a bf16 state
    would drift); ``suite.models.scan.log_scan`` of log a and log b gives the same h."""
    dtype = torch.promote_types(a.dtype, torch.float32)
    with torch.autocast(a.device.type, enabled=False):
        a, b = a.to(dtype), b.to(dtype)
        start = a.new_zeros(a.shape[0], a.shape[2]) if h0 is None else h0.to(dtype)
        return LinearLoop.apply(a, b, start)
