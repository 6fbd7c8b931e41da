"""The report: ``python -m suite.report RUN_OR_SWEEP_DIR... --name NAME`` (``make report``).

Reads every ``result.json`` below the given directories and writes ``results/NAME/``, laid out
like a paper's results section: ``results.md`` opens with a headline table (one row per task
setting, each model's primary test metric side by side, the best in bold, and the speed ratio),
then one table per task with a column per metric; ``speed.md`` and ``gradient_flow.md`` for the
measurement jobs; each with a CSV of the raw figures; the PNG figures of ``suite.report.plots``; and
``index.html`` showing them all. Figures of runs cut short by their time cap are marked.
It prints the headline table. Nothing in ``results/`` is typed by hand.
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from suite.report import formatting as fmt
from suite.report.compare import cpu_kind
from suite.report.outputs import Written
from suite.report.page import render_page
from suite.report.plots import FIGURES, family, model_order, primary
from suite.report.run_settings import variant_labels
from suite.report.section import discover
from suite.report.significance import Outputs, run_outputs, seed_interval
from suite.report.split_results import write_sections
from suite.report.tables import drop_empty_columns, markdown, write_table
from suite.report.verdict import OutputsOf, judged
from suite.runtime.bounds import metric_bounds
from suite.runtime.paths import PROJECT_ROOT
from suite.runtime.record import ResultRecord, find_results, stopped_by, trainer_name
from suite.runtime.verdicts import DIVERGED, NO_CURVE, NOT_TRAINED, PLATEAUED, STILL_LEARNING, TOO_FEW


def no_outputs(record: ResultRecord) -> Outputs | None:
    return None


SPEED_KEYS = ("train_tokens_per_s", "infer_tokens_per_s")
CUT = "†"  # marks a figure from a run that its time cap cut short
CUT_NOTE = (
    f"{CUT} cut short by its time cap (fewer steps than planned): this figure depends on how fast the machine was."
)


def scored_on_test(r: ResultRecord) -> bool:
    """A record with test metrics (an evaluation of validation alone has none)."""
    return any(not k.startswith("val_") for k in r.metrics)


def test_metric_names(runs: list[ResultRecord]) -> list[str]:
    return sorted({k for r in runs for k in r.metrics if not k.startswith("val_") and k != "loss"})


@dataclass
class Experiment:
    """Runs of one experiment (task, dataset, model, length, trainer profile, variant), pooled over seeds: one run a
    seed; ``repeated``, the seeds that had more than one run (how many), each counted once."""

    task: str
    dataset: str
    model: str
    seq_len: int | None
    trainer: str
    variant: str
    runs: list[ResultRecord]
    repeated: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> list[ResultRecord]:
        return [r for r in self.runs if r.status == "ok"]

    def values(self, metric: str) -> list[float]:
        return [r.metrics[metric] for r in self.ok if metric in r.metrics]

    def speeds(self, key: str) -> list[float]:
        return [r.speed[key] for r in self.ok if key in r.speed]

    @property
    def shortened(self) -> bool:
        return any(r.shortened for r in self.ok)

    @property
    def precision(self) -> str:
        return (
            "/".join(sorted({r.precision for r in self.ok if r.precision})) or "fp32"
        )  # records before the setting ran fp32

    @property
    def failures(self) -> str:
        return " | ".join(f"{r.status}: {r.error}" for r in self.runs if r.status != "ok")[:200]

    @property
    def verdicts(self) -> list[str]:
        """Each finished run's convergence verdict (``suite.training.convergence``): 'no curve' for a trained record
        without one, 'not trained' for a run that took no steps (Lead-k; weights scored again by job=evaluate: their
        curve is in their training run's record)."""
        return [r.convergence.get("verdict", NO_CURVE if r.steps else NOT_TRAINED) for r in self.ok]

    @property
    def worst(self) -> str:
        """The verdict that most undermines the figure among the runs' ('' without finished runs)."""
        return min(self.verdicts, key=WORST_FIRST.index, default="")

    @property
    def converged(self) -> str:
        """The runs' shared verdict, else the worst with how many seeds had it ('still learning (2 of 3 seeds)')."""
        verdicts, worst = self.verdicts, self.worst
        share = verdicts.count(worst)
        return worst + (f" ({share} of {len(verdicts)} seeds)" if share < len(verdicts) else "")


WORST_FIRST = (DIVERGED, STILL_LEARNING, TOO_FEW, NO_CURVE, NOT_TRAINED, PLATEAUED)
"""Verdicts from the one that most undermines a figure to the one that least does."""


def data_of(r: ResultRecord) -> tuple[str, str]:
    """What a run read: its data's folder and fingerprint (``suite.data.datadir.identity``; empty: generated data, or a
    record from before the field)."""
    return r.data.get("dir", ""), r.data.get("fingerprint", "")


def data_labels(records: list[ResultRecord]) -> dict[tuple[str, str, tuple[str, str]], str]:
    """(task, dataset, data) -> how a row names its data: '' where every run of the task and dataset read the same,
    else 'data <folder>' (with 'files <fingerprint>' where one folder held different files)."""
    seen: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for r in records:
        seen[(r.task, r.dataset)].add(data_of(r))
    labels = {}
    for (task, dataset), datas in seen.items():
        for folder, fingerprint in datas:
            alike = sum(1 for other, _ in datas if other == folder) > 1
            name = f"data {folder or 'not recorded'}" + (f" (files {fingerprint or 'not recorded'})" if alike else "")
            labels[(task, dataset, (folder, fingerprint))] = name if len(datas) > 1 else ""
    return labels


def counted_once(runs: list[ResultRecord]) -> tuple[list[ResultRecord], dict[int, int]]:
    """One run a seed (the first that finished ok, else the first), in the runs' order, and the seeds that had more
    (seed -> runs): a run directory copied, or a seed run again, is counted once and said."""
    by_seed: dict[int, list[ResultRecord]] = defaultdict(list)
    for r in runs:
        by_seed[r.seed].append(r)
    kept = {id(next((r for r in same if r.status == "ok"), same[0])) for same in by_seed.values()}
    return [r for r in runs if id(r) in kept], {seed: len(same) for seed, same in by_seed.items() if len(same) > 1}


def experiments(records: list[ResultRecord]) -> list[Experiment]:
    """One experiment per (task, dataset, data read, model, seq_len, trainer profile, variant), sorted.

    The variant names the settings that set runs of one model and profile apart
    (``suite.report.run_settings``): runs that differ in more than their seed are never pooled. Runs of
    several attention variants are named by the variant ('local attention'), then by the
    settings that differ among that variant's runs. Runs of one task and dataset that read different files (another
    data directory, or the files changed: ``ResultRecord.data``) are never pooled either: the variant names the
    folder. A seed that ran more than once in an experiment counts once and is flagged (``Experiment.repeated``).
    """
    data = data_labels(records)
    base: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for r in records:
        base[(r.task, r.dataset, r.model, r.seq_len, trainer_name(r), data[(r.task, r.dataset, data_of(r))])].append(r)
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for (*key, read), runs in base.items():
        kinds = sorted({r.attention or "" for r in runs})
        for kind in (
            kinds
        ):  # runs of several attention variants are named by the variant, not by every setting its config holds
            members = [r for r in runs if (r.attention or "") == kind]
            # named where runs of several cores meet, and always for a core other than full attention
            prefix = f"{kind} attention" if kind and (len(kinds) > 1 or kind != "full") else ""
            for r, label in zip(members, variant_labels([r.config for r in members])):
                groups[(*key, ", ".join(part for part in (read, prefix, label) if part))].append(r)
    order = model_order(records)
    ordered = sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3] or 0, kv[0][4], kv[0][5], order(kv[0][2]))
    )
    return [Experiment(*key, *counted_once(runs)) for key, runs in ordered]


