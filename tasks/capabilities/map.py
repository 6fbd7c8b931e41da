"""The capability map's run: every model at each size on every diagnostic, a learning-rate grid, then the seeds.

Reads ``capability_map`` from ``conf/experiment/capabilities.yaml``, sizes every model before any run (a model that
cannot be matched is refused then: ``tasks.capabilities.sizing``), and launches ``python -m suite.run -m
experiment=capabilities`` once a model and size, through whichever Hydra launcher the extra arguments name (two
jobs at a time here by default; ``hydra/launcher=slurm`` on a cluster):

1. **grid**: every task at every learning rate, seed 0;
2. **seeds**: for each task, the other seeds at the rate whose seed-0 run scored best on validation (its record's
   ``val_accuracy``; a tie to the lower ``val_loss``, then the lower rate; a failed run never wins:
   ``tasks.capabilities.cells.best_rate``, the report's rule too);
3. **knobs**: for each task that ``capability_map.knobs`` names, every seed at that rate at each further value of
   its setting (``capability_stage=knob``, each value a sweep directory of its own under ``knob-<setting>-<value>``).

A variant (``capability_map.variants``: a model changed in one setting for a published finding, such as DeltaNet with
negative eigenvalues) runs the same stages on the tasks its entry names alone.

Every job has its own directory under the sweep directory (task, model, width, rate, seed), and ``suite.run`` skips a
finished one: a killed map resumes by running the same command. Each command's wall time is added to
``durations.jsonl`` in the sweep directory as it ends, so the map's time is the sum over the sessions it took.

    python -m tasks.capabilities.map --dry-run
    python -m tasks.capabilities.map --models lstm mamba2 --tasks parity mqar --sizes 100000
    python -m tasks.capabilities.map --models mamba --tasks selective_copying --knobs seq_len
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from omegaconf import OmegaConf

from suite.attention import catalog
from suite.attention.core import CAUSAL
from suite.runtime.compose import composed
from suite.runtime.names import model_id, model_overrides
from suite.runtime.paths import PROJECT_ROOT
from suite.runtime.record import RESULT_FILE, read_result
from tasks.capabilities.cells import best_rate
from tasks.capabilities.sizing import Sized, plan


def launcher(jobs: int) -> list[str]:
    """The Hydra launcher's overrides: ``jobs`` at a time through joblib (a cluster's launcher replaces it)."""
    return ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={jobs}"]


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
    knobs: dict[str, dict[str, list[float]]] | None = None
    variants: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # a variant model -> its tasks

    @property
    def everyone(self) -> list[str]:
        """The models, then the variants (never both: ``read_map`` refuses a name in both)."""
        return [*self.models, *self.variants]

    def tasks_of(self, model: str, tasks: Sequence[str] | None = None) -> list[str]:
        """``tasks`` (default: the map's) that ``model`` runs: all of them, or a variant's own among them."""
        wanted = list(self.tasks if tasks is None else tasks)
        return [t for t in wanted if t in self.variants[model]] if model in self.variants else wanted


def read_map(extra: Sequence[str] = ()) -> MapConfig:
    """``capability_map`` and the sweep directory from the composed experiment (``extra``: Hydra overrides)."""
    cfg = composed(["experiment=capabilities", *extra])
    node = OmegaConf.to_container(cfg.capability_map, resolve=True)
    sweep = Path(next((a.split("=", 1)[1] for a in extra if a.startswith("hydra.sweep.dir=")), "runs/capabilities"))
    variants = {k: list(v) for k, v in (node.get("variants") or {}).items()}
    strays = {k: sorted(set(v) - set(node["tasks"])) for k, v in variants.items() if set(v) - set(node["tasks"])}
    if strays:
        raise SystemExit(f"capability map: capability_map.variants names tasks the map does not have: {strays}")
    twice = sorted(set(variants) & set(node["models"]))
    if twice:  # a model's own row would be cut down to the variant's tasks
        raise SystemExit(f"capability map: {twice} named both in capability_map.models and in its variants")
    check_cores([*node["models"], *variants])
    return MapConfig(
        tasks=list(node["tasks"]),
        models=list(node["models"]),
        sizes=[int(s) for s in node["sizes"]],
        lrs=[float(x) for x in node["lrs"]],
        seeds=[int(s) for s in node["seeds"]],
        overrides={k: list(v) for k, v in (node.get("overrides") or {}).items()},
        task_overrides={k: list(v) for k, v in (node.get("task_overrides") or {}).items()},
        sweep_dir=sweep if sweep.is_absolute() else PROJECT_ROOT / sweep,
        knobs={task: {k: list(v) for k, v in settings.items()} for task, settings in (node.get("knobs") or {}).items()},
        variants=variants,
    )


def check_cores(rows: Sequence[str]) -> None:
    """Refuse a row whose attention core ('transformer-local': ``suite.runtime.names.model_id``) has no config, or has
    no causal mode (the map's tasks are read left to right), naming the cores there are."""
    cores = {row: row.partition("-")[2] for row in rows if "-" in row}
    unknown = sorted(row for row, core in cores.items() if core not in catalog.variant_names())
    if unknown:
        raise SystemExit(
            f"capability map: {unknown} name attention cores that conf/model/attention/ does not have: it has "
            f"{catalog.variant_names()}"
        )
    one_way = sorted(row for row, core in cores.items() if CAUSAL not in catalog.build(core, 64).capabilities)
    if one_way:
        raise SystemExit(f"capability map: {one_way} name attention cores with no causal mode; the map's tasks need it")


def task_config(task: str) -> str:
    """The config a task name is composed from: MQAR has its own; the diagnostics are under capability/."""
    return "mqar" if task == "mqar" else f"capability/{task}"


def chosen_launcher(extra: Sequence[str]) -> bool:
    """Whether the extra overrides name a launcher of their own (``hydra/launcher=slurm``), which replaces joblib."""
    return any(e.startswith("hydra/launcher=") for e in extra)


def command(sized: Sized, m: MapConfig, tasks: Sequence[str], lrs: Sequence[float], seeds: Sequence[int],
            extra: Sequence[str], jobs: int = 2) -> list[list[str]]:  # fmt: skip
    """The ``suite.run`` multiruns for one sized model: one a group of tasks sharing their overrides."""
    out, launch = [], [] if chosen_launcher(extra) else launcher(jobs)
    groups: dict[tuple[str, ...], list[str]] = {}
    for task in tasks:
        groups.setdefault(tuple(m.task_overrides.get(task, [])), []).append(task)
    for task_settings, members in groups.items():
        out.append([
            sys.executable, "-m", "suite.run", "-m", "experiment=capabilities", *model_overrides(sized.model),
            f"model.d_model={sized.d_model}", *m.overrides.get(sized.model, []),
            "task=" + ",".join(task_config(t) for t in members),
            *task_settings, "trainer.optimizer.lr=" + ",".join(f"{lr:g}" for lr in lrs),
            "seed=" + ",".join(str(s) for s in seeds), f"hydra.sweep.dir={m.sweep_dir}", *launch, *extra,
        ])  # fmt: skip
    return out


def chosen_rates(sized: Sized, m: MapConfig) -> dict[str, float]:
    """Task -> the grid's rate whose seed-0 run scored best on validation (tasks with no finished run left out)."""
    runs: dict[str, list] = {}
    for path in m.sweep_dir.glob(f"*-d{sized.d_model}-lr*-s{m.seeds[0]}/{RESULT_FILE}"):
        record = read_result(path)
        if model_id(record.model, record.attention) == sized.model:
            runs.setdefault(record.task, []).append(record)
    chosen = {task: best_rate(found, m.seeds[0]) for task, found in runs.items()}
    return {task: lr for task, lr in chosen.items() if lr is not None}


def knob_commands(
    sized: Sized, m: MapConfig, task: str, lr: float, extra: Sequence[str], jobs: int = 2
) -> list[list[str]]:
    """The knob stage of one task: every seed at ``lr`` at each value of each setting the map sweeps for it."""
    out = []
    for setting, values in (m.knobs or {}).get(task, {}).items():
        for value in values:
            where = m.sweep_dir / f"knob-{setting}-{value:g}"
            knob = ["capability_stage=knob", f"capability_knob={setting}", f"task.{setting}={value:g}"]
            own = [
                o for o in m.task_overrides.get(task, []) if not o.startswith(f"task.{setting}=")
            ]  # the knob's value
            swept = dataclasses.replace(m, sweep_dir=where, task_overrides={**m.task_overrides, task: own})
            out += command(sized, swept, [task], [lr], m.seeds, [*knob, *extra], jobs)
    return out


def only_knobs(m: MapConfig, settings: Sequence[str]) -> MapConfig:
    """``m`` with its knob stage narrowed to ``settings`` (``seq_len``: selective copying's length, not its tokens);
    a setting that no task's knobs name is refused, naming those there are."""
    named = {setting for task_knobs in (m.knobs or {}).values() for setting in task_knobs}
    unknown = sorted(set(settings) - named)
    if unknown:
        raise SystemExit(f"capability map: no task's knobs name {unknown}; capability_map.knobs has {sorted(named)}")
    knobs = {
        task: {k: v for k, v in task_knobs.items() if k in settings} for task, task_knobs in (m.knobs or {}).items()
    }
    return dataclasses.replace(m, knobs={task: task_knobs for task, task_knobs in knobs.items() if task_knobs})


def run_env(env: Mapping[str, str], jobs: int) -> dict[str, str]:
    """``env`` for the map's runs: Python's bytecode cache on (where the machine sets PYTHONDONTWRITEBYTECODE, every one
    of the map's thousands of processes would compile torch's and the suite's modules again; the Makefile's targets
    turn it on the same way), and each job's threads its share of the cores (``OMP_NUM_THREADS``, unless set). joblib's
    workers get that share already, but a run outside them takes every core: two maps side by side with ``--jobs 1``,
    two threads each on two cores, ran their steps up to an order of magnitude slower than with one thread each."""
    out = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if "OMP_NUM_THREADS" not in out:
        out["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // max(1, jobs)))
    return out


def timed(cmd: list[str], ledger: Path, jobs: int = 1) -> None:
    """Run one ``suite.run`` multirun of ``jobs`` at a time (a failed job is recorded with its status and the map goes
    on), and add its wall time to the ledger."""
    started = time.time()
    subprocess.run(cmd, check=False, cwd=PROJECT_ROOT, env=run_env(os.environ, jobs))
    ledger.parent.mkdir(parents=True, exist_ok=True)
    with ledger.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"started": started, "seconds": round(time.time() - started, 1), "command": cmd[3:]}) + "\n")


