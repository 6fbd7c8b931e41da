"""The linear recurrence h_t = a_t * h_(t-1) + b_t (elementwise, a_t in (0, 1), b_t > 0) over a whole sequence at once.

minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?") make their gates depend on the input alone, so the
recurrence is linear in h and runs as a scan in log space (Heinsen 2023; the paper's appendix B): with
A_t = log a_1 + ... + log a_t, h_t = exp(A_t) * (h_0 + sum_(s<=t) exp(log b_s - A_s)), the sum a ``logcumsumexp``.

Over a long sequence A_t grows large and negative, and A_t + logcumsumexp(...) subtracts two large numbers: in fp32
at L = 16K (A near -10^4) that loses three digits. The scan therefore runs in chunks: in parallel inside every chunk
at once, then one cheap step per chunk carries the state on, so |A| stays bounded by a chunk's length.
``sequential`` is the reference the tests hold it to.
"""

from __future__ import annotations

import torch
from torch import Tensor


def positive_int(value: object, setting: str, owner: str) -> int:
    """``value`` if it is a positive integer, else a ValueError naming the setting and its owner."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{owner}: {setting} must be a positive integer, got {value!r}")
    return value


def log_scan(log_a: Tensor, log_b: Tensor, h0: Tensor | None = None, chunk: int | None = 256) -> Tensor:
    """log a, log b (B, L, H), h0 (B, H) >= 0 or None (zeros) -> h (B, L, H), computed in float32 at least.

    ``chunk``: positions scanned in parallel at once (None: the whole sequence in one).
    """
    dtype = torch.promote_types(log_a.dtype, torch.float32)
    log_a, log_b = log_a.to(dtype), log_b.to(dtype)
    batch, length, width = log_a.shape
    size = length if chunk is None else min(chunk, length)
    pad = -length % size
    if pad:  # a padded tail step keeps h (a = 1) and adds nothing (b = 0); it is cut off at the end
        log_a = torch.cat([log_a, log_a.new_zeros(batch, pad, width)], dim=1)
        log_b = torch.cat([log_b, log_b.new_full((batch, pad, width), float("-inf"))], dim=1)
    n = (length + pad) // size
    log_a, log_b = log_a.view(batch, n, size, width), log_b.view(batch, n, size, width)
    A = log_a.cumsum(dim=2)  # (B, n, C, H): within each chunk
    local = torch.exp(A + torch.logcumsumexp(log_b - A, dim=2))  # each chunk's h from a zero state
    if n == 1 and h0 is None:  # one chunk from a zero state: its own scan is the answer
        return local.view(batch, size, width)[:, :length]
    decay = torch.exp(A)  # how much of the chunk's incoming state is left at each position
    # the chunks' last positions taken once: indexing the full tensors inside the loop would cost a full-size
    # zero-filled gradient a chunk in the backward pass
    last_decay, last_local = decay[:, :, -1].unbind(1), local[:, :, -1].unbind(1)  # n x (B, H)
    h = log_a.new_zeros(batch, width) if h0 is None else h0.to(dtype)
    starts = []
    for k in range(n):  # one step per chunk: the state entering chunk k
        starts.append(h)
        h = last_decay[k] * h + last_local[k]
    out = decay * torch.stack(starts, dim=1)[:, :, None] + local
    return out.view(batch, n * size, width)[:, :length]


def sequential(a: Tensor, b: Tensor, h0: Tensor | None = None) -> Tensor:
    """The same recurrence one step at a time, in linear space: a, b (B, L, H), h0 (B, H) -> h (B, L, H)."""
    h = a.new_zeros(a.shape[0], a.shape[2]) if h0 is None else h0
    out = []
    for at, bt in zip(a.unbind(1), b.unbind(1)):  # unbound once, as in log_scan
        h = at * h + bt
        out.append(h)
    return torch.stack(out, dim=1)
