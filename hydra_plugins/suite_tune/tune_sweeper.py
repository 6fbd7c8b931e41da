"""``hydra/sweeper=tune``: an Optuna study driven by ask and tell, each trial launched by the configured launcher.

Hydra imports every module under ``hydra_plugins`` at start-up, so this one imports nothing heavy: the work is in
``suite.tune.sweep``.
"""

from __future__ import annotations

from typing import Any, Sequence

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class TuneSweeper(Sweeper):
    """Runs ``n_trials`` trials of the model family's search space, ``n_jobs`` at a time, then the best setting and
    the default with ``seeds`` (``suite.tune.driver``).

    Args:
        n_trials: trials of the search (the default setting is trial 0).
        n_jobs: trials launched together (the launcher runs them in parallel: ``hydra/launcher=joblib``).
        seeds: the final runs' seeds, for the best setting and for the default.
        sampler, pruner: Optuna's (instantiated from config; seeded TPE and the median pruner by default).
        spaces: the search space of each model family, by ``model.name`` (``conf/tune/<family>.yaml``).
    """

    def __init__(
        self, n_trials: int, n_jobs: int, seeds: Sequence[int], sampler: Any, pruner: Any, spaces: Any
    ) -> None:
        self.n_trials, self.n_jobs, self.seeds = int(n_trials), int(n_jobs), tuple(int(s) for s in seeds)
        self.sampler, self.pruner, self.spaces = sampler, pruner, spaces
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Any = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        from hydra.core.plugins import Plugins

        self.config, self.hydra_context = config, hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        from suite.tune.sweep import run_sweep

        return run_sweep(self, arguments)
