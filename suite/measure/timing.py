"""Honest timing: warm-up, then timed repeats with the device synchronised around each one.

This is the one timing primitive of the suite; benchmarks build on it and report the median
and the spread, never a single sample.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable

import torch

from suite.measure.contention import OthersLoad
from suite.runtime.device import sync


@dataclass
class Timing:
    """Seconds per call over ``repeats`` timed calls, and the other processes' share of the CPUs meanwhile (None:
    unknown)."""

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


def time_calls(
    fns: dict[str, Callable[[], object]],
    device: torch.device,
    warmup: int = 3,
    repeats: int = 10,
    min_seconds: float = 0.0,
    max_repeats: int = 1000,
) -> dict[str, Timing]:
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
