"""The capability map's run: every model at each size on every diagnostic, a learning-rate grid, then the seeds.

Reads ``capability_map`` from ``conf/experiment/capabilities.yaml``, sizes every model before any run (a model that
cannot be matched is refused then: ``tasks.capabilities.sizing``), and launches ``python -m suite.run -m
experiment=capabilities`` once a model and size, through whichever Hydra launcher the extra arguments name (two
jobs at a time here by default; ``hydra/launcher=slurm`` on a cluster):

1. **grid**: every task at every learning rate, seed 0;
2. **seeds**: for each task, the other seeds at the rate whose seed-0 run scored best on validation (its record's
   ``val_accuracy``; a failed run never wins).

Every job has its own directory under the sweep directory (task, model, width, rate, seed), and ``suite.run`` skips a
finished one: a killed map resumes by running the same command.

    python -m tasks.capabilities.map --dry-run
    python -m tasks.capabilities.map --models lstm mamba2 --tasks parity mqar --sizes 100000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from omegaconf import OmegaConf

from suite.runtime.compose import composed
from suite.runtime.paths import PROJECT_ROOT
from suite.runtime.record import RESULT_FILE, read_result
from tasks.capabilities.sizing import Sized, plan

LAUNCHER = ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]


@dataclass(frozen=True)
class MapConfig:
    tasks: list[str]
    models: list[str]
    sizes: list[int]
    lrs: list[float]
    seeds: list[int]
    overrides: dict[str, list[str]]
    task_overrides: dict[str, list[str]]
    sweep_dir: Path


def read_map(extra: Sequence[str] = ()) -> MapConfig:
    """``capability_map`` and the sweep directory from the composed experiment (``extra``: Hydra overrides)."""
    cfg = composed(["experiment=capabilities", *extra])
    node = OmegaConf.to_container(cfg.capability_map, resolve=True)
    sweep = Path(next((a.split("=", 1)[1] for a in extra if a.startswith("hydra.sweep.dir=")), "runs/capabilities"))
    return MapConfig(
        tasks=list(node["tasks"]),
        models=list(node["models"]),
        sizes=[int(s) for s in node["sizes"]],
        lrs=[float(x) for x in node["lrs"]],
        seeds=[int(s) for s in node["seeds"]],
        overrides={k: list(v) for k, v in (node.get("overrides") or {}).items()},
        task_overrides={k: list(v) for k, v in (node.get("task_overrides") or {}).items()},
        sweep_dir=sweep if sweep.is_absolute() else PROJECT_ROOT / sweep,
    )


def task_config(task: str) -> str:
    """The config a task name is composed from: MQAR has its own; the diagnostics are under capability/."""
    return "mqar" if task == "mqar" else f"capability/{task}"


def command(sized: Sized, m: MapConfig, tasks: Sequence[str], lrs: Sequence[float], seeds: Sequence[int],
            extra: Sequence[str]) -> list[list[str]]:  # fmt: skip
    """The ``suite.run`` multiruns for one sized model: one a group of tasks sharing their overrides."""
    out = []
    groups: dict[tuple[str, ...], list[str]] = {}
    for task in tasks:
        groups.setdefault(tuple(m.task_overrides.get(task, [])), []).append(task)
    for task_settings, members in groups.items():
        out.append([
            sys.executable, "-m", "suite.run", "-m", "experiment=capabilities", f"model={sized.model}",
            f"model.d_model={sized.d_model}", *m.overrides.get(sized.model, []),
            "task=" + ",".join(task_config(t) for t in members),
            *task_settings, "trainer.optimizer.lr=" + ",".join(f"{lr:g}" for lr in lrs),
            "seed=" + ",".join(str(s) for s in seeds), f"hydra.sweep.dir={m.sweep_dir}", *LAUNCHER, *extra,
        ])  # fmt: skip
    return out


def chosen_rates(sized: Sized, m: MapConfig) -> dict[str, float]:
    """Task -> the grid's rate whose seed-0 run scored best on validation (tasks with no finished run left out)."""
    best: dict[str, tuple[float, float]] = {}
    for path in m.sweep_dir.glob(f"*-d{sized.d_model}-lr*-s{m.seeds[0]}/{RESULT_FILE}"):
        record = read_result(path)
        if record.model != sized.model or record.status != "ok":
            continue
        score = record.metrics.get("val_accuracy", float("-inf"))
        lr = float(record.config["trainer"]["optimizer"]["lr"])
        if record.task not in best or score > best[record.task][0]:
            best[record.task] = (score, lr)
    return {task: lr for task, (_, lr) in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", help="a subset of the map's models")
    parser.add_argument("--tasks", nargs="+", help="a subset of the map's tasks")
    parser.add_argument("--sizes", nargs="+", type=int, help="a subset of the map's sizes")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the grid's commands; run nothing")
    args, extra = parser.parse_known_args(argv)
    m = read_map(extra)
    models, tasks, sizes = args.models or m.models, args.tasks or m.tasks, args.sizes or m.sizes
    unknown = sorted(set(models) - set(m.models)) + sorted(set(tasks) - set(m.tasks))
    if unknown:
        raise SystemExit(f"capability map: {unknown} not in conf/experiment/capabilities.yaml's capability_map")
    sized = plan(models, sizes, m.overrides, common=["experiment=capabilities"])  # every model matched, or none runs
    for s in sized:
        print(f"{s.model} at {s.target:,}: d_model={s.d_model}, {s.parameters:,} backbone parameters ({s.off:+.1%})")
    for s in sized:
        for cmd in command(s, m, tasks, m.lrs, m.seeds[:1], extra):
            if args.dry_run:
                print("python " + " ".join(cmd[1:]))
            else:  # a failed job is recorded with its status and the map goes on
                subprocess.run(cmd, check=False, cwd=PROJECT_ROOT)
    if args.dry_run:
        return 0
    for s in sized:
        for task, lr in chosen_rates(s, m).items():
            if task in tasks:
                for cmd in command(s, m, [task], [lr], m.seeds[1:], extra):
                    subprocess.run(cmd, check=False, cwd=PROJECT_ROOT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
