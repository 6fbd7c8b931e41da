"""Peak memory of one call, on CUDA and on the CPU."""

from __future__ import annotations

import os
from typing import Callable

import torch


def peak_memory(fn: Callable[[], object], device: torch.device) -> int:
    """Peak bytes allocated by tensors during one call, above what was allocated before it.

    On CUDA: the caching allocator's peak statistic, reset first. On the CPU: the allocator's
    own accounting, replayed from the profiler's allocation and free events in time order.
    Both are per call, so earlier points in the same process cannot inflate a later one.
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        start = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - start
    from torch.profiler import ProfilerActivity, profile

    # Kineto, the profiler's engine, logs to stderr at every start and stop ('USDT: ... profiler_start', and on a CPU
    # machine with a CUDA build 'gpuGetDeviceCount failed'): level 6 is above its highest (USDT, 5), so none. It reads
    # the level once, at its first start in the process; one set by the user is kept. The events read below are not
    # its log: the measurement is the same.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(
        (e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=lambda e: e.start_ns()
    )
    current = peak = 0
    for event in events:
        current += event.nbytes()  # negative for a free
        peak = max(peak, current)
    return peak
