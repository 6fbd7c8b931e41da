"""The report's figures, each drawn from result records (nothing typed by hand).

Every function takes records and an output path, draws one PNG, and returns the path, or None when the records hold
nothing for that figure. Each figure answers one question and reads at a glance:

- a family a colour (``suite.report.palette``: blues attention, reds classic recurrence, greens modern recurrence),
  a model a shade of it in every figure, its precision the line's style and a word of its label;
- at most ``PANEL_SERIES`` series a panel: more are split by family (``family_panels``);
- plain numbers on every axis (``suite.report.axes``: 64, 1K, 30k);
- error bars (the standard deviation over seeds) only where there are seeds, and none in a legend;
- runs of different budgets, sizes or attention cores never averaged together, nor joined by one line.

``FIGURES`` are the figures of the results (the headline and per-task tables); a report section draws its own
(``Section.figures``: the speed section its speed and memory against length, for instance) from the helpers here.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Callable

from suite.report import palette as pal
from suite.report.axes import linear_axis, log_axis, measured_axis
from suite.report.drawing import (
    Series,
    draw_series,
    family_panels,
    model_size,
    plt,
    save,
    series_key,
    series_of,
    share_scale,
    style,
)
from suite.report.learning_curves import learning_curves
from suite.report.section import claimed
from suite.runtime.record import ResultRecord, trainer_name

FAMILIES = (
    "attention",
    "backbone",
    "other",
)  # ``family``'s answers: attention, other backbones (recurrent), none (Lead-k)


def family(r: ResultRecord) -> str:
    """What a run's model is, from its composed config (never its name): 'attention' (it has an
    attention node), 'backbone' (a backbone without attention: the recurrent baselines) or 'other'.
    (The figures' finer families, classic and modern recurrence apart: ``palette.model_family``.)"""
    model = r.config.get("model") or {}
    if model.get("attention") is not None:
        return "attention"
    return "backbone" if model.get("backbone") is not None else "other"


def model_order(records: list[ResultRecord]) -> Callable[[str], tuple[int, str]]:
    """A sort key for model labels (a label may carry the size after the name): family (``palette.FAMILIES``: attention
    variants, classic recurrent, modern recurrent, other), then name."""
    rank = {name: pal.FAMILIES.index(pal.model_family(r)) for r in records for name in (r.model, pal.identity(r))}
    return lambda label: (rank.get(label.split(" ")[0], len(pal.FAMILIES)), label)


def is_speed(r: ResultRecord) -> bool:
    """A speed point, whatever its status (a timeout or oom point is one too)."""
    return r.job == "speed"


def is_training(r: ResultRecord) -> bool:
    """A training run that finished."""
    return r.status == "ok" and r.job == "train"


def primary(r: ResultRecord) -> tuple[str, float] | None:
    """The headline test metric of a run: the task's primary metric (the record names it), else its first test
    metric."""
    tests = {k: v for k, v in r.metrics.items() if not k.startswith("val_") and k != "loss"}
    if not tests:
        return None
    key = r.primary_metric if r.primary_metric in tests else sorted(tests)[0]
    return key, tests[key]


Study = tuple[str, str, str]  # (task, dataset, budget: the trainer profile, ``trainer_name``)


def study(r: ResultRecord) -> Study:
    return r.task, r.dataset, trainer_name(r)


def length_curves(records: list[ResultRecord]) -> set[Study]:
    """The (task, dataset, budget) trained at more than one length: their accuracy is drawn as a curve against length,
    one panel a budget (runs a report section claims for a figure of its own aside, e.g. a task drawn against width:
    ``Section.claims``). Lengths run at different budgets make no curve: each is a bar of ``domain_bars``."""
    lengths: dict[Study, set[int]] = defaultdict(set)
    theirs = claimed(records)
    for r in records:
        if is_training(r) and r.seq_len and id(r) not in theirs:
            lengths[study(r)].add(r.seq_len)
    return {key for key, seen in lengths.items() if len(seen) > 1}


def length_studies(records: list[ResultRecord]) -> set[tuple[str, str]]:
    """The (task, dataset) pairs with a curve against length at some budget (``length_curves``)."""
    return {(task, dataset) for task, dataset, _ in length_curves(records)}


def series_by_model(
    records: list[ResultRecord], value: Callable[[ResultRecord], float | None]
) -> dict[str, dict[int, list[float]]]:
    """label -> seq_len -> values (over seeds), the precision named only where a model ran in several
    (``series_of``)."""
    return {s.label: s.points for s in series_of(records, value, precision=False)}


def missing_note(fig, records: list[ResultRecord]) -> None:
    """Name the points that produced no figure, and why, under the plot."""
    missing = sorted(f"{r.model} L={r.seq_len}: {r.status}" for r in records if r.status != "ok")
    if missing:
        fig.text(0.01, 0.0, "not measured: " + "; ".join(missing), fontsize=7, wrap=True, va="top")


PRECISION_NOTE = "each model in the precision its run used: solid fp32, dashed bf16 (the label says which)"


def family_grid(
    points: list[ResultRecord],
    metrics: list[tuple[Callable[[ResultRecord], float | None], str]],
    title: str,
    out: Path,
    colours: pal.Palette,
    failed: list[ResultRecord] | None = None,
) -> Path | None:
    """Against length on log scales: a column a measure of ``points`` (``metrics``: value, axis label), a row a panel of
    ``family_panels``, each row's legend at its right; each column on one scale, so the families compare across rows.
    ``colours``: the report's palette (from all its records, as every figure's)."""
    per_metric = [series_of(points, value) for value, _ in metrics]
    labels = {s.label: s for group in per_metric for s in group}
    if not labels:
        return None
    rows = family_panels(list(labels.values()), colours)
    fig, axes = plt.subplots(
        len(rows), len(metrics), figsize=(4.6 * len(metrics) + 3.2, 2.9 * len(rows) + 0.6), squeeze=False, sharex=True
    )
    lengths = [x for group in per_metric for s in group for x in s.points]
    for column, (group, (_, axis_label)) in enumerate(zip(per_metric, metrics)):
        shown = {s.label: s for s in group}
        for row, (name, members) in enumerate(rows):
            ax = axes[row][column]
            kinds = style(members, colours)  # a row's columns share its legend
            handles = draw_series(ax, [shown[s.label] for s in members if s.label in shown], colours, kinds)
            measured_axis(ax.xaxis, lengths)
            log_axis(ax.yaxis)
            ax.set_title(f"{axis_label}" + (f": {name}" if name else ""), fontsize=9)
            if row == len(rows) - 1:
                ax.set_xlabel("sequence length (tokens)")
            if column == len(metrics) - 1 and handles:
                ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)
        share_scale([axes[row][column] for row in range(len(rows))])
    fig.suptitle(f"{title}\n{PRECISION_NOTE}", fontsize=10)
    missing_note(fig, failed or [])
    return save(fig, out)


