"""Axis numbers a person reads without arithmetic: 64, 1K, 4K, 16K on a length axis, 30k and 1.2M elsewhere.

Every figure of the report puts its numbers through ``plain``: a log axis by ``log_axis`` (never 2^6 or 3x10^4), a
linear one by ``linear_axis`` (never an offset or a x10^4 above the axis), an axis of measured lengths or widths by
``measured_axis`` (a tick at each value measured, no other).
"""

from __future__ import annotations

import math
from typing import Iterable

from matplotlib.ticker import FixedLocator, FuncFormatter, LogFormatter, LogLocator, NullFormatter, NullLocator

BINARY = ((2**30, "G"), (2**20, "M"), (2**10, "K"))  # 1K = 1024: lengths and widths are powers of two
DECIMAL = ((1e9, "G"), (1e6, "M"), (1e3, "k"))  # 30k = 30 000: counts, rates, steps


def plain(value: float) -> str:
    """A number as a tick label: 64, 1K (1024), 16K, 1.5K (1536), 30k (30 000), 1.2M, 0.25.

    Thousands in decimal units with a small k where three digits write them exactly (4k, 30k, 1.2M); else, where
    three digits write them exactly in units of 1024 (lengths and widths: 1K, 4K, 16K, 1.5K), in those with a capital
    K; else decimal, rounded (12.3k).
    """
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    if magnitude < 1000:
        return f"{sign}{magnitude:.3g}"
    for units in (DECIMAL, BINARY):
        scale, suffix = next((s, x) for s, x in units if magnitude >= s)
        if float(f"{magnitude / scale:.3g}") == magnitude / scale:
            return f"{sign}{magnitude / scale:.3g}{suffix}"
    scale, suffix = next((s, x) for s, x in DECIMAL if magnitude >= s)
    return f"{sign}{magnitude / scale:.3g}{suffix}"


class PlainLogFormatter(LogFormatter):
    """matplotlib's choice of which log ticks to label (decades; in a narrow range, some ticks between them too),
    each label written by ``plain``."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return plain(x) if super().__call__(x, pos) else ""


def log_axis(axis, base: float = 10) -> None:
    """A log scale on ``axis`` (an ``ax.xaxis`` or ``ax.yaxis``) labelled in plain numbers."""
    (axis.axes.set_xscale if axis is axis.axes.xaxis else axis.axes.set_yscale)("log", base=base)
    axis.set_major_locator(LogLocator(base=base))
    axis.set_major_formatter(PlainLogFormatter(base=base))
    axis.set_minor_formatter(PlainLogFormatter(base=base, labelOnlyBase=False))


def linear_axis(axis) -> None:
    """Plain numbers on a linear ``axis``: 0, 500, 1k, 1.5k (no offset text, no x10^n)."""
    axis.set_major_formatter(FuncFormatter(lambda x, pos: plain(x)))


def measured_axis(axis, values: Iterable[float], base: float = 2) -> None:
    """A log ``axis`` with a tick at each measured value alone (64, 256, 1K, 4K): the lengths or widths a sweep ran."""
    ticks = sorted({v for v in values if v and v > 0})
    (axis.axes.set_xscale if axis is axis.axes.xaxis else axis.axes.set_yscale)("log", base=base)
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda x, pos: plain(x)))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())
