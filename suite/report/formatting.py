"""Numbers for people: metrics with the digits that matter, rates as 175k or 1.2M, mean ± std.

The report's markdown and HTML use these; its CSV keeps the raw values.
"""

from __future__ import annotations

import math
import statistics


def metric(value: float) -> str:
    """A score: 0.804, 18.9, 0.031; three significant digits at most below 100, whole numbers above."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}" if magnitude >= 0.01 or magnitude == 0 else f"{value:.1e}"


def rate(value: float) -> str:
    """A throughput or a count: 938, 9.39k, 175k, 1.23M."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            scaled = value / scale
            return f"{scaled:.3g}{suffix}"
    return f"{value:.3g}"


def seconds(value: float) -> str:
    """Durations: 8.2 s, 95 s, 31 min."""
    if value >= 600:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"


def spread(value: float) -> str:
    """A standard deviation: two significant digits (0.014, 0.71, 12)."""
    return f"{value:.2g}"


def mean_std(values: list[float], fmt=metric) -> str:
    """'0.810 ± 0.014' over seeds, the value alone for one seed, '' for none."""
    if not values:
        return ""
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.mean(values))} ± {(spread if fmt is metric else fmt)(statistics.stdev(values))}"
