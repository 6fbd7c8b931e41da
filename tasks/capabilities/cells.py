"""The capability map's cells from its run records: a model at a size on a task, at the rate chosen on validation.

A record belongs to the map when its config says ``benchmark: capabilities`` (``conf/experiment/capabilities.yaml``)
and it trained. Its size is the map's target nearest its backbone parameters (``capability_map.sizes`` in the record's
own config); its rate is ``trainer.optimizer.lr``. A cell's rate is the one whose seed-0 run scored best on validation
(``val_accuracy``; a failed run never wins), the rule the map's driver (``tasks.capabilities.map``) uses to launch the
other seeds; the cell is that rate's runs, every seed. A cell without a finished seed-0 run takes every run it has
(their statuses are what it shows).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from suite.runtime.names import model_id
from suite.runtime.record import ResultRecord
from suite.runtime.verdicts import STILL_LEARNING

BENCHMARK = "capabilities"
STAGE_MAP = "map"  # capability_stage of the map's own runs; other stages (a knob's sweep) vary a task's setting
PROTOCOL_SEEDS = 3  # three seeds at the chosen rate; a plan says its own (``capability_map.seeds``)


def is_map_run(r: ResultRecord) -> bool:
    """A training run of the capability map (any stage, any status)."""
    return r.config.get("benchmark") == BENCHMARK and r.job == "train"


def stage(r: ResultRecord) -> str:
    return str(r.config.get("capability_stage", STAGE_MAP))


def size(r: ResultRecord) -> int:
    """The map's size target nearest the run's backbone parameters (its own parameters where the config has none)."""
    parameters = int((r.declaration or {}).get("parameters") or r.params or 0)
    targets = [int(t) for t in (r.config.get("capability_map") or {}).get("sizes") or [parameters]]
    return min(targets, key=lambda t: abs(t - parameters))


def rate(r: ResultRecord) -> float:
    return float(r.config["trainer"]["optimizer"]["lr"])


def label(r: ResultRecord) -> str:
    """The model's row: its name, with its attention core where it has one other than full attention
    ('transformer-local', the name ``capability_map.models`` gives it)."""
    return model_id(r.model, r.attention)


def train_length(r: ResultRecord) -> int:
    """The length the run trained at (its task's ``seq_len``, and the record's since the record took the training
    length; records made before that hold the longest test length there)."""
    return int((r.config.get("task") or {}).get("seq_len") or r.seq_len or 0)


def best_rate(runs: list[ResultRecord], first_seed: int = 0) -> float | None:
    """The rate whose ``first_seed`` run finished with the best validation accuracy (None: no such run finished).

    A tie (common here: several rates solve a task's validation set) goes to the lower validation loss, the surer
    solution, then to the lower rate; the rule once let the highest rate win every tie."""
    finished = [r for r in runs if r.seed == first_seed and r.status == "ok" and "val_accuracy" in r.metrics]
    if not finished:
        return None
    return rate(
        max(finished, key=lambda r: (r.metrics["val_accuracy"], -r.metrics.get("val_loss", math.inf), -rate(r)))
    )


@dataclass
class Cell:
    """One model at one size on one task: the chosen rate's runs (a run a seed)."""

    task: str
    model: str
    size: int
    rate: float | None
    runs: list[ResultRecord]

    @property
    def ok(self) -> list[ResultRecord]:
        return [r for r in self.runs if r.status == "ok" and "accuracy" in r.metrics]

    def accuracies(self, key: str = "accuracy") -> list[float]:
        return [r.metrics[key] for r in self.ok if key in r.metrics]

    @property
    def mean(self) -> float | None:
        values = self.accuracies()
        return statistics.mean(values) if values else None

    @property
    def still_learning(self) -> int:
        """How many of its finished runs the convergence test found still learning."""
        return sum((r.convergence or {}).get("verdict") == STILL_LEARNING for r in self.ok)

    @property
    def failed(self) -> list[str]:
        return sorted({r.status for r in self.runs if r.status != "ok"})

    @property
    def planned_seeds(self) -> int:
        """How many seeds the cell is due: its plan's (``capability_map.seeds`` in its runs' own configs), or the
        protocol's three where no plan names them."""
        counts = [len((r.config.get("capability_map") or {}).get("seeds") or []) for r in self.runs]
        return max(counts, default=0) or PROTOCOL_SEEDS


def variants(records: list[ResultRecord]) -> set[str]:
    """The models the map's plan runs as variants (``capability_map.variants`` in the records' own configs): a model
    changed in one setting for a finding, beside the others but not one of them."""
    return {model for model, tasks in planned(records).items() if tasks is not None}


def planned(records: list[ResultRecord]) -> dict[str, list[str] | None]:
    """The map's rows as its plan names them in the records' own configs, the union over them (a plan grows between
    parts of the map): model -> its tasks (None: every task; a variant: the tasks ``capability_map.variants`` gives
    it)."""
    out: dict[str, list[str] | None] = {}
    for r in records:
        plan = r.config.get("capability_map") or {}
        for model in plan.get("models") or []:
            out[model] = None
        for model, tasks in (plan.get("variants") or {}).items():
            if model not in out or out[model] is not None:
                out[model] = list(dict.fromkeys([*(out.get(model) or []), *tasks]))
    return out


def owes(plan: dict[str, list[str] | None], model: str, task: str) -> bool:
    """Whether ``plan`` (``planned``) has a cell for ``model`` on ``task``."""
    return model in plan and (plan[model] is None or task in plan[model])


def map_runs(records: list[ResultRecord], stage_name: str = STAGE_MAP) -> list[ResultRecord]:
    """The map's runs of one stage among ``records``."""
    return [r for r in records if is_map_run(r) and stage(r) == stage_name]


def cells(records: list[ResultRecord], stage_name: str = STAGE_MAP) -> dict[tuple[int, str, str], Cell]:
    """(size, model label, task) -> its cell, from the map's records of one stage."""
    grouped: dict[tuple[int, str, str], list[ResultRecord]] = defaultdict(list)
    for r in map_runs(records, stage_name):
        grouped[(size(r), label(r), r.task)].append(r)
    out = {}
    for (at, model, task), runs in grouped.items():
        chosen = best_rate(runs)
        kept = [r for r in runs if rate(r) == chosen] if chosen is not None else runs
        out[(at, model, task)] = Cell(task, model, at, chosen, kept)
    return out