def speed_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    """Throughput against length, training and inference (real tokens per second; a row a model family)."""
    runs = [r for r in records if is_speed(r)]
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        return None
    metrics = [
        (lambda r: r.speed.get("train_tokens_per_s"), "training tokens/s"),
        (lambda r: r.speed.get("infer_tokens_per_s"), "inference tokens/s"),
    ]
    title = "How fast does each model run as the sequence grows? (higher is faster)"
    return family_grid(ok, metrics, title, out, pal.Palette.of(records), failed=[r for r in runs if r.status != "ok"])


def memory_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    """Peak memory against length, a training step and inference (MiB; a row a model family)."""
    ok = [r for r in records if is_speed(r) and r.status == "ok"]
    if not ok:
        return None
    metrics = [
        (lambda r: r.speed.get("peak_mem_train_bytes", 0) / 2**20 or None, "peak MiB, training step"),
        (lambda r: r.speed.get("peak_mem_infer_bytes", 0) / 2**20 or None, "peak MiB, inference"),
    ]
    title = "How much memory does each model need as the sequence grows? (lower is less)"
    return family_grid(ok, metrics, title, out, pal.Palette.of(records))


def accuracy_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    """The primary test metric against length, a panel a (task, dataset, budget) trained at several lengths: a curve
    is drawn at one budget only (``length_curves``); more than ``PANEL_SERIES`` models are split by family, on one
    scale."""
    curves = length_curves(records)
    runs = [r for r in records if study(r) in curves and r.job == "train"]
    ok = [r for r in runs if r.status == "ok" and primary(r)]
    if not ok:
        return None
    colours = pal.Palette.of(records)
    panels = []
    for key in sorted(curves):
        shown = [r for r in ok if study(r) == key]
        metric = primary(shown[0])[0]
        for name, members in family_panels(series_of(shown, lambda r: r.metrics.get(metric)), colours):
            panels.append((key, metric, name, members))
    columns = min(3, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns + 2.4, 3.6 * rows + 0.4), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, ((task, dataset, budget), metric, name, members) in zip(axes.flat, panels):
        handles = draw_series(ax, members, colours)
        measured_axis(ax.xaxis, [x for s in members for x in s.points])
        linear_axis(ax.yaxis)
        note = baseline_lines(ax, [r for s in members for r in s.runs], metric)
        title = f"{task}: {dataset}" + (f", {name}" if name else "") + f"\nat {budget}"
        ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(f"test {metric}")
        ax.legend(handles=handles, fontsize=7, loc="best", framealpha=0.7)
    for key in curves:  # a study split by family: its panels on one scale
        share_scale([ax for ax, panel in zip(axes.flat, panels) if panel[0] == key])
    fig.suptitle("Does accuracy hold as the sequence grows? (one budget a panel; bars: std over seeds)", fontsize=10)
    missing_note(fig, [r for r in runs if r.status != "ok"])
    return save(fig, out)