def detail_rows(exps: list[Experiment]) -> list[dict[str, str]]:
    """One row per experiment, one column per test metric (mean ± std over seeds), numbers for people."""
    metrics = test_metric_names([r for e in exps for r in e.ok])
    rows = []
    for e in exps:
        cut = f" {CUT}" if e.shortened else ""
        row = {
            "task": e.task,
            "dataset": e.dataset,
            "model": e.model,
            "length": str(e.seq_len or ""),
            "trainer": e.trainer,
            "variant": e.variant,
            "runs": f"{len(e.ok)}/{len(e.runs)} ok" + repeated_text(e),
            "params": fmt.rate(e.ok[0].params) if e.ok and e.ok[0].params else "",
        }
        row |= {m: (fmt.mean_std(e.values(m)) + cut if e.values(m) else "") for m in metrics}
        row[SEEDS_COLUMN] = seeds_ci(e)
        row["train tok/s"] = fmt.mean_std(e.speeds("train_tokens_per_s"), fmt.rate)
        row["infer tok/s"] = fmt.mean_std(e.speeds("infer_tokens_per_s"), fmt.rate)
        row["steps"] = fmt.mean_std([float(r.steps) for r in e.ok if r.steps], fmt.rate)
        row["converged"] = e.converged
        row["stopped by"] = stops(e)
        row["train time"] = fmt.mean_std([r.train_seconds for r in e.ok if r.train_seconds], fmt.seconds)
        row["precision"] = e.precision if e.ok else ""
        row["failures"] = e.failures
        rows.append(row)
    return drop_empty_columns(rows, keep=("task", "model", "runs"))


