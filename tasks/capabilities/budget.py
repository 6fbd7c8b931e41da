"""The capability map's time budget: what its finished runs took, and what the rest of its plan would take at that rate.

    python -m tasks.capabilities.budget results/capabilities_runs            # a table a model and size, and the total
    python -m tasks.capabilities.budget runs/capabilities --jobs 2 --out budget.md

Per model and size: the plan's runs (``conf/experiment/capabilities.yaml``: every task at every rate at the first seed,
the other seeds at the chosen rate, and the knob stage's seeds at each further value; a variant's own tasks alone), the
finished ones among them, the wall seconds they took (each run's own ``wall_seconds``: its process, not the
launcher's), and the runs to go with their estimated hours at ``jobs`` runs at a time. A task's runs to go are
estimated at the mean of the same model's finished runs of that task at that size: tasks differ several times over in
what a run costs (their lengths, and whether a model solves them early or runs to the step cap), so a task the model
has not run yet is counted as to go and left unestimated, never guessed from another task's or another model's rate.
Failed runs count as to go (the map runs them again).

With ``--probe`` (the step probe's records: ``tasks.capabilities.probe``), a task a model has not run at one size but
has at another (the map's 400,000 before its first run there) is estimated from the other: the same model's runs of
that task there, their training (``train_seconds``: the steps, the clock paused while validating) times the ratio of
the model's training steps at the two sizes as the probe timed them, the rest of their wall time (start-up, the
validations and the test, a few seconds a run) as it was. That assumes as many steps at both sizes, which the runs
will show, and leaves the evaluations' growth with the model out (low by that share). The table keeps those hours
apart (``of them from the probe``).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from suite.report.tables import markdown
from suite.runtime.record import ResultRecord, find_results
from tasks.capabilities.cells import is_map_run, label, size
from tasks.capabilities.map import MapConfig, read_map
from tasks.capabilities.probe import ratio, steps


def planned_runs(m: MapConfig, task: str) -> int:
    """The runs of one model at one size on ``task`` in the map's plan: the grid, the other seeds, the knob stage."""
    knobs = sum(len(values) * len(m.seeds) for values in (m.knobs or {}).get(task, {}).values())
    return len(m.lrs) + len(m.seeds) - 1 + knobs


@dataclass
class Line:
    """One model at one size: its finished runs' wall seconds a task, and the plan's runs a task."""

    model: str
    size: int
    seconds: dict[str, list[float]]
    planned: dict[str, int]
    probed: dict[str, float] = dataclasses.field(default_factory=dict)  # task -> seconds a run, from the step probe

    @property
    def finished(self) -> list[float]:
        return [s for walls in self.seconds.values() for s in walls]

    def left(self, task: str) -> int:
        return max(0, self.planned.get(task, 0) - len(self.seconds.get(task, [])))

    @property
    def to_go(self) -> int:
        return sum(self.left(task) for task in self.planned)

    @property
    def unestimated(self) -> int:
        """Runs to go of the tasks this model has no finished run of at this size, nor a probe's estimate."""
        return sum(self.left(t) for t in self.planned if not self.seconds.get(t) and t not in self.probed)

    def hours_to_go(self, jobs: int) -> float:
        """The estimated hours of the runs to go of the tasks it has run, and of those the probe estimates (the
        others: ``unestimated``)."""
        measured = sum(self.left(t) * statistics.mean(walls) for t, walls in self.seconds.items() if walls)
        return measured / jobs / 3600 + self.probed_hours(jobs)

    def probed_hours(self, jobs: int) -> float:
        """The share of ``hours_to_go`` estimated through the step probe."""
        return sum(self.left(t) * s for t, s in self.probed.items()) / jobs / 3600  # tasks not run here alone


def budget(records: Sequence[ResultRecord], m: MapConfig, probe: Sequence[ResultRecord] = ()) -> list[Line]:
    """A line for every model and size of the plan (and any other the records hold), finished runs by wall seconds;
    ``probe``: the step probe's records, which estimate the tasks a model has not run at a size from another size."""
    done: Finished = defaultdict(lambda: defaultdict(list))
    for r in filter(is_map_run, records):  # every stage: the plan counts the knob stage's runs too
        if r.status == "ok" and r.wall_seconds is not None:
            training = None if r.train_seconds is None else float(r.train_seconds)
            done[(label(r), size(r))][r.task].append((float(r.wall_seconds), training))
    keys = [(model, at) for at in m.sizes for model in m.everyone]
    keys += sorted(k for k in done if k not in keys)
    plan = {model: {task: planned_runs(m, task) for task in m.tasks_of(model)} for model, _ in keys}
    timed = steps(probe)
    lines = []
    for model, at in keys:
        walls = {task: [wall for wall, _ in runs] for task, runs in done.get((model, at), {}).items()}
        lines.append(Line(model, at, walls, plan[model], probed(model, at, done, timed, plan[model])))
    return lines