def is_accuracy(metric: str) -> bool:
    return metric == "accuracy" or metric.endswith("_accuracy")


def class_count(r: ResultRecord) -> int | None:
    """The classes of a run's task, where its record says: two for a binary task's metrics (MCC, ROC-AUC), else the
    number of per-class F1 figures (``f1_<class>``); None where it does not (most records hold no class count)."""
    if "mcc" in r.metrics or "roc_auc" in r.metrics:
        return 2
    per_class = [k for k in r.metrics if k.startswith("f1_")]
    return len(per_class) or None


def commonest_share(r: ResultRecord) -> float | None:
    """The commonest label's share of a run's test set (its record's ``test_label_counts``; None without them)."""
    counts = r.test_label_counts
    return max(counts.values()) / sum(counts.values()) if counts and sum(counts.values()) else None


def baselines(runs: list[ResultRecord]) -> dict[str, float | None]:
    """What guessing scores on these runs' task: chance (1 / classes) where the records give the classes (their
    per-class metrics, else the labels their test set holds), and the commonest class's share of the test set where
    the records hold the test labels' counts; None where the runs disagree or say nothing."""
    classes = {class_count(r) or len(r.test_label_counts) or None for r in runs} - {None}
    shares = {round(s, 9) for r in runs if (s := commonest_share(r)) is not None}
    return {
        "chance": 1 / classes.pop() if len(classes) == 1 else None,
        "commonest class": shares.pop() if len(shares) == 1 else None,
    }


BASELINE_STYLE = {"chance": ":", "commonest class": "--"}


def baseline_lines(ax, runs: list[ResultRecord], metric: str, across: bool = True) -> str:
    """On an accuracy panel, chance and the commonest class's share as grey lines (``across``: lines across the panel,
    the metric on the y axis; else up it, the metric on x). Returns the note for the panel's title that reads them
    ('chance 0.5 (dotted); commonest class: not recorded'); '' where the metric is no accuracy."""
    if not is_accuracy(metric):
        return ""
    said = []
    for name, level in baselines(runs).items():
        if level is None:
            said.append(f"{name}: not recorded")
            continue
        (ax.axhline if across else ax.axvline)(level, color="#666666", linestyle=BASELINE_STYLE[name], linewidth=1.2)
        said.append(f"{name} {level:.3g} ({'dotted' if BASELINE_STYLE[name] == ':' else 'dashed'})")
    return "; ".join(said)


