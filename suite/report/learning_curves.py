"""Learning curves: did each compared model converge, and how soon, in steps and in seconds?

A row a task setting (task, dataset, length, budget), the validation primary metric against training steps on the left
and against training seconds on the right, a line a run (thin, one a seed, where a model ran several), a colour a
model (``suite.report.palette``). A run whose curve the convergence test judged anything but plateaued
(``ResultRecord.convergence['verdict']``: 'still learning', 'too few evaluations', 'diverged') says so in the legend:
its figure in the tables is not its end point.

Reads the columns a training run's record keeps in ``curves`` (``step``, ``seconds``, ``val_<metric>``; one entry an
evaluation); records without ``step`` there (older runs, and jobs whose curves have other axes) are left out.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from matplotlib.lines import Line2D

from suite.report import palette as pal
from suite.report.axes import linear_axis
from suite.report.drawing import Series, family_panels, plt, save, series_of, style
from suite.runtime.record import ResultRecord, trainer_name

Setting = tuple[str, str, int, str]  # task, dataset, length, budget (``trainer_name``)
PLATEAUED = "plateaued"
UNJUDGED = ("", "no curve")  # no verdict to show
AXES = (("step", "training steps"), ("seconds", "training seconds"))


def has_curve(r: ResultRecord) -> bool:
    """A training run that kept its learning curve, with a validation metric along it (whatever its status: a
    diverged run's curve says when)."""
    return r.job == "train" and bool(r.curves.get("step")) and any(k.startswith("val_") for k in r.curves)


def setting(r: ResultRecord) -> Setting:
    return r.task, r.dataset, r.seq_len or 0, trainer_name(r)


def metric_of(runs: list[ResultRecord]) -> str:
    """The curve drawn for a setting: ``val_<primary metric>`` where the runs kept it, else another validation metric
    (the loss last)."""
    counts: dict[str, int] = defaultdict(int)
    for r in runs:
        for key in r.curves:
            if key.startswith("val_"):
                counts[key] += 1 + 100 * (key == f"val_{r.primary_metric}") - (key == "val_loss")
    return max(sorted(counts), key=lambda k: counts[k])


def verdict(r: ResultRecord) -> str:
    """The convergence test's verdict on a run ('' on a record from before it)."""
    return str((getattr(r, "convergence", None) or {}).get("verdict", ""))


def marked(s: Series) -> str:
    """The series' label with the verdicts that are not a plateau: 'lstm, fp32 (still learning)', '(still learning: 1
    of 2 seeds)'."""
    verdicts = [verdict(r) for r in s.runs]
    notes = []
    for v in sorted(set(verdicts) - {PLATEAUED, *UNJUDGED}):
        n = verdicts.count(v)
        notes.append(v if n == len(verdicts) else f"{v}: {n} of {len(verdicts)} seeds")
    return s.label + (f" ({'; '.join(notes)})" if notes else "")


def points(r: ResultRecord, x: str, metric: str) -> tuple[list[float], list[float]]:
    """The run's evaluations as (x, metric) pairs, those with a missing value left out."""
    pairs = [
        (a, b)
        for a, b in zip(r.curves.get(x, []), r.curves.get(metric, []))
        if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)
    ]
    return [a for a, _ in pairs], [b for _, b in pairs]


def learning_curves(records: list[ResultRecord], out: Path) -> Path | None:
    """The validation primary metric against steps and against training seconds: a row a task setting (more than
    ``PANEL_SERIES`` models split by family), a line a run."""
    runs = [r for r in records if has_curve(r)]
    if not runs:
        return None
    colours = pal.Palette.of(records)
    by_setting: dict[Setting, list[ResultRecord]] = defaultdict(list)
    for r in runs:
        by_setting[setting(r)].append(r)
    rows = []
    for key in sorted(by_setting):
        metric = metric_of(by_setting[key])
        shown = series_of(by_setting[key], lambda r: 1.0, x=lambda r: r.seed + 1)  # a series a model: its seeds' runs
        rows += [(key, metric, name, members) for name, members in family_panels(shown, colours)]
    fig, axes = plt.subplots(len(rows), len(AXES), figsize=(11.5, 2.9 * len(rows) + 0.5), squeeze=False)
    for row, ((task, dataset, length, budget), metric, name, members) in zip(axes, rows):
        kinds = style(members, colours)
        for ax, (x, x_label) in zip(row, AXES):
            for s in members:
                thin = len(s.runs) > 1
                for r in s.runs:
                    ax.plot(
                        *points(r, x, metric),
                        color=kinds[s.label]["color"],
                        linestyle=kinds[s.label]["linestyle"],
                        linewidth=0.9 if thin else 1.6,
                        alpha=0.8 if thin else 1.0,
                    )
            linear_axis(ax.xaxis)
            linear_axis(ax.yaxis)
            ax.set_xlabel(x_label, fontsize=8)
            ax.grid(True, alpha=0.3)
        where = f"{task}: {dataset}" + (f", L={length}" if length else "") + f", {budget}"
        row[0].set_title(where + (f" ({name})" if name else ""), fontsize=9, loc="left")
        row[0].set_ylabel(metric.replace("val_", "validation ", 1), fontsize=8)
        handles = [
            Line2D([], [], color=kinds[s.label]["color"], linestyle=kinds[s.label]["linestyle"], label=marked(s))
            for s in members
        ]
        row[-1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)
    fig.suptitle(
        "Did each model converge, and how soon? Validation metric against steps and against training seconds\n"
        "(a thin line a seed; the legend names a run the convergence test did not find plateaued)",
        fontsize=10,
    )
    return save(fig, out)
