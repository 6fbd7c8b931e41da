"""``job=train``: fit on the training split, select on validation, evaluate test once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import Prepared, prepare, resume_identity
from suite.runtime import distributed
from suite.runtime.predictions import write_predictions
from suite.runtime.tracking import Tracker
from suite.types import KeepsPredictions, Task, WritesArtifacts


def written_artifacts(task: Any, model: torch.nn.Module, run_dir: Path, device: torch.device) -> list[str]:
    """The files the task writes about the finished run (where it writes any), relative to ``run_dir``."""
    paths = task.write_artifacts(model, run_dir, device) if isinstance(task, WritesArtifacts) else []
    return [str(Path(p).relative_to(run_dir)) for p in paths]


def kept_predictions(task: Any, run_dir: Path) -> tuple[list[str], dict[str, int]]:
    """Called right after test is scored: its per-example outputs to ``predictions_test.jsonl``, where the task keeps
    them (relative path, as an artifact), and how many of them carry each label (a classifier's; {} for other tasks:
    the report draws the commonest class's share from it)."""
    if not isinstance(task, KeepsPredictions):
        return [], {}
    rows = task.predictions()
    paths = [str(write_predictions(rows, run_dir).relative_to(run_dir))]
    if not rows or not all("label" in row and "prediction" in row for row in rows):
        return paths, {}  # per-document tallies (a language model): no classes
    return paths, dict(sorted(Counter(str(row["label"]) for row in rows).items()))


def self_pretrained(cfg: DictConfig, prepared: Prepared, device: torch.device, run_dir: Path) -> dict[str, Any]:
    """``pretrain=denoise``: the model's embedding and backbone pretrained in place on the task's training inputs
    (``suite.training.pretrain``); the record's ``pretrain`` field ({} without it)."""
    if not cfg.get("pretrain"):  # none, or pretrain=scratch
        return {}
    run = instantiate(cfg.pretrain)
    fields = run(
        prepared.model,
        prepared.task,
        lambda **kw: instantiate(cfg.trainer, **kw),
        device,
        cfg.seed,
        run_dir / "pretrain",
    )
    return {"pretrain": fields}


def train_job(
    cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker, test: bool = True
) -> dict[str, Any]:
    """Fit on the training split, select on validation, evaluate test once with the fitted model; returns the record's
    fields.

    Under torchrun every rank trains; rank 0 alone scores test (each example once) and its record counts.
    ``test=False`` (a tuning trial: ``experiment=tune``) stops after validation: the record holds validation metrics
    only, and test is never looked at while a setting is chosen.
    """
    return train(cfg, device, run_dir, tracker, score_test=test)[2]


def train(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    task: Task | None = None,
    score_test: bool = True,
) -> tuple[Prepared, torch.nn.Module, dict[str, Any]]:
    """``job=train``'s work, for a job that goes on with the result: (the task and model it prepared, the best weights,
    the record's fields)."""
    world = distributed.current()
    prepared = prepare(cfg, device, task)
    task = prepared.task
    pretrained = self_pretrained(cfg, prepared, device, run_dir)
    trainer = instantiate(cfg.trainer)
    fit = trainer.fit(
        prepared.model,
        task,
        device,
        cfg.seed,
        checkpoint_dir=run_dir / "checkpoints",
        tracker=tracker,
        identity=resume_identity(cfg),
        world=world,
    )
    fields = dict(
        **prepared.ok_fields(),
        train_seconds=fit.train_seconds,
        steps=fit.steps,
        epochs=fit.epochs,
        stop_reason=fit.stop_reason,
        planned_steps=fit.planned_steps,
        precision=fit.precision,
        precision_reason=fit.precision_reason,
        resumed_at=fit.resumed_at,
        world_size=world.size,
        backend=world.backend,
        curves=fit.curves,
        convergence=fit.convergence,
        **pretrained,
    )
    if not world.main:
        return prepared, fit.model, fields | {"speed": fit.speed}
    if not score_test:
        return prepared, fit.model, fields | dict(metrics={f"val_{k}": v for k, v in fit.val.items()}, speed=fit.speed)
    test, infer = trainer.score(fit.model, task, device, cfg.seed, "test")
    predictions, labels = kept_predictions(task, run_dir)
    speed = fit.speed | infer
    tracker.summary(
        {f"test/{k}": v for k, v in test.items()}
        | {f"speed/{k}": v for k, v in speed.items()}
        | {"params": prepared.params}
    )
    return (
        prepared,
        fit.model,
        fields
        | dict(
            metrics={**test, **{f"val_{k}": v for k, v in fit.val.items()}},
            speed=speed,
            artifacts=predictions + written_artifacts(task, fit.model, run_dir, device),
            test_label_counts=labels,
        ),
    )