def gradient_flow(records: list[ResultRecord], out: Path) -> Path | None:
    runs = [r for r in records if r.status == "ok" and "grad_norm_relative_by_distance" in r.curves]
    if not runs:
        return None
    colours = pal.Palette.of(records)
    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    for r in sorted(runs, key=lambda r: (*pal.order(r), r.seq_len or 0)):
        curve = r.curves["grad_norm_relative_by_distance"]
        floor = [max(v, 1e-30) for v in curve]
        ax.plot(
            range(len(floor)),
            floor,
            label=f"{r.model} (L={r.seq_len}), {pal.precision(r)}",
            color=colours.colour(r),
            linestyle=pal.LINESTYLES.get(pal.precision(r), ":"),
            linewidth=1.4,
        )
    log_axis(ax.yaxis)
    linear_axis(ax.xaxis)
    ax.set_xlabel("distance from the output (positions)")
    ax.set_ylabel("||dL/dx_t|| relative to distance 0")
    ax.set_title(
        "How much gradient reaches each input position, at initialisation?\n(the floor at 1e-30 marks "
        "exact zeros: float32 underflow)",
        fontsize=10,
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    return save(fig, out)


def domain_bars(records: list[ResultRecord], out: Path) -> Path | None:
    """A panel a domain (task, dataset, budget; the length in its title), a bar a model (grouped by family) on the
    domain's own scale: the runs of no curve against length (``length_curves``) nor of a section's own figure."""
    curves, theirs = length_curves(records), claimed(records)  # those have figures of their own
    runs = [r for r in records if is_training(r) and study(r) not in curves and id(r) not in theirs and primary(r)]
    if not runs:
        return None
    colours = pal.Palette.of(records)
    groups: dict[Study, list[ResultRecord]] = defaultdict(list)
    for r in runs:
        groups[study(r)].append(r)  # budgets are never averaged together
    panels = []
    for key in sorted(groups):
        metric = primary(groups[key][0])[0]
        shown = series_of(groups[key], lambda r: r.metrics.get(metric), x=lambda r: 1)
        panels.append((key, metric, sorted(shown, key=series_key)))
    columns = min(2, len(panels))
    rows = math.ceil(len(panels) / columns)
    heights = [max(3, *(len(p[2]) for p in panels[k * columns : (k + 1) * columns])) + 3.0 for k in range(rows)]
    fig = plt.figure(figsize=(6.4 * columns, 0.26 * sum(heights) + 0.5))
    grid = fig.add_gridspec(rows, columns, height_ratios=heights)
    for k, ((task, dataset, budget), metric, members) in enumerate(panels):
        ax = fig.add_subplot(grid[k // columns, k % columns])
        note = bars_panel(ax, members, colours, metric)
        lengths = sorted({r.seq_len for s in members for r in s.runs if r.seq_len})
        where = f", L={'/'.join(map(str, lengths))}" if lengths else ""
        ax.set_title(f"{task}: {dataset}{where}, {budget}" + (f"\n{note}" if note else ""), fontsize=8.5)
    fig.suptitle(
        "How does each model score in each domain? (test metric, mean over seeds; each panel on its own scale; "
        "bars: std over seeds)",
        fontsize=10,
    )
    return save(fig, out)


def bars_panel(ax, members: list[Series], colours: pal.Palette, metric: str) -> str:
    """A bar a series, top to bottom in family order with a gap between families: the mean over its seeds, written at
    its end with the seeds counted, the std as an error bar where it has seeds; the chance and commonest-class lines
    on an accuracy panel. Returns ``baseline_lines``' note."""
    kinds = style(members, colours)
    families = [colours.family(s.first) for s in members]
    ys = [k + 0.5 * sum(a != b for a, b in zip(families[:k], families[1 : k + 1])) for k in range(len(members))]
    values = [s.points[1] for s in members]
    means = [statistics.mean(v) for v in values]
    ax.barh(ys, means, height=0.8, color=[kinds[s.label]["color"] for s in members])
    spreads = [statistics.stdev(v) if len(v) > 1 else 0.0 for v in values]
    seeded = [k for k, v in enumerate(values) if len(v) > 1]
    if seeded:
        xs, at, err = ([means[k] for k in seeded], [ys[k] for k in seeded], [spreads[k] for k in seeded])
        ax.errorbar(xs, at, xerr=err, fmt="none", ecolor="#222222", capsize=2, linewidth=1)
    for y, m, e, v in zip(ys, means, spreads, values):
        seeds = f" ({len(v)} seeds)" if len(v) > 1 else ""
        ax.annotate(f"{m:.3g}{seeds}", (m + e, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(ys, [s.label for s in members], fontsize=7.5)
    ax.invert_yaxis()  # the first family at the top
    ax.set_xlabel(f"test {metric}", fontsize=8)
    linear_axis(ax.xaxis)
    ax.set_xlim(0, max(max(m + e for m, e in zip(means, spreads)), 1e-9) * 1.35)
    if is_accuracy(metric) and ax.get_xlim()[1] > 1:  # room for the labels, no tick past a perfect score
        ax.set_xlim(0, 1.25)
        ax.set_xticks([t / 5 for t in range(6)])
    ax.grid(True, axis="x", alpha=0.3)
    return baseline_lines(ax, [r for s in members for r in s.runs], metric, across=False)


def is_compression(r: ResultRecord) -> bool:
    return r.status == "ok" and r.job == "compress" and bool(r.compression)


def method_label(r: ResultRecord) -> str:
    """A compressed run in a few words: the method and what sets it apart ('dynamic_int8 torch', 'magnitude_pruning
    80%', 'distillation -> lstm')."""
    c = r.compression
    detail = {
        "dynamic_int8": lambda: c.get("backend", "") + (" + embedding" if "embedding" in c.get("layers", []) else ""),
        "onnx": lambda: f"runtime {c.get('precision', '')}",
        "magnitude_pruning": lambda: (
            f"{c.get('target_sparsity', 0):.0%}" + (" gradual" if c.get("schedule") == "gradual" else "")
        ),
        "structured_pruning": lambda: " ".join(
            f"{name} -{c[key]:.0%}"
            for name, key in (("heads", "heads_removed"), ("ffn", "neurons_removed"))
            if c.get(key)
        ),
        "distillation": lambda: (
            f"-> {c.get('student', '?')} (mix {c.get('mix', '?'):g}, T {c.get('temperature', '?'):g})"
        ),
    }.get(c.get("method", ""), lambda: "")()
    return f"{c.get('method', '?')} {detail}".strip()


def frontier(records: list[ResultRecord], x_key: str, x_label: str, out: Path, scale: float = 1.0) -> Path | None:
    """Test primary metric against one cost of every compressed model, and of each uncompressed one it came from (one
    panel per task)."""
    runs = [r for r in records if is_compression(r) and primary(r)]
    if not runs:
        return None
    colours = pal.Palette.of(records)
    tasks = sorted({(r.task, r.dataset) for r in runs})
    fig, axes = plt.subplots(1, len(tasks), figsize=(9 * len(tasks), 6), squeeze=False)  # wide: one label a point
    for ax, (task, dataset) in zip(axes[0], tasks):
        mine = [r for r in runs if (r.task, r.dataset) == (task, dataset)]
        references: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        for r in mine:
            c = r.compression
            ax.scatter(c[x_key] * scale, primary(r)[1], marker="o", color=colours.colour(r))
            ax.annotate(
                f"{r.model} {model_size(r)}: {method_label(r)}",
                (c[x_key] * scale, primary(r)[1]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
            metric = primary(r)[0]
            references[(f"{r.model} {model_size(r)}", c["checkpoint"])].append(
                (c[f"reference_{x_key}"] * scale, c["reference_metrics"].get(metric))
            )
        for (model, _), points in references.items():
            x, y = (
                statistics.median(p[0] for p in points),
                points[0][1],
            )  # one star per set of weights: the median of its jobs' timings
            ax.scatter(x, y, marker="*", s=140, color="k")
            ax.annotate(f"{model} (uncompressed)", (x, y), fontsize=7, xytext=(3, -9), textcoords="offset points")
        log_axis(ax.xaxis)
        linear_axis(ax.yaxis)
        ax.set_xlabel(x_label)
        ax.set_ylabel(f"test {primary(mine[0])[0]}")
        ax.set_title(f"{task}: {dataset}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"What does each compression cost in accuracy, against {x_label.split(' (')[0]}?", fontsize=10)
    fig.text(
        0.01,
        0.0,
        "stars: the uncompressed weights (median over the jobs that timed them beside a compressed model, "
        "interleaved); a point's colour is its model's\npoints of different jobs were timed at different moments",
        fontsize=7,
        va="top",
    )
    return save(fig, out)


def accuracy_vs_latency(records: list[ResultRecord], out: Path) -> Path | None:
    return frontier(records, "latency_ms", "latency at batch 1 (ms, median)", out)


def accuracy_vs_size(records: list[ResultRecord], out: Path) -> Path | None:
    return frontier(records, "bytes", "artefact size (MB)", out, scale=1e-6)


FIGURES: dict[str, Callable[[list[ResultRecord], Path], Path | None]] = {
    "domains": domain_bars,
    "accuracy_vs_length": accuracy_vs_length,
    "learning_curves": learning_curves,
}
"""The results' figures (the headline's and the per-task tables'), in the page's order; the sections draw their own."""
