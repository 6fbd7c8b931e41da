"""``hydra/sweeper=every_point`` (the default): Hydra's basic sweeper, with every job's directory fixed before any runs.

Hydra imports every module under ``hydra_plugins`` at start-up, so this one imports nothing heavy: the work is in
``suite.runtime.sweep_dirs``.
"""

from __future__ import annotations

from typing import Any, Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


class EveryPointSweeper(BasicSweeper):
    """Hydra's ``basic`` sweeper (the same settings: ``max_batch_size``, ``params``), except that before launching it
    resolves every job's directory, names in it the swept settings that the configured ``hydra.sweep.subdir`` leaves
    out where two jobs would share one, and refuses a sweep whose job would write over another configuration's
    record, naming both, before any job runs."""

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        """Composed once per job in ``sweep`` (the directories need it): not a second time here."""

    def sweep(self, arguments: list[str]) -> Any:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        from suite.runtime.sweep_dirs import SweepCollision, placed

        assert self.config is not None and self.hydra_context is not None
        parser = OverridesParser.create(config_loader=self.hydra_context.config_loader)
        batches = self.split_arguments(parser.parse_overrides(self._parse_config() + arguments), self.max_batch_size)
        try:
            jobs = placed(self.config, self.hydra_context.config_loader, [job for batch in batches for job in batch])
        except SweepCollision as err:  # one line, before any job runs: nothing was written
            raise SystemExit(f"SweepCollision: {err}") from None
        size = self.max_batch_size or len(jobs) or 1
        # The parent launches self.overrides batch by batch; the placed jobs carry their directory as overrides.
        self.overrides = [jobs[i : i + size] for i in range(0, len(jobs), size)]
        self.batch_index = 0
        return self.launch_all()

    def launch_all(self) -> Any:
        """BasicSweeper.sweep's launching loop, over the placed jobs."""
        from pathlib import Path

        from omegaconf import OmegaConf

        assert self.config is not None and self.launcher is not None
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        returns, initial_job_idx = [], 0
        while not self.is_done():
            batch = self.get_job_batch()
            results = self.launcher.launch(batch, initial_job_idx=initial_job_idx)
            for r in results:
                _ = r.return_value  # re-raises a job's exception, as Hydra's basic sweeper does
            initial_job_idx += len(batch)
            returns.append(results)
        return returns
