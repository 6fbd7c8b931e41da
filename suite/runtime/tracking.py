"""Experiment tracking behind one small interface: W&B (offline by default) or nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol


class Tracker(Protocol):
    """Where metrics go during a run."""

    def log(self, metrics: dict[str, float], step: int) -> None: ...

    def summary(self, values: dict[str, Any]) -> None: ...

    def table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        """A table of rows (e.g. generated samples), one list of values per row in ``columns`` order."""
        ...

    def finish(self, exit_code: int = 0) -> None: ...


class NullTracker:
    """Tracks nothing (``logger=none``)."""

    run_dir: str | None = None

    def log(self, metrics: dict[str, float], step: int) -> None:
        pass

    def summary(self, values: dict[str, Any]) -> None:
        pass

    def table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        pass


class WandbTracker:
    """One W&B run per job, finished at job end so a multirun never reuses a run.

    Args:
        project: W&B project.
        mode: 'offline' (default: never touches the network; ``wandb sync`` uploads later),
            'online' or 'disabled'.
        dir: where the run's files go (the Hydra run directory).
        group: the sweep this job belongs to.
        tags: e.g. task and model names.
        run_config: the full composed config.
        name: run name.
    """

    def __init__(
        self,
        project: str,
        mode: str,
        dir: str | Path,
        group: str | None,
        tags: list[str],
        run_config: dict[str, Any],
        name: str | None = None,
    ) -> None:
        import wandb  # imported here: it is slow to import and unused with logger=none

        os.environ.setdefault("WANDB_SILENT", "true")
        Path(dir).mkdir(parents=True, exist_ok=True)
        self._run = wandb.init(
            project=project,
            mode=mode,
            dir=str(dir),
            group=group,
            tags=tags,
            config=run_config,
            name=name,
            reinit="finish_previous",
            settings=wandb.Settings(console="off", x_disable_stats=True),
        )
        self.run_dir = getattr(self._run, "dir", None)

    def log(self, metrics: dict[str, float], step: int) -> None:
        self._run.log(metrics, step=step)

    def summary(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            self._run.summary[key] = value

    def table(self, key: str, columns: list[str], rows: list[list[Any]]) -> None:
        import wandb

        self._run.log({key: wandb.Table(columns=columns, data=rows)})

    def finish(self, exit_code: int = 0) -> None:
        self._run.finish(exit_code=exit_code)