Finished = dict[
    tuple[str, int], dict[str, list[tuple[float, float | None]]]
]  # (model, size) -> task -> (wall, training)


def probed(
    model: str, at: int, done: Finished, timed: dict[tuple[str, int, str], float], tasks: Sequence[str]
) -> dict[str, float]:
    """Task -> estimated seconds a run of ``model`` at size ``at``, for the tasks it has not run there, from the size
    where it has the most runs of the task: each run's training scaled by the probe's ratio of the model's steps at the
    two sizes, the rest of its wall time kept (none where a resumed run's wall time, of its last session alone, is
    shorter than its training; the whole wall time scaled where a record has no training time)."""
    out: dict[str, float] = {}
    for task in tasks:
        if (done.get((model, at)) or {}).get(task):
            continue
        sources = [(len(by_task[task]), other) for (m, other), by_task in done.items()
                   if m == model and other != at and by_task.get(task)]  # fmt: skip
        if not sources:
            continue
        start = max(sources)[1]
        factor = ratio(timed, model, task, at, start)
        if factor is not None:
            out[task] = statistics.mean(
                wall * factor if training is None else max(0.0, wall - training) + training * factor
                for wall, training in done[(model, start)][task]
            )
    return out


def rows(lines: list[Line], jobs: int) -> list[dict[str, str]]:
    """The table: a row a line, then the total (the estimated hours; the runs of tasks not yet run, counted)."""
    column = f"hours to go at {jobs} at a time"

    probing = any(line.probed for line in lines)

    def row(model: str, at: str, finished: list[float], to_go: int, hours: float, probe: float, unknown: int
            ) -> dict[str, str]:  # fmt: skip
        out = {
            "model": model,
            "size": at,
            "finished": str(len(finished)),
            "hours of a core": f"{sum(finished) / 3600:.2f}",
            "s a run": f"{statistics.mean(finished):.0f}" if finished and model != "all" else "",
            "to go": str(to_go),
            column: f"{hours:.1f}" + (f" + {unknown} runs not yet estimated" if unknown else ""),
        }
        return out | ({"of them from the probe": f"{probe:.1f}" if probe else ""} if probing else {})

    out = [
        row(line.model, f"{line.size:,}", line.finished, line.to_go, line.hours_to_go(jobs), line.probed_hours(jobs),
            line.unestimated)
        for line in lines
    ]  # fmt: skip
    everything = [s for line in lines for s in line.finished]
    out.append(
        row("all", "", everything, sum(line.to_go for line in lines), sum(line.hours_to_go(jobs) for line in lines),
            sum(line.probed_hours(jobs) for line in lines), sum(line.unestimated for line in lines))
    )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="the map's run directories (a sweep directory each)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2: a job a core here)")
    parser.add_argument("--out", type=Path, help="write the table here too (markdown)")
    parser.add_argument("--probe", type=Path, help="the step probe's runs (tasks.capabilities.probe): estimate sizes "
                        "not yet run from it")  # fmt: skip
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.runs if not p.is_dir()]
    if missing:
        raise SystemExit(
            f"capability budget: no such run directory {missing} (python -m tasks.capabilities.map makes it)"
        )
    records = [r for _, r in find_results(*args.runs)]
    if args.probe and not args.probe.is_dir():
        raise SystemExit(f"capability budget: no such probe directory {args.probe} (python -m tasks.capabilities.probe "
                         "makes it)")  # fmt: skip
    probe = [r for _, r in find_results(args.probe)] if args.probe else []
    if args.probe and not steps(probe):
        print(
            f"capability budget: {args.probe} holds no finished probe point; nothing estimated from it", file=sys.stderr
        )
    table = markdown(rows(budget(records, read_map(), probe), args.jobs))
    print(table, end="")
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