SEEDS_COLUMN = "over seeds"


def seeds_ci(e: Experiment) -> str:
    """'accuracy 95 % CI [0.794, 0.818]' (three seeds or more: the interval of the mean, within the metric's bounds),
    'accuracy range [0.610, 0.740] (2 seeds)' (two: their range), '' (one): the primary metric over the seeds."""
    p = primary(e.ok[0]) if e.ok else None
    spread = seed_interval(e.values(p[0]), metric_bounds(p[0])) if p else None
    return f"{p[0]} {spread.text(fmt.metric)}" if spread else ""


def repeated_text(e: Experiment) -> str:
    """'; seed 0 ran 2 times, counted once' for the seeds that ran more than once ('' where none did)."""
    said = ", ".join(f"seed {seed} ran {n} times" for seed, n in sorted(e.repeated.items()))
    return f"; {said}, counted once" if said else ""


def stops(e: Experiment) -> str:
    """How the runs that ended before their planned steps stopped: 'time cap 900 s: 2 of 3 runs, 310-350 steps'
    (``suite.runtime.record.stopped_by``); '' where every run took its planned steps."""
    ended: dict[str, list[int]] = defaultdict(list)
    for r in e.ok:
        if why := stopped_by(r):
            ended[why].append(r.steps or 0)
    return "; ".join(
        f"{why}: {len(steps)} of {len(e.ok)} runs, "
        + (f"{min(steps)}-{max(steps)}" if min(steps) < max(steps) else f"{steps[0]}")
        + " steps"
        for why, steps in ended.items()
    )


def detail_tables(exps: list[Experiment]) -> dict[str, list[dict[str, str]]]:
    """One table per task: each has its own metrics."""
    by_task: dict[str, list[Experiment]] = defaultdict(list)
    for e in exps:
        by_task[e.task].append(e)
    return {task: detail_rows(group) for task, group in sorted(by_task.items())}


def headline_rows(exps: list[Experiment], outputs: OutputsOf = no_outputs) -> list[dict[str, str]]:
    """One row per task setting, each model's primary test metric side by side, and the speed ratio; the best in bold
    only where it beats the runner-up by more than chance (a paired test on the same test examples, pooled over the
    seeds both ran: ``suite.report.significance``), the difference and its 95 % interval beside.

    The speed ratio divides the attention model's training tokens/s by the recurrent model's
    (measured in the same runs as the metrics, at the same settings).
    """
    rows_of: dict[tuple, dict[str, Experiment]] = defaultdict(dict)
    for e in exps:
        if e.ok and (p := primary(e.ok[0])):
            rows_of[(e.task, e.dataset, e.seq_len, e.trainer, e.variant, p[0])][e.model] = e
    models = sorted({m for cols in rows_of.values() for m in cols}, key=model_order([r for e in exps for r in e.runs]))
    rows = []
    for (task, dataset, seq_len, trainer, variant, metric), cols in rows_of.items():
        means = {m: statistics.mean(e.values(metric)) for m, e in cols.items() if e.values(metric)}
        winner, verdict = judged({m: e.ok for m, e in cols.items()}, means, metric, outputs)
        row = {
            "task": task,
            "dataset": dataset,
            "length": str(seq_len or ""),
            "trainer": trainer + (f", {variant}" if variant else ""),
            "metric": metric,
        }
        learning = [m for m in models if m in means and cols[m].worst == STILL_LEARNING]
        for m in models:
            cell = fmt.mean_std(cols[m].values(metric)) if m in means else ""
            if cell and m == winner and not learning:  # a model still learning could still overtake, or be overtaken
                cell = f"**{cell}**"
            if cell and cols[m].worst in (STILL_LEARNING, TOO_FEW):  # 'no curve', 'not trained': the column says
                cell += f" ({cols[m].converged})"
            row[m] = cell + (f" {CUT}" if m in cols and cols[m].shortened else "")
        row["difference (95 % CI)"] = verdict
        row["converged"] = f"no: {', '.join(learning)} still learning (budget)" if learning else converged_text(cols)
        row["precision"] = precisions(cols, models)
        row["speed (train tok/s)"] = speed_ratio(cols)
        rows.append(row)
    return drop_empty_columns(rows, keep=("task", "metric"))


