"""Judge finished runs again after the convergence test changed (``suite.training.convergence``).

    python -m suite.training.rejudge runs/capabilities results/capabilities_runs          # what would change
    python -m suite.training.rejudge runs/capabilities results/capabilities_runs --apply  # change it

A record's verdict, and a run stopped by ``trainer.stop_on_plateau``, follow the test its config named. When the test
gains a parameter or a default changes, each finished run is replayed against the current one from its own curve: the
test is applied at every validation from ``stop_on_plateau`` on, as ``suite.training.callbacks.PlateauReached`` applies
it while training. A run the current test would have stopped at the same validation (or not at all, for a run that went
to its cap) computed exactly what it would compute now: its record takes the current test's parameters and verdict
(``convergence.rejudged`` says so), and a resumed sweep finds it finished. A run the current test would have stopped at
another validation (let go on where the old one stopped it, or stopped before its end) is another run: its folder is
removed (its record stays in git's history) so that the sweep runs it again; nothing else is touched. A run that did
not finish ok under the old test is removed too: the sweep runs it again anyway, and an interrupted one's ``last.pt``
names the old test, so it cannot resume under the current one. Records without a curve and those of other jobs are left
as they are. Run it between sweeps, not while one is running.
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from suite.runtime.files import atomic_write_text
from suite.runtime.record import RESULT_FILE
from suite.training.convergence import PLATEAUED, ConvergenceTest

PARAMETERS = {f.name for f in fields(ConvergenceTest)}


@dataclass
class Rejudged:
    """What one folder's replay found: records brought up to the current test, runs to run again, others."""

    updated: list[Path] = field(default_factory=list)
    rerun: list[Path] = field(default_factory=list)
    current: int = 0  # already judged by the current test
    skipped: int = 0  # another job, a record from before the test, or no curve to replay

    def summary(self) -> str:
        return (
            f"{len(self.updated)} records take the current test (the same run), {len(self.rerun)} to run again (the "
            f"current test stops them elsewhere, or they did not finish), {self.current} already current, "
            f"{self.skipped} left alone"
        )


def current_test(saved: dict[str, Any]) -> ConvergenceTest:
    """The record's test, with the current defaults for the parameters it did not have (``_target_`` dropped)."""
    return ConvergenceTest(**{k: v for k, v in saved.items() if k in PARAMETERS})


def first_stop(test: ConvergenceTest, steps: list[float], values: list[float], metric: str, after: int) -> int | None:
    """The index of the first validation, from step ``after`` on, where ``test`` calls the curve so far plateaued."""
    for i, step in enumerate(steps):
        if step >= after and test.judge(steps[: i + 1], values[: i + 1], metric).verdict == PLATEAUED:
            return i
    return None


def replay(data: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """('current' | 'updated' | 'rerun' | 'skipped', the record's new convergence field where updated: its ``test``
    holds the current parameters). 'rerun': the current test would have stopped the run at another validation (later,
    or before its end), or the run did not finish, so it is another run."""
    trainer = (data.get("config") or {}).get("trainer") or {}
    if not isinstance(trainer.get("convergence"), dict):
        return "skipped", None  # another job, or a record from before the test
    saved = trainer["convergence"]
    test = current_test(saved)
    if all(saved.get(k) == v for k, v in asdict(test).items()):
        return "current", None
    if data.get("status") != "ok":  # the sweep runs it again anyway; an interrupted one's last.pt names the old test
        return "rerun", None
    verdict = data.get("convergence") or {}
    metric, curves = verdict.get("metric"), data.get("curves") or {}
    steps, values = curves.get("step") or [], curves.get(f"val_{metric}") or []
    if not metric or not steps or len(steps) != len(values):
        return "skipped", None
    after = trainer.get("stop_on_plateau")
    stop = None if after is None else first_stop(test, steps[:-1], values[:-1], metric, after)
    if data.get("stop_reason") == PLATEAUED:
        final = test.judge(steps, values, metric)
        if stop is not None or final.verdict != PLATEAUED:
            return "rerun", None
    elif stop is not None:  # the current test would have stopped it before its end: another run
        return "rerun", None
    if data.get("stop_reason") == "target_reached":  # a target reached is a plateau under any test
        return "updated", {**verdict, "test": asdict(test), "rejudged": True}
    return "updated", {**test.judge(steps, values, metric).record(), "rejudged": True}


def rejudge(folder: Path, apply: bool = False) -> Rejudged:
    """Replay every ``result.json`` below ``folder``; with ``apply``, rewrite or remove as the module says."""
    out = Rejudged()
    for path in sorted(Path(folder).rglob(RESULT_FILE)):
        data = json.loads(path.read_text())
        what, verdict = replay(data)
        if what == "skipped":
            out.skipped += 1
        elif what == "current":
            out.current += 1
        elif what == "rerun":
            out.rerun.append(path.parent)
            if apply:
                shutil.rmtree(path.parent)
        else:
            out.updated.append(path.parent)
            if apply:
                trainer = data["config"]["trainer"]
                trainer["convergence"] = {**trainer["convergence"], **verdict["test"]}  # the current parameters
                data["convergence"] = verdict
                atomic_write_text(path, json.dumps(data, indent=2) + "\n")  # a record is whole or as it was
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="folders of run records (searched recursively)")
    parser.add_argument("--apply", action="store_true", help="rewrite and remove; without it, only list")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder of run records")
        found = rejudge(folder, args.apply)
        for run in found.rerun:
            print(f"to run again under the current test{' (removed)' if args.apply else ''}: {run}")
        print(f"{folder}: {found.summary()}{'' if args.apply else ' (nothing changed: --apply to change it)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
