"""Honest timing: warm-up, then timed repeats with the device synchronised around each one.

This is the one timing primitive of the suite; benchmarks build on it and report the median
and the spread, never a single sample.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace
from functools import cache
from typing import Callable

import torch

from suite.contention import OthersLoad
from suite.train import sync


@dataclass
class Timing:
    """Seconds per call over ``repeats`` timed calls, and the other processes' share of the CPUs meanwhile (None: unknown)."""

    median: float
    q1: float
    q3: float
    samples: list[float]
    others_cpu_share: float | None = None

    @property
    def spread(self) -> float:
        """Inter-quartile range, in seconds."""
        return self.q3 - self.q1

    def __str__(self) -> str:
        return f"{self.median * 1e3:.2f} ms (IQR {self.spread * 1e3:.2f})"


def summarise(samples: list[float]) -> Timing:
    if len(samples) < 2:
        return Timing(samples[0], samples[0], samples[0], samples)
    q1, med, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return Timing(med, q1, q3, samples)


def time_calls(fns: dict[str, Callable[[], object]], device: torch.device, warmup: int = 3, repeats: int = 10, min_seconds: float = 0.0, max_repeats: int = 1000) -> dict[str, Timing]:
    """Time several callables, interleaved (A B A B ...) so drift in the machine hits all alike.

    At least ``repeats`` rounds, and more (up to ``max_repeats``) until the timed rounds span
    ``min_seconds``: on a shared virtual machine the speed drifts by up to 1.7x over seconds
    (a 1024 x 1024 matmul timed every 0.3 s here took 22 to 39 ms), so the median of a few
    calls taken within a tenth of a second says more about that moment than about the model.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    started = time.perf_counter()
    rounds = 0
    with OthersLoad() as others:  # how quiet the machine was while these rounds ran
        while rounds < repeats or (rounds < max_repeats and time.perf_counter() - started < min_seconds):
            rounds += 1
            for name, fn in fns.items():
                sync(device)
                start = time.perf_counter()
                fn()
                sync(device)
                samples[name].append(time.perf_counter() - start)
    return {name: replace(summarise(s), others_cpu_share=others.share) for name, s in samples.items()}


# --- FLOPs and the machine's peak -------------------------------------------------------------


def flop_mapping() -> dict:
    """Formulas for the fused kernels ``FlopCounterMode`` leaves uncounted: CPU flash attention, oneDNN LSTM, cuDNN RNNs."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten

    def forward(q, k, v, *args, out_shape=None, **kwargs) -> int:  # shapes, as FlopCounterMode passes them
        return fc.sdpa_flop_count(q, k, v)

    def backward(grad_out, q, k, v, *args, out_shape=None, **kwargs) -> int:
        return fc.sdpa_backward_flop_count(grad_out, q, k, v)

    def lstm_layer(input, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
        # oneDNN's fused LSTM layer: per token, x @ W_ih^T and h @ W_hh^T (the gates' elementwise
        # work is not counted, as FlopCounterMode counts no elementwise op elsewhere).
        return 2 * math.prod(input[:-1]) * (math.prod(w_ih) + math.prod(w_hh))

    def lstm_layer_backward(input, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
        return 2 * lstm_layer(input, w_ih, w_hh)  # gradients of the inputs and of the weights

    def cudnn_rnn(input, weights, *args, out_shape=None, **kwargs) -> int:
        # cuDNN's fused RNN/LSTM/GRU (every layer and direction): each sees every token once per
        # weight matrix (the 2-D entries of the weight list; biases are 1-D).
        return 2 * math.prod(input[:-1]) * sum(math.prod(w) for w in weights if len(w) == 2)

    def cudnn_rnn_backward(input, weights, *args, out_shape=None, **kwargs) -> int:
        return 2 * cudnn_rnn(input, weights)

    return {
        aten._cudnn_rnn: cudnn_rnn,
        aten._cudnn_rnn_backward: cudnn_rnn_backward,
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,
        aten.mkldnn_rnn_layer: lstm_layer,
        aten.mkldnn_rnn_layer_backward: lstm_layer_backward,
    }


def count_flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of one call, from ``torch.utils.flop_counter`` (a multiply-add is 2)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=flop_mapping()) as counter:
        fn()
    return int(counter.get_total_flops())


@dataclass(frozen=True)
class Peak:
    """The machine's attainable matmul FLOP/s: the best of several timed rounds, and every round's figure."""

    flops: float
    rounds: tuple[float, ...]
    size: int
    dtype: str

    @property
    def spread(self) -> float:
        """(best - worst) / best over the rounds: 0 for a peak read the same every time."""
        return (max(self.rounds) - min(self.rounds)) / max(self.rounds)


@cache  # per process, device, size and type: every point of a sweep in one process divides by the same peak
def matmul_peak(device: torch.device, size: int | None = None, dtype: torch.dtype = torch.float32, rounds: int = 5, round_seconds: float = 0.4,
                warmup_seconds: float = 1.0) -> Peak:
    """Square matmuls timed in ``rounds`` rounds after ``warmup_seconds`` of untimed ones; the best round's median is the peak.

    The best, not the median of the rounds: the MFU denominator is what the machine can reach, and
    a round that a neighbour or a cold unit slowed says nothing about that. The warm-up matters on
    AMX (one session's 21 points read their bf16 peak anywhere from 336 to 1,053 GFLOP/s when
    timed after two calls); the rounds' spread goes into ``suite.precision_check``'s output.
    """
    size = size or (8192 if device.type == "cuda" else 2048)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    started = time.perf_counter()
    while time.perf_counter() - started < warmup_seconds:
        a @ b
    sync(device)
    medians = [time_calls({"mm": lambda: a @ b}, device, warmup=0, repeats=2, min_seconds=round_seconds)["mm"].median for _ in range(rounds)]
    flops = tuple(2 * size**3 / t for t in medians)
    return Peak(max(flops), flops, size, str(dtype).removeprefix("torch."))


# --- peak memory ----------------------------------------------------------------------------


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

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=lambda e: e.start_ns())
    current = peak = 0
    for event in events:
        current += event.nbytes()  # negative for a free
        peak = max(peak, current)
    return peak