def converged_text(cols: dict[str, Experiment]) -> str:
    """'plateaued' where every model's runs plateaued; else what is known (a cell says which model)."""
    verdicts = {e.worst for e in cols.values() if e.ok}
    if len(verdicts) == 1:
        return next(iter(verdicts))
    return "not known: " + ", ".join(sorted(verdicts - {PLATEAUED}))


def precisions(cols: dict[str, Experiment], models: list[str]) -> str:
    """'fp32' where every model of the row ran in it, else each model's ('transformer bf16, lstm fp32'): what
    ``precision=auto`` gave each family."""
    each = {m: cols[m].precision for m in models if m in cols and cols[m].ok}
    if len(set(each.values())) <= 1:
        return next(iter(each.values()), "")
    return ", ".join(f"{m} {p}" for m, p in each.items())


def speed_ratio(cols: dict[str, Experiment]) -> str:
    """'0.31x transformer/lstm': training tokens/s of the attention model over the recurrent one's.

    The first of each family (``suite.report.plots.family``: what the model's config builds) by name.
    """
    timed = sorted(m for m in cols if cols[m].speeds("train_tokens_per_s"))
    attention = next((m for m in timed if family(cols[m].runs[0]) == "attention"), None)
    recurrent = next((m for m in timed if family(cols[m].runs[0]) == "backbone"), None)
    if attention is None or recurrent is None:
        return ""
    ratio = statistics.mean(cols[attention].speeds("train_tokens_per_s")) / statistics.mean(
        cols[recurrent].speeds("train_tokens_per_s")
    )
    return f"{ratio:.2g}x {attention}/{recurrent}"


def csv_rows(exps: list[Experiment]) -> list[dict[str, object]]:
    """The raw figures (means over seeds, full precision) for machines: one row per experiment."""
    metrics = test_metric_names([r for e in exps for r in e.ok])
    rows = []
    for e in exps:
        mean = lambda xs: statistics.mean(xs) if xs else ""  # noqa: E731
        row: dict[str, object] = {
            "task": e.task,
            "dataset": e.dataset,
            "model": e.model,
            "seq_len": e.seq_len or "",
            "trainer": e.trainer,
            "variant": e.variant,
            "runs": len(e.runs),
            "ok": len(e.ok),
            "repeated_seeds": " ".join(f"{seed}x{n}" for seed, n in sorted(e.repeated.items())),
            "params": e.ok[0].params if e.ok else "",
            "precision": e.precision,
            "shortened": e.shortened,
        }
        row |= {m: mean(e.values(m)) for m in metrics}
        row |= {m + "_std": (statistics.stdev(e.values(m)) if len(e.values(m)) > 1 else "") for m in metrics}
        row |= {k: mean(e.speeds(k)) for k in SPEED_KEYS}
        row["train_seconds"] = mean([r.train_seconds for r in e.ok if r.train_seconds is not None])
        row["converged"] = e.converged
        row["failures"] = e.failures
        rows.append(row)
    return rows


GLANCE = (
    "Each model's primary test metric (mean ± std over seeds) and the attention model's training "
    "throughput over the recurrent one's in the same runs. The best is in bold only where it beats the "
    "runner-up by more than chance: the difference of the two on the same test examples (pooled over the "
    "seeds both ran) with its 95 % paired bootstrap interval and a paired permutation test's p-value "
    "(suite.report.significance); '≈' where the interval holds zero or p is 0.05 or more. Never in bold where a "
    "model of the row is still learning: its validation curve was still rising at the end of the budget "
    "(suite.training.convergence; a cell names any verdict but plateaued). Untuned: each model at its configured "
    "settings, one budget, in the precision the row says."
)
"""The paragraph above the headline table."""


def results_markdown(headline: list[dict[str, str]], details: dict[str, list[dict[str, str]]]) -> str:
    """The headline table, then one detail table per task, with the note on cut runs where one is."""
    parts = [f"## Results at a glance\n\n{GLANCE}\n\n" + markdown(headline)]
    parts += [f"## {task}\n\n" + markdown(rows) for task, rows in details.items()]
    text = "\n".join(parts)
    return text + (f"\n{CUT_NOTE}\n" if CUT in text else "")


