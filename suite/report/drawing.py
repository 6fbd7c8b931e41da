"""What every figure of the report draws with: its series, their panels and styles, and the file it saves.

A series is one model in one setting (``series_of``: a model present at several sizes, attention kernels, precisions
or budgets gets a series for each, so runs of different kinds are never averaged); a panel holds at most
``PANEL_SERIES`` of them (``family_panels`` splits more by family); each is drawn in its model's colour
(``suite.report.palette``), its precision's line style and a marker of its own (``style``), error bars only where it
has seeds and none in the legend (``draw_series``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from suite.report import palette as pal  # noqa: E402
from suite.runtime.record import ResultRecord, trainer_name  # noqa: E402

PANEL_SERIES = 8
"""The most series a panel shows; more are split into panels by family."""


def model_size(r: ResultRecord) -> str:
    """Width x depth of a run's model, from its composed config ('' when the config lacks them)."""
    model = r.config.get("model", {})
    width, depth = model.get("d_model"), model.get("backbone", {}).get("n_layers")
    return f"d{width}x{depth}" if width and depth else ""


def attention_variant(r: ResultRecord) -> str:
    return f"{r.attention} attention" if r.attention else ""


# What tells two runs of one model apart in a plot: task, width x depth, attention kernel, precision, trainer profile.
VARIANTS: tuple[Callable[[ResultRecord], str], ...] = (
    lambda r: r.task,  # a speed point of a translation model is no point of the classifier's sweep
    model_size,
    lambda r: attention_variant(r),
    pal.precision,  # records from before the setting ran fp32
    lambda r: f"({trainer_name(r)})",
)
PRECISION = VARIANTS.index(pal.precision)


@dataclass
class Series:
    """One line (or set of bars) of a figure: a model in one setting, its values by x over the seeds."""

    label: str
    runs: list[ResultRecord] = field(default_factory=list)
    points: dict[float, list[float]] = field(default_factory=lambda: defaultdict(list))

    @property
    def first(self) -> ResultRecord:
        return self.runs[0]


def series_of(
    records: list[ResultRecord],
    value: Callable[[ResultRecord], float | None],
    x: Callable[[ResultRecord], float | None] = lambda r: r.seq_len,
    precision: bool = True,
    along: tuple[Callable[[ResultRecord], str], ...] = (),
) -> list[Series]:
    """The series of ``records``: one per model, and one for each size, attention kernel, precision or trainer profile
    of a model present in several, labelled with what differs, so runs of different kinds are never averaged.

    Args:
        x: where a run's value goes along the series (its length; a run without one is left out).
        precision: every label ends with the run's precision (', bf16'), whether or not it differs.
        along: the ``VARIANTS`` that ``x`` runs along, which split no series (``model_size`` where x is the width).
    """
    variants: dict[str, list[set[str]]] = defaultdict(lambda: [set() for _ in VARIANTS])
    for r in records:
        for seen, variant in zip(variants[r.model], VARIANTS):
            seen.add(variant(r))
    out: dict[str, Series] = {}
    for r in records:
        v, at = value(r), x(r)
        if v is None or not at:
            continue
        parts = [
            variant(r)
            for k, (seen, variant) in enumerate(zip(variants[r.model], VARIANTS))
            if len(seen) > 1 and not (precision and k == PRECISION) and variant not in along and variant(r)
        ]
        if r.attention not in (None, "full") and attention_variant(r) not in parts:
            parts.append(attention_variant(r))  # a core other than full attention is named even when alone
        label = " ".join([r.model, *parts]) + (f", {pal.precision(r)}" if precision else "")
        series = out.setdefault(label, Series(label))
        series.runs.append(r)
        series.points[at].append(v)
    return list(out.values())


def series_key(s: Series) -> tuple[int, str, str]:
    """Series in reading order: family, model, then label."""
    return (*pal.order(s.first), s.label)


def family_panels(
    series: list[Series], colours: pal.Palette, limit: int = PANEL_SERIES
) -> list[tuple[str, list[Series]]]:
    """(title, series) a panel: all in one when there are at most ``limit``; else one panel a family (in
    ``palette.FAMILIES`` order, as ``colours`` knows each model's), a family of more than ``limit`` split evenly
    ('attention variants, 1 of 2')."""
    ordered = sorted(series, key=series_key)
    if len(ordered) <= limit:
        return [("", ordered)]
    panels = []
    for name in pal.FAMILIES:
        members = [s for s in ordered if colours.family(s.first) == name]
        parts = math.ceil(len(members) / limit)
        size = math.ceil(len(members) / parts) if parts else 0
        for k in range(parts):
            panels.append((name + (f", {k + 1} of {parts}" if parts > 1 else ""), members[k * size : (k + 1) * size]))
    return panels


def style(series: list[Series], colours: pal.Palette) -> dict[str, dict]:
    """label -> matplotlib keywords for a panel's series: the model's colour (a lighter shade for its second size or
    budget in the panel), its precision's line style, a marker of its own in the panel."""
    seen: dict[str, int] = defaultdict(int)
    out = {}
    for k, s in enumerate(series):
        repeat = seen[pal.identity(s.first)]
        seen[pal.identity(s.first)] += 1
        out[s.label] = {
            "color": pal.lighter(colours.colour(s.first), repeat),
            "linestyle": pal.LINESTYLES.get(pal.precision(s.first), ":"),
            "marker": pal.MARKERS[k % len(pal.MARKERS)],
        }
    return out


def draw_series(ax, series: list[Series], colours: pal.Palette, kinds: dict[str, dict] | None = None) -> list[Line2D]:
    """One line a series through the means over seeds (a marker alone where it has one x); the standard deviation as
    an error bar at the points with seeds, left out of the legend. Returns the legend's handles."""
    handles = []
    kinds = kinds or style(series, colours)  # panels that share a legend share one ``style``
    for s in series:
        xs = sorted(s.points)
        means = [statistics.mean(s.points[x]) for x in xs]
        (line,) = ax.plot(xs, means, label=s.label, markersize=5, linewidth=1.6, **kinds[s.label])
        handles.append(line)
        spread = [(x, m, statistics.stdev(s.points[x])) for x, m in zip(xs, means) if len(s.points[x]) > 1]
        if spread:
            ax.errorbar(
                [p[0] for p in spread],
                [p[1] for p in spread],
                yerr=[p[2] for p in spread],
                fmt="none",
                ecolor=kinds[s.label]["color"],
                capsize=3,
                linewidth=1,
            )
    ax.grid(True, which="major", alpha=0.3)
    return handles


def share_scale(axes: list) -> None:
    """One y range over ``axes`` (a column: the families compare by height)."""
    spans = [ax.get_ylim() for ax in axes if ax.has_data()]
    if spans:
        low, high = min(s[0] for s in spans), max(s[1] for s in spans)
        for ax in axes:
            ax.set_ylim(low, high)


DPI = 110
# A figure with a row per setting grows without bound (the capability map's learning curves: over a hundred rows, a
# 5 MB image at DPI); past this many pixels it is drawn at a lower resolution, so a committed report stays small.
MAX_PIXELS = 12_000_000


def resolution(fig) -> float:
    """The dots per inch ``save`` draws ``fig`` at: ``DPI``, lower where that would pass ``MAX_PIXELS``."""
    width, height = fig.get_size_inches()
    return min(DPI, math.sqrt(MAX_PIXELS / (width * height)))


def save(fig, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(out, dpi=resolution(fig), bbox_inches="tight")  # "tight": a legend placed beside the panels is kept
    plt.close(fig)
    return out
