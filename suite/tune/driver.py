"""The study's loop, ask and tell: trials chosen on validation, then the winner and the default re-run on test.

    trial-000 ... trial-<n-1>    the search: trial 0 is the default setting (enqueued), the rest Optuna's (TPE);
                                 validation only (``job.test=false``), pruned by the study's pruner
    tuned-s<seed>                the best trial's setting, one run a seed, scored on test once
    default-s<seed>              the default setting, the same seeds, scored on test: what the tuning bought

Every one is an ordinary run directory of the sweep (``execute`` records and resumes it). The study lives in
``study.db`` beside them; a killed study resumes: trials left running are run again in their own directories
(continuing from their ``last.pt``), finished ones are told, not repeated. The launcher is injected (``Launch``),
so the loop is the same under Hydra's launchers and in the tests.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import optuna
from optuna.trial import TrialState

from suite.runtime.record import RESULT_FILE, read_result
from suite.tune.pruning import PRUNED
from suite.tune.space import Space
from suite.tune.study import storage_url

log = logging.getLogger("suite.tune")

Launch = Callable[[Sequence[Sequence[str]], int], None]
"""Runs jobs, each a list of Hydra overrides (with its ``hydra.sweep.subdir``), ``n_jobs`` at a time at most."""

SUMMARY_FILE = "tune.json"


@dataclass(frozen=True)
class Plan:
    """What the study runs: ``n_trials`` searched settings, ``n_jobs`` at a time, then ``seeds`` for the final runs."""

    n_trials: int
    n_jobs: int
    seeds: tuple[int, ...]
    base: tuple[str, ...] = ()  # the command's overrides (task, model, budget): every job has them


def trial_dir(number: int) -> str:
    return f"trial-{number:03d}"


def final_dir(kind: str, seed: int) -> str:
    return f"{kind}-s{seed}"


def trial_outcome(run_dir: Path) -> tuple[TrialState, float | None, str]:
    """What a trial's record says: (the state to tell, the validation primary metric, its status)."""
    path = run_dir / RESULT_FILE
    if not path.exists():
        return TrialState.FAIL, None, "no record"
    record = read_result(path)
    if record.status != "ok":
        return TrialState.FAIL, None, record.status
    if record.stop_reason == PRUNED:
        return TrialState.PRUNED, None, PRUNED
    value = record.metrics.get(f"val_{record.primary_metric}")
    return (TrialState.COMPLETE, float(value), "ok") if value is not None else (TrialState.FAIL, None, "no val metric")


class Tuning:
    """One study: ``run()`` searches until ``plan.n_trials`` trials have ended, then runs the finals."""

    def __init__(self, study: optuna.Study, space: Space, plan: Plan, launch: Launch, sweep_dir: Path) -> None:
        self.study, self.space, self.plan, self.launch, self.sweep_dir = study, space, plan, launch, Path(sweep_dir)

    def trial_job(self, number: int, params: dict[str, Any]) -> list[str]:
        return [
            *self.plan.base,
            *self.space.overrides(params),
            "job.test=false",
            f"tune.trial={number}",
            f"tune.storage={json.dumps(storage_url(self.sweep_dir))}",
            f"hydra.sweep.subdir={trial_dir(number)}",
        ]

    def final_job(self, kind: str, seed: int, params: dict[str, Any] | None) -> list[str]:
        return [
            *self.plan.base,
            *(self.space.overrides(params) if params is not None else []),
            f"seed={seed}",
            "job.test=true",
            "tune.trial=null",
            f"hydra.sweep.subdir={final_dir(kind, seed)}",
        ]

    def ended(self) -> int:
        return sum(t.state.is_finished() for t in self.study.get_trials(deepcopy=False))

    def tell(self, numbers: Sequence[int]) -> None:
        for number in numbers:
            state, value, status = trial_outcome(self.sweep_dir / trial_dir(number))
            self.study.tell(number, value if state == TrialState.COMPLETE else None, state=state)
            log.info("trial %d: %s%s", number, status, f" (validation {value:.4g})" if value is not None else "")

    def resume_running(self) -> None:
        """Trials a killed study left running: run again in their own directories, then told."""
        stale = self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
        for t in [t for t in stale if set(t.params) != {p.name for p in self.space.params}]:
            log.warning("trial %d was killed before its setting was drawn: told FAIL", t.number)
            self.study.tell(t.number, state=TrialState.FAIL)
        stale = [t for t in stale if set(t.params) == {p.name for p in self.space.params}]
        for i in range(0, len(stale), self.plan.n_jobs):
            batch = stale[i : i + self.plan.n_jobs]
            log.info("resuming trials %s, left running by an earlier study", [t.number for t in batch])
            self.launch([self.trial_job(t.number, t.params) for t in batch], batch[0].number)
            self.tell([t.number for t in batch])

    def search(self) -> None:
        while (left := self.plan.n_trials - self.ended()) > 0:
            trials = [self.study.ask() for _ in range(min(self.plan.n_jobs, left))]
            jobs = [self.trial_job(t.number, self.space.suggest(t)) for t in trials]
            self.launch(jobs, trials[0].number)
            self.tell([t.number for t in trials])

    def finals(self) -> dict[str, Any]:
        best = self.study.best_trial  # ValueError when no trial completed: nothing to re-run
        jobs = [
            self.final_job(kind, s, best.params if kind == "tuned" else None)
            for kind in ("tuned", "default")
            for s in self.plan.seeds
        ]
        for i in range(0, len(jobs), self.plan.n_jobs):
            self.launch(jobs[i : i + self.plan.n_jobs], self.plan.n_trials + i)
        return {"number": best.number, "value": best.value, "params": best.params}

    def run(self, default: dict[str, Any] | None = None) -> dict[str, Any]:
        """Search, then the finals; returns (and writes to ``tune.json``) the study's summary."""
        started = time.perf_counter()
        if not self.study.trials:
            if default is None:
                log.warning("the default setting is not a point of the search space: trial 0 is drawn like the others")
            else:
                self.study.enqueue_trial(default)  # trial 0: the default setting, so tuning can only select up from it
        self.resume_running()
        self.search()
        best = self.finals()
        summary = {
            "best": best,
            "n_trials": self.plan.n_trials,
            "seeds": list(self.plan.seeds),
            "states": {s.name: sum(t.state == s for t in self.study.trials) for s in TrialState if s.is_finished()},
            "trials": [
                {
                    "number": t.number,
                    "state": t.state.name,
                    "value": t.value,
                    "params": t.params,
                    "dir": trial_dir(t.number),
                }
                for t in self.study.trials
            ],
            "finals": {kind: [final_dir(kind, s) for s in self.plan.seeds] for kind in ("tuned", "default")},
            "session_seconds": time.perf_counter() - started,  # this invocation's (a resumed study: since the resume)
            "trial_seconds": sum(
                (t.datetime_complete - t.datetime_start).total_seconds()
                for t in self.study.trials
                if t.datetime_complete is not None and t.datetime_start is not None
            ),
        }
        (self.sweep_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
        return summary
