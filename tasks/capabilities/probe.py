"""The capability map's step probe: each model's training step timed at every size of the map, so that the budget can
estimate the runs of a size no run has reached yet.

A map run's cost is its steps times its step, and its steps are known only once it ran (a solved run stops early, a
plateaued one at the plateau). So a size without runs is estimated from a size with them: a run there is taken to
need as many steps as the same model's runs of the same task at the measured size, each step longer by the ratio the
probe measured between the two widths (``tasks.capabilities.budget --probe``). The probe is ``job=speed``
(``suite.measure.harness``: warm-up, then timed rounds, their median) at the map's own shapes: the sized width
(``tasks.capabilities.sizing``), the model's and the task's map settings, the training batch and fp32. Its records are
speed records, never map cells (``tasks.capabilities.cells.is_map_run`` takes training runs alone).

    python -m tasks.capabilities.probe                                   # every model, both sizes, PROBED tasks
    python -m tasks.capabilities.probe --models mamba lstm --tasks a4   # a subset
    python -m tasks.capabilities.probe --table results/capabilities_probe   # the steps timed, a row a point
    python -m tasks.capabilities.budget results/capabilities_runs --probe results/capabilities_probe

Each point is a job of its own directory under ``runs/capabilities_probe`` (or ``hydra.sweep.dir=``; task, model,
width), skipped once finished, as the map's are; run it on otherwise idle cores, one job at a time, since it times.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from suite.report.tables import markdown
from suite.runtime.compose import composed
from suite.runtime.paths import PROJECT_ROOT
from suite.runtime.record import ResultRecord, find_results
from tasks.capabilities.cells import BENCHMARK, label, size
from tasks.capabilities.map import LEDGER, MapConfig, command, read_map, timed
from tasks.capabilities.sizing import plan

# Two of the map's three training lengths (64 for the recall and copying tasks, 32 for the state-tracking ones and
# memorization): the probe's ratio is applied to every task, and the two show how far it moves with the length.
PROBED = ("in_context_recall", "sum_mod_5")
SWEEP_DIR = Path("runs/capabilities_probe")
STEP = "train_step_ms"
MAP_JOBS = 2  # the map's jobs at a time here, whose threads each point gets (the map's runs are what it stands for)


def settings(batch_size: int) -> list[str]:
    """``job=speed`` at the map's training shapes: its batch, fp32 (the map's arithmetic on every CPU kind), a short
    warm-up and timed rounds spanning a second at least; no matmul peak (no MFU is reported here)."""
    return [
        "job=speed", f"job.batch_size={batch_size}", "job.precision=fp32", "job.warmup=1", "job.repeats=3",
        "job.min_time_s=1", "job.measure_peak=false",
    ]  # fmt: skip


def probed_tasks(m: MapConfig, model: str, tasks: Sequence[str]) -> list[str]:
    """``tasks`` that ``model`` runs; a variant that runs none of them takes its own first task."""
    own = m.tasks_of(model, tasks)
    return own or m.tasks_of(model)[:1]


def is_probe(r: ResultRecord) -> bool:
    """A finished step-probe point of the capability map."""
    return r.config.get("benchmark") == BENCHMARK and r.job == "speed" and r.status == "ok" and STEP in r.speed


def steps(records: Sequence[ResultRecord]) -> dict[tuple[str, int, str], float]:
    """(model, size, task) -> the probe's training step in ms; two points of one key (a width sized again, a second
    probe directory) are refused, naming them, rather than one taken at random."""
    out: dict[tuple[str, int, str], float] = {}
    seen: dict[tuple[str, int, str], ResultRecord] = {}
    for r in filter(is_probe, records):
        key = (label(r), size(r), r.task)
        if key in seen:
            widths = [str((x.config.get("model") or {}).get("d_model")) for x in (seen[key], r)]
            raise ValueError(
                f"capability probe: two points for {key[0]} at {key[1]:,} on {key[2]} (widths {' and '.join(widths)}, "
                f"devices {seen[key].device!r} and {r.device!r}); keep one directory of the probe"
            )
        seen[key], out[key] = r, float(r.speed[STEP])
    return out


def ratio(probed: dict[tuple[str, int, str], float], model: str, task: str, to: int, start: int) -> float | None:
    """How many times longer the model's step is at size ``to`` than at ``start``: on ``task`` where the probe timed
    it at both, else the geometric mean over the tasks it did (None: no task at both)."""
    both: dict[str, dict[int, float]] = defaultdict(dict)
    for (m, at, t), ms in probed.items():
        if m == model and at in (to, start):
            both[t][at] = ms
    if task in both and len(both[task]) == 2:
        return both[task][to] / both[task][start]
    ratios = [s[to] / s[start] for s in both.values() if len(s) == 2]
    return math.exp(statistics.mean(math.log(x) for x in ratios)) if ratios else None


def smallest_size(r: ResultRecord) -> int:
    """The smallest size of the map's plan as the record's own config gives it (its own size where none does)."""
    return min(int(x) for x in (r.config.get("capability_map") or {}).get("sizes") or [size(r)])


def table(records: Sequence[ResultRecord]) -> list[dict[str, str]]:
    """A row a probed model, task and size: the width, the training step (median ms, its spread), how many times the
    model's step at the plan's smallest size on that task it is (blank where that point is missing), the other
    processes' share of the CPU while it was timed, and the machine (its threads)."""
    points = sorted((r for r in records if is_probe(r)), key=lambda r: (label(r), r.task, size(r)))
    timed = steps(points)
    rows = []
    for r in points:
        ms = float(r.speed[STEP])
        first = timed.get((label(r), min(smallest_size(r), size(r)), r.task))
        share = r.speed.get("others_cpu_share")
        rows.append({
            "model": label(r), "task": r.task, "size": f"{size(r):,}",
            "width": str((r.config.get("model") or {}).get("d_model")),
            "train step (ms)": f"{ms:.1f}", "spread (ms)": f"{float(r.speed.get('train_step_iqr_ms', 0)):.1f}",
            "x the smallest size": "" if first is None else f"{ms / first:.2f}",
            "others' CPU share": "" if share is None else f"{100 * float(share):.0f} %", "device": r.device or "",
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", help="a subset of the map's models (default: all, variants too)")
    parser.add_argument("--tasks", nargs="+", default=list(PROBED), help=f"tasks to time (default: {PROBED})")
    parser.add_argument("--sizes", nargs="+", type=int, help="a subset of the map's sizes")
    parser.add_argument("--threads", type=int, help="threads a point (default: $OMP_NUM_THREADS where set, else a map "
                        "job's share, the cores over its two jobs)")  # fmt: skip
    parser.add_argument("--dry-run", action="store_true", help="print the commands; run nothing")
    parser.add_argument("--table", type=Path, metavar="DIR", help="print the table of the probe's points in DIR (and "
                        "--out it); run nothing")  # fmt: skip
    parser.add_argument("--out", type=Path, help="with --table: write the table here too (markdown)")
    args, extra = parser.parse_known_args(argv)
    if args.table:
        if not args.table.is_dir():
            raise SystemExit(f"capability probe: no such directory {args.table} (python -m tasks.capabilities.probe)")
        text = markdown(table([r for _, r in find_results(args.table)]))
        print(text, end="")
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        return 0
    m = read_map(extra)
    if not any(e.startswith("hydra.sweep.dir=") for e in extra):  # the probe's own directory, not the map's
        m = dataclasses.replace(m, sweep_dir=PROJECT_ROOT / SWEEP_DIR)
    models = args.models or m.everyone
    unknown = sorted(set(models) - set(m.everyone)) + sorted(set(args.tasks) - set(m.tasks))
    if unknown:
        raise SystemExit(f"capability probe: {unknown} not in conf/experiment/capabilities.yaml's capability_map")
    if args.threads is not None:  # else the map's own rule (map.run_env): a job's share of the cores at MAP_JOBS
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    batch = int(composed(["experiment=capabilities", *extra]).trainer.batch_size)
    sized = plan(models, args.sizes or m.sizes, m.overrides, common=["experiment=capabilities"])
    for s in sized:
        tasks = probed_tasks(m, s.model, args.tasks)
        for cmd in command(s, m, tasks, m.lrs[:1], m.seeds[:1], [*settings(batch), *extra], jobs=1):
            if args.dry_run:
                print("python " + " ".join(cmd[1:]))
            else:
                timed(cmd, m.sweep_dir / LEDGER, MAP_JOBS)  # one point at a time, with a map job's threads
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