def map_seconds(sweep_dir: Path) -> float:
    """The map's wall time so far: its commands' seconds summed over every session (``durations.jsonl``)."""
    ledger = sweep_dir / LEDGER
    if not ledger.is_file():
        return 0.0
    return sum(json.loads(line)["seconds"] for line in ledger.read_text(encoding="utf-8").splitlines() if line)


LEDGER = "durations.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", help="a subset of the map's models")
    parser.add_argument("--tasks", nargs="+", help="a subset of the map's tasks")
    parser.add_argument("--sizes", nargs="+", type=int, help="a subset of the map's sizes")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the grid's commands; run nothing")
    parser.add_argument("--jobs", type=int, default=2, help="jobs at a time (joblib; default 2, a job a core here)")
    parser.add_argument("--no-knobs", action="store_true", help="leave out the knob stage")
    parser.add_argument("--knobs", nargs="+", metavar="SETTING", help="only these settings' knobs (e.g. seq_len)")
    args, extra = parser.parse_known_args(argv)
    m = read_map(extra)
    if args.knobs:  # a Hydra override of capability_map.knobs merges into the map's, so it cannot narrow them
        m = only_knobs(m, args.knobs)
    models, tasks, sizes = args.models or m.everyone, args.tasks or m.tasks, args.sizes or m.sizes
    unknown = sorted(set(models) - set(m.everyone)) + sorted(set(tasks) - set(m.tasks))
    if unknown:
        raise SystemExit(f"capability map: {unknown} not in conf/experiment/capabilities.yaml's capability_map")
    idle = [model for model in models if not m.tasks_of(model, tasks)]  # a variant none of whose tasks is asked for
    if args.models and idle:
        raise SystemExit(f"capability map: {idle} run none of the tasks asked for ({sorted(tasks)}): {m.variants}")
    models = [model for model in models if model not in idle]
    sized = plan(models, sizes, m.overrides, common=["experiment=capabilities"])  # every model matched, or none runs
    for s in sized:
        print(f"{s.model} at {s.target:,}: d_model={s.d_model}, {s.parameters:,} backbone parameters ({s.off:+.1%})")
    ledger = m.sweep_dir / LEDGER
    for s in sized:
        for cmd in command(s, m, m.tasks_of(s.model, tasks), m.lrs, m.seeds[:1], extra, args.jobs):
            if args.dry_run:
                print("python " + " ".join(cmd[1:]))
            else:
                timed(cmd, ledger, args.jobs)
    if args.dry_run:
        return 0
    rates = {
        s: {t: lr for t, lr in chosen_rates(s, m).items() if t in m.tasks_of(s.model, tasks)} for s in sized
    }  # read once, after the grid
    for s in sized if m.seeds[1:] else []:
        for task, lr in rates[s].items():
            for cmd in command(s, m, [task], [lr], m.seeds[1:], extra, args.jobs):
                timed(cmd, ledger, args.jobs)
    for s in [] if args.no_knobs else sized:
        for task, lr in rates[s].items():
            for cmd in knob_commands(s, m, task, lr, extra, args.jobs):
                timed(cmd, ledger, args.jobs)
    print(f"capability map: {map_seconds(m.sweep_dir) / 3600:.2f} h of wall time so far, over every session ({ledger})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
