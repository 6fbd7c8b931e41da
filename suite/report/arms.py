"""Two arms of each model on each task setting (default and tuned, from scratch and pretrained), compared paired.

An ``Arms`` holds one model's runs on one task setting in two kinds, each run a seed. Two tables:

- the headline: each model in each arm (mean ± std over seeds), and the model against model difference in each arm,
  paired by seed and example (``suite.report.significance``); a winner in bold only where the difference is
  significant (``Difference.significant``);
- the gain: the second arm minus the first for every model, paired the same way.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from suite.report import formatting as fmt
from suite.report.build import Experiment
from suite.report.significance import Outputs, pooled_difference, run_outputs
from suite.report.verdict import OutputsOf, judged
from suite.runtime.record import ResultRecord


@dataclass
class Arms:
    """One model's runs on one task setting, by arm (e.g. 'default', 'tuned'), with their run directories."""

    label: str
    finals: dict[str, list[ResultRecord]] = field(default_factory=dict)
    paths: dict[int, Path] = field(default_factory=dict)  # id(record) -> its run directory
    summary: dict[str, Any] = field(default_factory=dict)  # a study's tune.json, where the arms come from one

    def add(self, kind: str, record: ResultRecord, path: Path) -> None:
        self.finals.setdefault(kind, []).append(record)
        self.paths[id(record)] = path

    @property
    def first(self) -> ResultRecord | None:
        return next((r for runs in self.finals.values() for r in runs if r.status == "ok"), None)

    @property
    def setting(self) -> tuple[str, str, int | None]:
        r = self.first
        return (r.task, r.dataset, r.seq_len) if r else ("", "", None)

    @property
    def model(self) -> str:
        return self.first.model if self.first else self.label

    @property
    def metric(self) -> str | None:
        return self.first.primary_metric if self.first else None

    def experiment(self, kind: str) -> Experiment:
        task, dataset, seq_len = self.setting
        return Experiment(task, dataset, self.model, seq_len, kind, "", self.finals.get(kind, []))


def outputs_of(arms: list[Arms]) -> OutputsOf:
    paths = {k: v for a in arms for k, v in a.paths.items()}
    return lambda record: run_outputs(paths[id(record)]) if id(record) in paths else None


def cell(e: Experiment, metric: str, bold: bool) -> str:
    values = e.values(metric)
    text = fmt.mean_std(values) if values else "—"
    return f"**{text}**" if bold and values else text


def headline_rows(arms: list[Arms], kinds: tuple[str, str], outputs: OutputsOf) -> list[dict[str, str]]:
    """One row a task setting: each model in each arm, and the difference between the models in each arm."""
    by_setting: dict[tuple, dict[str, Arms]] = {}
    for a in arms:
        if a.first is not None:
            by_setting.setdefault(a.setting, {})[a.model] = a
    models = sorted({m for cols in by_setting.values() for m in cols}, key=lambda m: (m != "transformer", m))
    rows = []
    for (task, dataset, seq_len), cols in by_setting.items():
        metric = next(iter(cols.values())).metric
        row = {"task": task, "dataset": dataset, "length": str(seq_len or ""), "metric": metric}
        verdicts, winners = {}, {}
        for kind in kinds:
            exps = {m: a.experiment(kind) for m, a in cols.items()}
            means = {m: statistics.mean(e.values(metric)) for m, e in exps.items() if e.values(metric)}
            winners[kind], verdicts[kind] = judged({m: e.ok for m, e in exps.items()}, means, metric, outputs)
        for m in models:
            for kind in kinds:
                row[f"{m} {kind}"] = cell(cols[m].experiment(kind), metric, winners[kind] == m) if m in cols else ""
        row |= {f"{kind}: difference (95 % CI)": verdicts[kind] for kind in kinds}
        rows.append(row)
    return rows


def paired_by_seed(a: Arms, kinds: tuple[str, str], outputs: OutputsOf) -> list[tuple[Outputs, Outputs]]:
    """(second arm's outputs, first arm's) for every seed both ran; [] when a run kept none."""
    first, second = ({r.seed: r for r in a.finals.get(k, []) if r.status == "ok"} for k in kinds)
    pairs = [(outputs(second[s]), outputs(first[s])) for s in sorted(first.keys() & second.keys())]
    return pairs if all(x is not None and y is not None for x, y in pairs) else []


def setting_cells(a: Arms) -> dict[str, str]:
    """The row's first cells: the task setting and the model."""
    task, dataset, seq_len = a.setting
    return {"task": task, "dataset": dataset, "length": str(seq_len or ""), "model": a.model}


def report_main(
    argv: list[str] | None,
    description: str,
    name: str,
    find: Callable[..., list[Arms]],
    build: Callable[[list[Arms], Path], dict[str, list[dict[str, str]]]],
    missing: str,
) -> int:
    """The command of a two-arm report: ``RUNS... [--name NAME] [--out DIR]``; ``missing`` says what to run when
    ``find`` finds nothing."""
    import argparse

    from suite.report.tables import markdown
    from suite.runtime.paths import PROJECT_ROOT

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("runs", nargs="+", type=Path, help="directories of the runs")
    parser.add_argument("--name", default=name, help="writes results/NAME/")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    args = parser.parse_args(argv)
    arms = find(*args.runs)
    if not arms:
        print(f"nothing to report under {', '.join(map(str, args.runs))}: {missing}")
        return 1
    tables = build(arms, args.out / args.name)
    for title, rows in tables.items():
        print(f"## {title}\n\n{markdown(rows)}\n")
    print(f"wrote {args.out / args.name}/")
    return 0


def gain_rows(arms: list[Arms], kinds: tuple[str, str], outputs: OutputsOf) -> list[dict[str, str]]:
    """The second arm minus the first for every model and setting, paired by seed and example."""
    rows = []
    for a in arms:
        metric = a.metric
        if metric is None:
            continue
        pairs = paired_by_seed(a, kinds, outputs)
        verdict = "not tested: no per-example test outputs"
        if pairs:
            diff = pooled_difference([x for x, _ in pairs], [y for _, y in pairs], metric, (kinds[1], kinds[0]))
            verdict = (f"**{diff}**" if diff.significant else f"≈ {diff}") + f", {len(pairs)} seeds"
        rows.append(
            setting_cells(a)
            | {
                "metric": metric,
                kinds[0]: cell(a.experiment(kinds[0]), metric, False),
                kinds[1]: cell(a.experiment(kinds[1]), metric, False),
                f"{kinds[1]} − {kinds[0]} (95 % CI)": verdict,
            }
        )
    return rows
