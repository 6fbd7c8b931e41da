"""Associative recall against model width (Zoology's figure), drawn from ``task=mqar`` training runs.

- ``mqar.md`` / ``mqar.csv``: one row a model and setting (length, pairs): the test accuracy over the queries at
  each width, chance beside it; a run that did not finish shows its status in its cell.
- ``mqar_vs_width.png``: one panel a setting, accuracy against width, one line a model (the mean over seeds).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from suite.report.axes import linear_axis, measured_axis
from suite.report.drawing import draw_series, model_size, plt, save, series_key, series_of, style
from suite.report.palette import Palette
from suite.report.plots import model_order
from suite.report.section import Section, register
from suite.runtime.record import ResultRecord

Setting = tuple[int, int]  # (length, pairs)


def is_mqar(r: ResultRecord) -> bool:
    """A training run of the MQAR task, whatever its status."""
    return r.task == "mqar" and r.job == "train"


def setting(r: ResultRecord) -> Setting:
    """(L, D): the run's length and its number of key-value pairs."""
    return r.seq_len or 0, int((r.config.get("task") or {}).get("n_pairs", 0))


def width(r: ResultRecord) -> int:
    return int((r.config.get("model") or {}).get("d_model", 0))


def label(r: ResultRecord) -> str:
    """The model, with its attention kernel where it has one other than full attention."""
    return f"{r.model} ({r.attention})" if r.attention and r.attention != "full" else r.model


def chance(r: ResultRecord) -> float:
    """A guess among the values: 1 / (vocab_size - vocab_size // 2) (``tasks.mqar``: keys and values half each)."""
    vocab = int((r.config.get("task") or {}).get("vocab_size", 256))
    return 1 / (vocab - vocab // 2)


def grouped(records: list[ResultRecord]) -> dict[Setting, dict[str, dict[int, list[ResultRecord]]]]:
    """setting -> model label -> width -> its runs (seeds)."""
    out: dict[Setting, dict[str, dict[int, list[ResultRecord]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for r in records:
        if is_mqar(r):
            out[setting(r)][label(r)][width(r)].append(r)
    return out


def accuracies(runs: list[ResultRecord]) -> list[float]:
    """The test accuracies of the finished runs (seeds)."""
    return [r.metrics["accuracy"] for r in runs if r.status == "ok" and "accuracy" in r.metrics]


def cell(runs: list[ResultRecord]) -> str:
    """The mean test accuracy over the finished seeds (and how many), or the statuses where none finished."""
    done = accuracies(runs)
    if not done:
        return "/".join(sorted({r.status for r in runs}))
    seeds = f" ({len(done)} seeds)" if len(done) > 1 else ""
    return f"{statistics.mean(done):.3f}{seeds}"


def mqar_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row a (setting, model): accuracy at each width, the steps it trained and chance."""
    groups = grouped(records)
    widths = sorted({width(r) for r in records if is_mqar(r)})
    order = model_order([r for r in records if is_mqar(r)])
    rows = []
    for (length, pairs), models in sorted(groups.items()):
        for model in sorted(models, key=lambda m: order(m.split(" ")[0])):
            runs = [r for by_width in models[model].values() for r in by_width]
            row = {"length": str(length), "pairs": str(pairs), "model": model}
            row |= {f"d{w}": cell(models[model][w]) if w in models[model] else "" for w in widths}
            row["steps"] = "/".join(str(s) for s in sorted({r.steps for r in runs}))
            row["chance"] = f"{chance(runs[0]):.3f}"
            rows.append(row)
    return rows


def mqar_vs_width(records: list[ResultRecord], out: Path) -> Path | None:
    """Accuracy over the test queries against model width: one panel a (length, pairs), one line a model (the mean
    over seeds, the std as error bars; ``suite.report.drawing``: the model's colour in every figure), chance dotted."""
    groups = grouped(records)
    if not groups:
        return None
    colours = Palette.of(records)
    done = [r for r in records if is_mqar(r) and accuracies([r])]
    shown = {
        key: series_of(
            [r for r in done if setting(r) == key], lambda r: r.metrics["accuracy"], width, along=(model_size,)
        )
        for key in groups
    }
    every = sorted({s.label: s for group in shown.values() for s in group}.values(), key=series_key)
    kinds = style(every, colours)  # one legend for every panel
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups) + 1.8, 3.4), sharey=True, squeeze=False)
    handles = {s.label: None for s in every}  # the legend in the series' order, chance last
    for ax, ((length, pairs), models) in zip(axes[0], sorted(groups.items())):
        for line in draw_series(ax, sorted(shown[(length, pairs)], key=series_key), colours, kinds):
            handles[line.get_label()] = line
        measured_axis(ax.xaxis, [width(r) for r in done if setting(r) == (length, pairs)])
        linear_axis(ax.yaxis)
        any_run = next(r for by_width in models.values() for runs in by_width.values() for r in runs)
        handles["chance"] = ax.axhline(chance(any_run), color="#777777", linestyle=":", linewidth=1, label="chance")
        ax.set_title(f"length {length}, {pairs} pairs", fontsize=10)
        ax.set_xlabel("model width (d_model)")
    axes[0][0].set_ylabel("test accuracy over the queries")
    axes[0][0].set_ylim(0, 1.02)
    fig.legend(
        [h for h in handles.values() if h],
        [k for k, h in handles.items() if h],
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        fontsize=8,
        frameon=False,
    )
    fig.suptitle("Which models recall associations, at which width? (multi-query associative recall)", fontsize=11)
    return save(fig, out)


register(
    Section(
        title="associative recall (mqar)",
        table="mqar",
        order=80,
        printed=False,
        rows=lambda records, outputs: mqar_rows(records),
        figures={"mqar_vs_width": mqar_vs_width},
        claims=is_mqar,  # drawn against width, not in the report's accuracy against length
        intro="Multi-query associative recall (task=mqar): test accuracy over the queries at each model width, a row "
        "a model and setting (length, pairs), chance beside it; a run that did not finish shows its status.",
    )
)
