"""The language-model figures and table, drawn from run directories (nothing typed by hand).

    python -m tasks.language_model_report multirun/language_model multirun/context_use multirun/generation_cost --out
    results/lm

- ``lm.md`` / ``lm.csv``: every language-model training run (one row per run): parameters,
  steps, training time, test perplexity and bits per byte, the unigram baseline; its bits per byte
  against the best model's of the same setting and seed, paired by test document; and, where
  measured, the context beyond which it stops improving.
- ``context_use.png``: test perplexity against the context c, one line per model (``job=context_use``).
- ``generation_cost.png``: time per generated token and decoding-state memory against the
  length of the text, one line per model and attention kernel (``job=generation_cost``).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from suite.report import formatting as fmt  # noqa: E402
from suite.report.axes import linear_axis, log_axis, measured_axis  # noqa: E402
from suite.report.palette import Palette, precision  # noqa: E402
from suite.report.plots import model_order, save  # noqa: E402
from suite.report.section import Section, register  # noqa: E402
from suite.report.significance import Outputs, pooled_difference, run_outputs  # noqa: E402
from suite.report.tables import write_table  # noqa: E402
from suite.runtime.record import ResultRecord, find_results, trainer_name  # noqa: E402

TASK = "language_model"


def label(r: ResultRecord) -> str:
    """The model, with its attention kernel when it has one."""
    return f"{r.model} ({r.attention})" if r.attention else r.model


def lm_runs(records: list[ResultRecord]) -> list[ResultRecord]:
    """Finished language-model runs that scored test (training, or saved weights measured again)."""
    return [r for r in records if r.task == TASK and r.status == "ok" and "perplexity" in r.metrics]


def against_best(runs: list[ResultRecord], outputs: Callable[[ResultRecord], Outputs | None]) -> dict[int, str]:
    """id(run) -> its test bits per byte minus the best run's of its group (same dataset, context, trainer and seed),
    paired by test document (``suite.report.significance``); '≈' where it is not significant."""
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for r in runs:
        groups[(r.dataset, r.seq_len, trainer_name(r), r.seed)].append(r)
    cells: dict[int, str] = {}
    for group in (g for g in groups.values() if len(g) > 1):
        best = min(group, key=lambda r: r.metrics["bits_per_byte"])
        cells[id(best)] = "best"
        for r in (r for r in group if r is not best):
            kept = outputs(r), outputs(best)
            if None in kept:
                cells[id(r)] = "not tested: no per-document test outputs"
                continue
            try:
                diff = pooled_difference([kept[0]], [kept[1]], "bits_per_byte", (label(r), label(best)))
            except ValueError as err:  # NotPaired: other documents or targets
                cells[id(r)] = f"not tested: {err}"
                continue
            cells[id(r)] = f"{'' if diff.significant else '≈ '}{diff} against {label(best)}"
    return cells


def lm_rows(
    records: list[ResultRecord], outputs: Callable[[ResultRecord], Outputs | None] = lambda record: None
) -> list[dict[str, str]]:
    """One row per language-model run; where a group has several models, each one's bits per byte against the best's,
    with its paired interval (``against_best``)."""
    rows = []
    key = model_order(records)
    runs = lm_runs(records)
    compared = against_best(runs, outputs)
    for r in sorted(runs, key=lambda r: (r.dataset, r.seq_len or 0, key(r.model))):
        m = r.metrics
        rows.append(
            {
                "dataset": r.dataset,
                "model": label(r),
                "context": str(r.seq_len),
                "trainer": trainer_name(r),
                "params": fmt.rate(r.params or 0),
                "steps": str(r.steps),
                "train time": f"{r.train_seconds or 0:.0f} s",
                "test perplexity": fmt.metric(m["perplexity"]),
                "test bits/byte": fmt.metric(m["bits_per_byte"]),
                "bits/byte − best's (95 % CI)": compared.get(id(r), ""),
                "val perplexity": fmt.metric(m.get("val_perplexity", float("nan"))),
                "unigram perplexity": fmt.metric(m["unigram_perplexity"]),
                "stops improving at": f"{m['context_saturation']:.0f}" if "context_saturation" in m else "",
                "train tok/s": fmt.rate(r.speed.get("train_tokens_per_s", 0)),
            }
        )
    return rows


def context_use(records: list[ResultRecord], out: Path) -> Path | None:
    runs = [r for r in records if r.status == "ok" and r.job == "context_use"]
    if not runs:
        return None
    colours = Palette.of(records)
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for r in sorted(runs, key=lambda r: model_order(runs)(r.model)):
        c = r.curves
        ax.plot(
            c["context"],
            c["perplexity"],
            marker="o",
            color=colours.colour(r),
            label=f"{label(r)}, {precision(r)}: flat from {r.metrics['context_saturation']:.0f}",
        )
    measured_axis(ax.xaxis, [x for r in runs for x in r.curves["context"]])
    linear_axis(ax.yaxis)
    ax.set_xlabel("context c (tokens before each target)")
    ax.set_ylabel("test perplexity")
    ax.set_title(f"How much context does each model use?\n{runs[0].dataset}: perplexity given only the last c tokens")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, out)


def generation_cost(records: list[ResultRecord], out: Path) -> Path | None:
    """Three panels, a line a model in each (at most one series a model a panel): the time of one more token from the
    model's state, the same token re-reading the whole text, and the state kept; one legend for the three."""
    runs = [r for r in records if r.status == "ok" and r.job == "generation_cost"]
    if not runs:
        return None
    colours = Palette.of(records)
    fig, (cached_ax, uncached_ax, mem_ax) = plt.subplots(1, 3, figsize=(15, 4.4), sharex=True)
    for r in sorted(runs, key=lambda r: model_order(runs)(r.model)):
        c, colour = r.curves, colours.colour(r)
        speedup = f"cache {r.speed['generate_cache_speedup']:.1f}x at {r.speed['compare_tokens']:.0f}"
        name = f"{label(r)}, {precision(r)} ({speedup})"
        cached_ax.plot(c["length"], c["step_ms"], marker="o", color=colour, label=name)
        uncached_ax.plot(c["length"], c["uncached_step_ms"], marker="o", color=colour)
        mem_ax.plot(c["length"], [b / 2**20 for b in c["state_bytes"]], marker="o", color=colour)
    for ax, title, unit in (
        (cached_ax, "one more token, from the state", "ms per generated token"),
        (uncached_ax, "one more token, re-reading the text", "ms per generated token"),
        (mem_ax, "what the model keeps to go on", "decoding state (MiB)"),
    ):
        measured_axis(ax.xaxis, [x for r in runs for x in r.curves["length"]])
        log_axis(ax.yaxis)
        ax.set_xlabel("tokens already in the text")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3)
    fig.legend(*cached_ax.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.suptitle("What does generating one more token cost, as the text grows?", fontsize=11)
    fig.tight_layout()
    return save(fig, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("--out", type=Path, default=Path("results/lm"), help="where the table and figures go")
    args = parser.parse_args(argv)
    found = find_results(*args.runs)
    records, directory = [r for _, r in found], {id(r): path for path, r in found}
    rows = lm_rows(records, lambda r: run_outputs(directory[id(r)]))
    if rows:
        write_table(rows, args.out, "lm")
    written = [
        p
        for p in (
            context_use(records, args.out / "context_use.png"),
            generation_cost(records, args.out / "generation_cost.png"),
        )
        if p
    ]
    for path in [args.out / "lm.md"] * bool(rows) + written:
        print(f"wrote {path}")
    return 0


register(
    Section(
        title="language models",
        table="lm",
        order=75,
        rows=lambda records, outputs: lm_rows(records, outputs),
        figures={"context_use": context_use, "generation_cost": generation_cost},
        intro=(
            "One row per language model scored on test: perplexity per token and bits per byte (comparable across"
            " tokenizers), the steps and training time it had, and, where its context curve was measured "
            "(job=context_use), the context beyond which its perplexity stops improving by 1 %."
        ),
    )
)


if __name__ == "__main__":
    raise SystemExit(main())
