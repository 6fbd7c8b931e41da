"""A trial's side of the study: each validation reported to the stored study, and the run stopped when pruned."""

from __future__ import annotations

import logging

import optuna

from suite.training.callbacks import Callback
from suite.training.state import FitState
from suite.tune.study import STUDY_NAME, storage

log = logging.getLogger("suite.tune")

PRUNED = "pruned"
"""The fit's ``stop_reason`` when the pruner stopped it (the record keeps it; the study is told PRUNED)."""


class ReportToStudy(Callback):
    """Reports the validation primary metric after every epoch to trial ``trial`` of the study at ``storage_url``,
    and stops the fit (``stop_reason='pruned'``) when the study's pruner says so.

    Args:
        storage_url: the study's RDB URL (``suite.tune.study.storage_url``); None, or ``trial`` None: a run outside a
            study, nothing reported.
        trial: the trial's number in the study.
        pruner: the study's pruner (the same config the sweeper gives its study).
    """

    def __init__(self, storage_url: str | None, trial: int | None, pruner: optuna.pruners.BasePruner | None = None):
        self.storage_url, self.number, self.pruner = storage_url, trial, pruner
        self.trial: optuna.trial.Trial | None = None

    def on_fit_start(self, state: FitState) -> None:
        if self.storage_url is None or self.number is None or not state.world.main:
            return
        store = storage(self.storage_url)
        study = optuna.load_study(
            study_name=STUDY_NAME, storage=store, pruner=self.pruner, sampler=optuna.samplers.RandomSampler()
        )
        trial_id = store.get_trial_id_from_study_id_trial_number(store.get_study_id_from_name(STUDY_NAME), self.number)
        self.trial = optuna.trial.Trial(study, trial_id)

    def on_validation_end(self, state: FitState) -> None:
        if self.trial is None:
            return
        value = state.val[state.primary]
        # Optuna keeps the first report of a step: a resumed trial re-reporting an epoch changes nothing.
        self.trial.report(value, step=state.epoch)
        if self.trial.should_prune() and state.stop_reason is None:
            log.info(
                "trial %d pruned after epoch %d (validation %s %.4g)", self.number, state.epoch, state.primary, value
            )
            state.stop_reason = PRUNED