def build_report(
    records: list[ResultRecord], out_dir: Path, name: str, outputs: OutputsOf = no_outputs
) -> dict[str, list[dict[str, str]]]:
    """Write every table, figure and the index page for ``records`` into ``out_dir``; returns the sections shown.

    The headline and the per-task tables first (``results.md``), then every registered section
    (``suite.report.section``: the suite's own and each task's) that has rows, in its order.
    """
    with Written(out_dir):  # a previous build's files that this one does not write again are removed
        return write_report(records, out_dir, name, outputs)


def write_report(
    records: list[ResultRecord], out_dir: Path, name: str, outputs: OutputsOf = no_outputs
) -> dict[str, list[dict[str, str]]]:
    """``build_report``'s work: every file of the report."""
    registered = discover()
    # Failed runs too (their rows say so), and weights scored again on test by job=evaluate.
    trained = [r for r in records if r.job == "train" or (r.job == "evaluate" and scored_on_test(r))]
    exps = experiments(trained)
    headline, details = headline_rows(exps, outputs), detail_tables(exps)
    if exps:
        write_table(csv_rows(exps), out_dir, "results", md=results_markdown(headline, details))
        write_sections(out_dir)
    shown = {section.title: section.rows(records, outputs) for section in registered}
    for section in registered:
        if shown[section.title]:
            write_table(shown[section.title], out_dir, section.table)
    drawers = {**FIGURES, **{fig: draw for section in registered for fig, draw in section.figures.items()}}
    figures = [path for fig, draw in drawers.items() if (path := draw(records, out_dir / f"{fig}.png")) is not None]
    devices = sorted(
        {f"{r.device} ({cpu_kind(r)})" if r.device.startswith("cpu") else r.device for r in records if r.device}
    )
    flushed = sorted({str(r.numerics.get("flush_denormals")) for r in records if r.numerics})
    precisions = sorted({r.precision for r in records if r.precision})
    commits = sorted({r.git_commit[:7] for r in records if r.git_commit})
    machine = (
        f"measured on: {', '.join(devices)}; {platform.platform()}; {len(records)} runs; "
        f"denormals flushed: {', '.join(flushed) or 'not recorded'}; precision: "
        f"{', '.join(precisions) or 'fp32 (not recorded)'}; commit: {', '.join(commits) or 'not recorded'}"
    )
    (out_dir / "machine.txt").write_text(machine + "\n")
    sections = {"results at a glance": headline, **details, **shown}
    intros = {"results at a glance": GLANCE} | {s.title: s.intro for s in registered}
    homes = {fig: section.title for section in registered for fig in section.figures}  # the rest: the headline's
    (out_dir / "index.html").write_text(render_page(name, sections, figures, machine, intros, homes, {CUT: CUT_NOTE}))
    return sections


def log_to_wandb(out_dir: Path, name: str, tables: dict[str, list[dict[str, str]]]) -> None:
    """Log the report's tables and figures to W&B (offline unless WANDB_MODE says otherwise), grouped by report name."""
    import os

    import wandb

    run = wandb.init(
        project="transformer-bench",
        group=name,
        job_type="report",
        name=f"report-{name}",
        dir=str(out_dir.parent.parent / "runs"),
        mode=os.environ.get("WANDB_MODE", "offline"),
        settings=wandb.Settings(console="off", x_disable_stats=True),
    )
    for title, rows in tables.items():
        if rows:
            run.log({f"table/{title}": wandb.Table(columns=list(rows[0]), data=[list(r.values()) for r in rows])})
    for png in sorted(out_dir.glob("*.png")):
        run.log({f"figure/{png.stem}": wandb.Image(str(png))})
    run.finish()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("--name", default="latest", help="writes results/NAME/")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    parser.add_argument("--wandb", action="store_true", help="also log the tables and figures to W&B")
    args = parser.parse_args(argv)
    found = find_results(*args.runs)
    if not found:
        print(f"no result.json under {', '.join(map(str, args.runs))}")
        return 1
    out_dir = args.out / args.name
    directory = {id(r): path for path, r in found}
    read = functools.cache(run_outputs)  # the headline, the LRA table and its verdicts all read a run's outputs
    tables = build_report([r for _, r in found], out_dir, args.name, lambda r: read(directory[id(r)]))
    print(markdown(tables["results at a glance"]))
    for section in discover():
        if section.printed and tables[section.title]:
            print(markdown(tables[section.title]))
    if args.wandb:
        log_to_wandb(out_dir, args.name, tables)
    print(f"wrote {out_dir}/ (index.html, tables, figures) from {len(found)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
