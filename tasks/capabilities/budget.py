"""The capability map's time budget: what its finished runs took, and what the rest of its plan would take at that rate.

    python -m tasks.capabilities.budget results/capabilities_runs            # a table a model and size, and the total
    python -m tasks.capabilities.budget runs/capabilities --jobs 2 --out budget.md

Per model and size: the plan's runs (``conf/experiment/capabilities.yaml``: every task at every rate at the first seed,
the other seeds at the chosen rate, and the knob stage's seeds at each further value), the finished ones among them,
the wall seconds they took (each run's own ``wall_seconds``: its process, not the launcher's), their mean, and the runs
to go with their estimated hours at ``jobs`` runs at a time. The estimate is the model's own mean at that size times the
runs to go: a model and size with no finished run is counted as to go and left unestimated, never guessed from another
model's rate. Failed runs count as to go (the map runs them again). The mean is over whichever tasks have run: a task
whose runs go to the step cap (still learning) costs more than one a model solves early, so an estimate from one task
is a floor only where that task stopped early.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from suite.report.tables import markdown
from suite.runtime.record import ResultRecord, find_results
from tasks.capabilities.cells import label, map_runs, size
from tasks.capabilities.map import MapConfig, read_map


def planned_runs(m: MapConfig) -> int:
    """The runs of one model at one size in the map's plan: the grid, the other seeds, the knob stage."""
    grid = len(m.tasks) * len(m.lrs)
    seeds = len(m.tasks) * (len(m.seeds) - 1)
    knobs = sum(len(values) * len(m.seeds) for task, settings in (m.knobs or {}).items() if task in m.tasks
                for values in settings.values())  # fmt: skip
    return grid + seeds + knobs


@dataclass
class Line:
    """One model at one size: its finished runs' wall seconds and the plan's runs left."""

    model: str
    size: int
    seconds: list[float]
    planned: int

    @property
    def to_go(self) -> int:
        return max(0, self.planned - len(self.seconds))

    @property
    def mean(self) -> float | None:
        return statistics.mean(self.seconds) if self.seconds else None

    def hours_to_go(self, jobs: int) -> float | None:
        return None if self.mean is None else self.to_go * self.mean / jobs / 3600


def budget(records: list[ResultRecord], m: MapConfig) -> list[Line]:
    """A line for every model and size of the plan (and any other the records hold), finished runs by wall seconds."""
    done: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in map_runs(records):
        if r.status == "ok" and r.wall_seconds is not None:
            done[(label(r), size(r))].append(float(r.wall_seconds))
    keys = [(model, at) for at in m.sizes for model in m.models]
    keys += sorted(k for k in done if k not in keys)
    return [Line(model, at, done.get((model, at), []), planned_runs(m)) for model, at in keys]


def rows(lines: list[Line], jobs: int) -> list[dict[str, str]]:
    """The table: a row a line, then the total (the hours of the lines with an estimate; the others counted)."""

    def hours(h: float | None) -> str:
        return "no finished run" if h is None else f"{h:.1f}"

    out = [
        {
            "model": line.model,
            "size": f"{line.size:,}",
            "finished": str(len(line.seconds)),
            "hours of a core": f"{sum(line.seconds) / 3600:.2f}",
            "s a run": "" if line.mean is None else f"{line.mean:.0f}",
            "to go": str(line.to_go),
            f"hours to go at {jobs} at a time": hours(line.hours_to_go(jobs)),
        }
        for line in lines
    ]
    known = [line for line in lines if line.mean is not None]
    unknown = [line for line in lines if line.mean is None]
    estimate = sum(line.hours_to_go(jobs) or 0.0 for line in known)
    out.append(
        {
            "model": "all",
            "size": "",
            "finished": str(sum(len(line.seconds) for line in lines)),
            "hours of a core": f"{sum(sum(line.seconds) for line in lines) / 3600:.2f}",
            "s a run": "",
            "to go": str(sum(line.to_go for line in lines)),
            f"hours to go at {jobs} at a time": f"{estimate:.1f}"
            + (f" + {sum(line.to_go for line in unknown)} runs not yet estimated" if unknown else ""),
        }
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="the map's run directories (a sweep directory each)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2: a job a core here)")
    parser.add_argument("--out", type=Path, help="write the table here too (markdown)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.runs if not p.is_dir()]
    if missing:
        raise SystemExit(
            f"capability budget: no such run directory {missing} (python -m tasks.capabilities.map makes it)"
        )
    records = [r for _, r in find_results(*args.runs)]
    table = markdown(rows(budget(records, read_map()), args.jobs))
    print(table, end="")
    if args.out:
        args.out.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
