"""Honest timing: warm-up, then timed repeats with the device synchronised around each one.

This is the one timing primitive of the suite; benchmarks build on it and report the median
and the spread, never a single sample.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

from suite.train import sync


@dataclass
class Timing:
    """Seconds per call over ``repeats`` timed calls."""

    median: float
    q1: float
    q3: float
    samples: list[float]

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


def time_calls(fns: dict[str, Callable[[], object]], device: torch.device, warmup: int = 3, repeats: int = 10) -> dict[str, Timing]:
    """Time several callables, interleaved (A B A B ...) so drift in the machine hits all alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            sync(device)
            start = time.perf_counter()
            fn()
            sync(device)
            samples[name].append(time.perf_counter() - start)
    return {name: summarise(s) for name, s in samples.items()}
