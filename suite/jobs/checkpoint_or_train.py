"""The trained language model a job works on: saved weights (``job.checkpoint``), or a training run first.

With no checkpoint the job trains exactly as ``job=train`` does (its record fields come along:
test and validation metrics, steps, speed) and then works on its best weights, in memory, with the task it
prepared (no second read of the data or fit of the tokenizer), so one
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
from suite.jobs.train import train
from suite.runtime.tracking import Tracker
from suite.types import LanguageTask


def language_task(cfg: DictConfig, job: str) -> LanguageTask:
    """The configured task (not yet set up); an error naming ``job`` when it is not a language-modelling task."""
    task = instantiate(cfg.task)
    if not isinstance(task, LanguageTask):
        raise ValueError(f"job={job} needs a language-modelling task (task=language_model), got task={cfg.task.name}")
    return task


def trained_model(
    cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker, checkpoint: str | None, job: str
) -> tuple[LanguageTask, torch.nn.Module, dict[str, Any]]:
    """(task, model in eval mode with trained weights, record fields): from ``checkpoint``, or trained here first."""
    task = language_task(cfg, job)  # a wrong task is refused before any data is read or any training
    if checkpoint is None:
        prepared, model, fields = train(
            cfg, device, run_dir, tracker, task
        )  # the best weights, as job=train leaves them
        return prepared.task, model.eval(), fields
    prepared = prepare(cfg, device, task)
    load_weights(prepared.model, checkpoint, device)
    fields = dict(**prepared.ok_fields(), train_seconds=0.0, steps=0, epochs=0, stop_reason="evaluated")
    return prepared.task, prepared.model.eval(), fields
