"""Keep a sweep's finished runs: copy their records into a folder that is committed.

    python -m suite.runtime.keep runs/capabilities results/capabilities_runs

A sweep directory holds checkpoints and W&B files that are not committed; the report needs a run's
``result.json``, its log and its test predictions (what the paired test resamples), and the sweep's
ledger of wall times (``durations.jsonl``). This copies those, keeping each run's path below the sweep
(a knob's ``knob-n_pairs-4/...`` stays below its folder), for every run that has finished: a run
recorded ``interrupted`` will resume and is left out. A run whose record is already kept, byte for byte,
is not copied again (its log in the sweep grows a line each time a later sweep skips it, which is not a
change to keep), so running this after more runs copies only what is new or rerun; the ledger is
append-only, and one that would lose lines the kept one has is refused.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from suite.runtime.failures import Interrupted
from suite.runtime.record import RESULT_FILE, read_result

KEPT = (RESULT_FILE, "run.log", "predictions_*.jsonl")
LEDGERS = ("durations.jsonl",)


@dataclass
class Kept:
    """What one call copied: runs new to the folder, runs whose files changed, runs left out (still to resume)."""

    added: list[Path] = field(default_factory=list)
    updated: list[Path] = field(default_factory=list)
    unchanged: int = 0
    unfinished: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{len(self.added)} runs added, {len(self.updated)} updated, {self.unchanged} unchanged, "
            f"{len(self.unfinished)} left out (interrupted: they resume)"
        )


def _copy_if_changed(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` unless it is there with the same bytes."""
    if target.is_file() and filecmp.cmp(source, target, shallow=False):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def run_files(run_dir: Path) -> list[Path]:
    """The files of one run that are kept (those of ``KEPT`` it has)."""
    return sorted({path for pattern in KEPT for path in run_dir.glob(pattern) if path.is_file()})


def keep(sweep: Path, into: Path) -> Kept:
    """Copy every finished run below ``sweep`` (its ``KEPT`` files, at the same relative path) and the sweep's
    ledgers into ``into``."""
    sweep, into = Path(sweep), Path(into)
    if not sweep.is_dir():
        raise FileNotFoundError(f"no sweep directory at {sweep}")
    kept = Kept()
    for record in sorted(sweep.rglob(RESULT_FILE)):
        run_dir = record.parent
        relative = run_dir.relative_to(sweep)
        try:
            status = read_result(record).status
        except (TypeError, ValueError) as err:  # not JSON (a ValueError), or fields no record has
            raise ValueError(f"{record} is not a readable result record: {err}") from err
        if status == Interrupted.status:
            kept.unfinished.append(relative)
            continue
        kept_record = into / relative / RESULT_FILE
        if kept_record.is_file() and filecmp.cmp(record, kept_record, shallow=False):
            kept.unchanged += 1
            continue
        (kept.updated if kept_record.is_file() else kept.added).append(relative)
        for path in run_files(run_dir):
            _copy_if_changed(path, into / relative / path.name)
    for name in LEDGERS:
        if (sweep / name).is_file():
            _keep_ledger(sweep / name, into / name)
    return kept


def _keep_ledger(source: Path, target: Path) -> None:
    """Copy an append-only ledger unless that would drop lines: the kept one must be where the sweep's begins."""
    if target.is_file() and not source.read_bytes().startswith(target.read_bytes()):
        raise ValueError(
            f"{target} has lines that {source} lacks (a sweep started afresh?): copying would lose them; "
            f"start the sweep from the kept runs (cp -r {target.parent}/. {source.parent}/) or merge the two by hand"
        )
    _copy_if_changed(source, target)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep", type=Path, help="the sweep directory (runs/capabilities)")
    parser.add_argument("into", type=Path, help="the committed folder (results/capabilities_runs)")
    args = parser.parse_args(argv)
    print(keep(args.sweep, args.into).summary())


if __name__ == "__main__":
    main()
