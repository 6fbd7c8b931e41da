"""A speed job's arms timed in alternating rounds, and each round's ratio: a comparison on a machine whose speed drifts.

On a shared VM one speed point moves by about a fifth between runs (a phase of the host, not of the code), more than
many differences worth reporting. Here the arms run one after another within each round (A, B, A, B, ...), each a
fresh ``suite.run`` process, so a drift reaches both arms of a round alike; the table gives each round's figure an
arm, the round's ratio of each arm to the baseline (the last arm unless ``--baseline``), and over the rounds the
median and the range of each. A round whose run failed is shown with its status, and no ratio.

    python -m suite.tools.speed_rounds --out runs/speed-rounds --rounds 4 --arm loop= \
        --arm pscan=model.backbone.kernel=pscan -- experiment=speed_vs_length model=mamba model.d_model=64 \
        task.seq_len=1024 job.batch_size=16 job.time_budget_s=600
    python -m suite.tools.speed_rounds --out runs/speed-rounds            # the table again from the finished runs

Every run has its own directory, ``<out>/<arm>-<round>``; one with a finished record is not run again, so a killed
series resumes. Runs get ``OMP_NUM_THREADS`` from ``--threads`` (one: the suite's speed tables' setting).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable

from suite.report.tables import markdown
from suite.runtime.record import RESULT_FILE, read_result

RUN_DIR = re.compile(r"^(?P<arm>.+)-(?P<round>\d+)$")


def parse_arm(text: str) -> tuple[str, list[str]]:
    """'name=override override ...' -> (name, overrides); 'name=' is the job as given."""
    name, sep, overrides = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.]+", name):
        raise ValueError(
            f"--arm {text!r}: expected NAME=OVERRIDES (NAME of letters, digits, '_' or '.'; OVERRIDES may be empty)"
        )
    return name, overrides.split()


def run_rounds(out: Path, arms: list[tuple[str, list[str]]], job: list[str], rounds: int, threads: int) -> None:
    """Each round runs every arm once, in the given order; a run with a record already is skipped."""
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    for number in range(1, rounds + 1):
        for name, overrides in arms:
            run_dir = out / f"{name}-{number}"
            if (run_dir / RESULT_FILE).is_file():
                continue
            command = [sys.executable, "-m", "suite.run", *job, *overrides, f"hydra.run.dir={run_dir}"]
            print(f"round {number}, {name}: {' '.join(command[3:])}", flush=True)
            subprocess.run(command, env=env, check=False)  # a failed run is recorded as such; the series goes on


def figures(out: Path, metric: str) -> tuple[dict[int, dict[str, float | str]], set[str]]:
    """(round -> arm -> the records' ``speed[metric]``, or the run's status where it has no figure; where the runs
    were measured: each record's device and commit)."""
    found: dict[int, dict[str, float | str]] = {}
    where: set[str] = set()
    for path in sorted(out.glob(f"*/{RESULT_FILE}")):
        match = RUN_DIR.match(path.parent.name)
        if not match:
            continue
        record = read_result(path)
        value = (record.speed or {}).get(metric) if record.status == "ok" else None
        found.setdefault(int(match["round"]), {})[match["arm"]] = record.status if value is None else float(value)
        commit = record.git_commit or "unknown"
        where.add(f"{record.device}, commit {commit[:7]}{'-dirty' * commit.endswith('-dirty')}")
    return found, where


def rounds_table(found: dict[int, dict[str, float | str]], arms: list[str], baseline: str) -> list[dict[str, str]]:
    """A row a round (each arm's figure, each other arm's ratio to ``baseline``), then the median and the range."""
    if baseline not in arms:
        raise ValueError(f"baseline arm {baseline!r} is not among the arms {arms}")
    others = [a for a in arms if a != baseline]
    columns: dict[str, list[float]] = {c: [] for c in [*arms, *(f"{a} / {baseline}" for a in others)]}
    rows = []
    for number in sorted(found):
        got = found[number]
        row = {"round": str(number)}
        for arm in arms:
            value = got.get(arm, "missing")
            row[arm] = f"{value:,.0f}" if isinstance(value, float) else str(value)
            if isinstance(value, float):
                columns[arm].append(value)
        for arm in others:
            a, b = got.get(arm), got.get(baseline)
            ratio = a / b if isinstance(a, float) and isinstance(b, float) else None
            row[f"{arm} / {baseline}"] = "" if ratio is None else f"{ratio:.2f}x"
            if ratio is not None:
                columns[f"{arm} / {baseline}"].append(ratio)
        rows.append(row)

    def summary(label: str, of: Callable[[list[float], bool], str]) -> dict[str, str]:
        cells = {}
        for column, values in columns.items():
            ratio = " / " in column
            cells[column] = "" if not values else of(values, ratio)
        return {"round": label, **cells}

    def fmt(x: float, ratio: bool) -> str:
        return f"{x:.2f}x" if ratio else f"{x:,.0f}"

    rows.append(summary("median", lambda v, r: fmt(statistics.median(v), r)))
    rows.append(summary("range", lambda v, r: f"{fmt(min(v), r)} - {fmt(max(v), r)}"))
    return rows


def main(argv: list[str] | None = None) -> list[dict[str, str]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the series' directory (a run a subdirectory)")
    parser.add_argument("--arm", action="append", default=[], help="NAME=OVERRIDES, in the order a round runs them")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--baseline", help="the arm the ratios divide by (default: the last)")
    parser.add_argument("--metric", default="train_tokens_per_s", help="a field of the records' speed")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("job", nargs="*", help="the speed job's overrides, after --")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    arms = [parse_arm(a) for a in args.arm]
    if arms and not args.job:
        parser.error("arms to run need the speed job's overrides after -- (experiment=speed_vs_length model=...)")
    if arms:
        run_rounds(args.out, arms, args.job, args.rounds, args.threads)
    found, where = figures(args.out, args.metric)
    if not found:
        raise SystemExit(f"{args.out}: no finished runs named <arm>-<round> (run the series with --arm ... -- JOB)")
    names = [n for n, _ in arms] or sorted({arm for got in found.values() for arm in got})
    rows = rounds_table(found, names, args.baseline or names[-1])
    order = ", ".join(names)
    print(f"Measured on {'; '.join(sorted(where))}: {args.metric}, a round runs {order} one after another.\n")
    print(markdown(rows))
    return rows


if __name__ == "__main__":
    main()
