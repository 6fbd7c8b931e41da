"""``job=train``: fit on the training split, select on validation, evaluate test once."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import prepare
from suite.tracking import Tracker
from suite.types import WritesArtifacts


def written_artifacts(task: Any, model: torch.nn.Module, run_dir: Path, device: torch.device) -> list[str]:
    """The files the task writes about the finished run (where it writes any), relative to ``run_dir``."""
    paths = task.write_artifacts(model, run_dir, device) if isinstance(task, WritesArtifacts) else []
    return [str(Path(p).relative_to(run_dir)) for p in paths]


def train_job(cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker) -> dict[str, Any]:
    """Fit on the training split, select on validation, evaluate test once; returns the record's fields."""
    prepared = prepare(cfg, device)
    task, model = prepared.task, prepared.model
    trainer = instantiate(cfg.trainer)
    fit = trainer.fit(model, task, device, cfg.seed, checkpoint_dir=run_dir / "checkpoints", tracker=tracker)
    artifacts = written_artifacts(task, model, run_dir, device)
    tracker.summary({f"test/{k}": v for k, v in fit.test.items()} | {f"speed/{k}": v for k, v in fit.speed.items()} | {"params": prepared.params})
    return dict(
        **prepared.ok_fields(),
        metrics={**fit.test, **{f"val_{k}": v for k, v in fit.val.items()}},
        speed=fit.speed,
        train_seconds=fit.train_seconds,
        steps=fit.steps,
        epochs=fit.epochs,
        stop_reason=fit.stop_reason,
        planned_steps=fit.planned_steps,
        precision=fit.precision,
        artifacts=artifacts,
    )
