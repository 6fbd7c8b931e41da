"""The trained language model a job works on: saved weights (``job.checkpoint``), or a training run first.

With no checkpoint the job trains exactly as ``job=train`` does (its record fields come along:
test and validation metrics, steps, speed) and then works on the best weights it saved, so one
command trains a model and samples from it or measures it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.evaluate import load_weights
from suite.jobs.prepare import prepare
from suite.jobs.train import train_job
from suite.tracking import Tracker
from suite.types import LanguageTask


def language_task(cfg: DictConfig, job: str) -> LanguageTask:
    """The configured task (not yet set up); an error naming ``job`` when it is not a language-modelling task."""
    task = instantiate(cfg.task)
    if not isinstance(task, LanguageTask):
        raise ValueError(f"job={job} needs a language-modelling task (task=language_model), got task={cfg.task.name}")
    return task


def trained_model(cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker, checkpoint: str | None, job: str) -> tuple[LanguageTask, torch.nn.Module, dict[str, Any]]:
    """(task, model in eval mode with trained weights, record fields): from ``checkpoint``, or trained here first."""
    fields: dict[str, Any] = {}
    if checkpoint is None:
        language_task(cfg, job)  # refuse a wrong task before training for minutes
        fields = train_job(cfg, device, run_dir, tracker)
        checkpoint = str(run_dir / "checkpoints" / "best.pt")
    prepared = prepare(cfg, device, language_task(cfg, job))
    load_weights(prepared.model, checkpoint, device)
    if not fields:
        fields = dict(**prepared.ok_fields(), train_seconds=0.0, steps=0, epochs=0, stop_reason="evaluated")
    return prepared.task, prepared.model.eval(), fields
