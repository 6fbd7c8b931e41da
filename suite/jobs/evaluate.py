"""``job=evaluate``: score saved weights on 'val' and/or 'test' with the configured task, e.g. another decoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import prepare
from suite.jobs.train import kept_predictions, written_artifacts
from suite.runtime.tracking import Tracker
from suite.training.checkpoint import read_weights
from suite.types import EvaluationVariant, Task


def load_weights(model: torch.nn.Module, checkpoint: str | Path, device: torch.device) -> None:
    """Load a training run's ``checkpoints/best.pt`` into ``model``, or say why it cannot be."""
    path = Path(checkpoint)
    weights = read_weights(path, device)
    try:
        model.load_state_dict(weights)
    except RuntimeError as err:
        raise ValueError(
            f"checkpoint {path} does not fit this model: compose it with the task, model and vocabulary overrides "
            f"of the run that trained it ({err})"
        ) from err


def evaluation_task(task_cfg: DictConfig) -> Task:
    """The configured task as it scores saved weights: its ``for_evaluation`` variant where it has one."""
    task = instantiate(task_cfg)
    return task.for_evaluation() if isinstance(task, EvaluationVariant) else task


def evaluate_job(
    cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker, checkpoint: str, splits: list[str]
) -> dict[str, Any]:
    """Score trained weights on ``splits`` ('val', 'test'); returns the record's fields.

    The task scores validation as it scores test (a decoding task decodes it with ``task.search``,
    where training uses the cheaper ``task.val_search``), so a setting chosen on 'val' alone is
    the one 'test' is scored with.
    """
    unknown = sorted(set(splits) - {"val", "test"})
    if unknown or not splits:
        raise ValueError(f"job.splits takes 'val' and/or 'test', got {list(splits)}")
    prepared = prepare(cfg, device, evaluation_task(cfg.task))
    task, model = prepared.task, prepared.model
    load_weights(model, checkpoint, device)
    trainer = instantiate(cfg.trainer)
    loaders = task.loaders(trainer.batch_size, cfg.seed, eval_batch_size=trainer.eval_batch_size)
    metrics: dict[str, float] = {}
    speed: dict[str, float] = {}
    predictions: list[str] = []
    labels: dict[str, int] = {}
    for split in splits:
        scores, speed = trainer.evaluate(model, task, loaders[split], device)
        metrics |= scores if split == "test" else {f"val_{k}": v for k, v in scores.items()}
        if split == "test":
            predictions, labels = kept_predictions(task, run_dir)
    artifacts = predictions + written_artifacts(task, model, run_dir, device)
    tracker.summary({(f"val/{k[4:]}" if k.startswith("val_") else f"test/{k}"): v for k, v in metrics.items()})
    return dict(
        **prepared.ok_fields(),
        metrics=metrics,
        speed=speed,
        train_seconds=0.0,
        steps=0,
        epochs=0,
        stop_reason="evaluated",
        scored_with=task.evaluation_setting() if isinstance(task, EvaluationVariant) else None,
        **trainer.choice(device, model).fields(),
        artifacts=artifacts,
        test_label_counts=labels,
    )
