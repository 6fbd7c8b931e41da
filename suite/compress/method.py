"""The contract every compression method keeps, and what the job hands it.

A method is configured in ``conf/compress/<name>.yaml`` (a ``_target_`` with its settings) and
goes through ``job=compress`` in this order:

    check(model)                  refuse a model it does not apply to, naming the setting (before any work)
    compress(model, context)      the compressed model (a new object: the trained one stays as it is)
    training_task(task, teacher)  the task fine-tuning trains on (a distillation wrapper, or the task)
    callbacks()                   trainer callbacks while fine-tuning (e.g. masks kept applied)
    finish(model)                 after fine-tuning (e.g. masks made permanent)
    save(model, context)          the artefact on disk, whose size the record reports

A method that does not fine-tune has ``fine_tune = None``; one that does holds trainer settings
(merged over the run's ``trainer``), so fine-tuning goes through the one training loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from suite.training.callbacks import Callback
from suite.types import Batch, Task


@dataclass
class Context:
    """What a method may need besides the model.

    Args:
        task: the task, set up (data loaded).
        device: where the model runs.
        seed: the run's seed.
        example: a batch of real inputs (e.g. to trace an export).
        directory: where the method writes its artefact (the run directory's ``compressed/``).
        build_model: builds a fresh model from a model config node (a student).
    """

    task: Task
    device: torch.device
    seed: int
    example: Batch
    directory: Path
    build_model: Any = None


class Method:
    """No-op defaults; a method overrides what it changes.

    Args:
        fine_tune: trainer settings for fine-tuning after compression (None: none).
    """

    name = "method"

    def __init__(self, fine_tune: dict[str, Any] | None = None) -> None:
        self.fine_tune = None if fine_tune is None else dict(fine_tune)  # {}: train with the run's trainer as it is

    def check(self, model: nn.Module) -> None:
        """Raise ``ValueError`` naming the setting when the method does not apply to ``model``."""

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        raise NotImplementedError

    def training_task(self, task: Task, teacher: nn.Module) -> Task:
        return task

    def callbacks(self) -> list[Callback]:
        return []

    def finish(self, model: nn.Module) -> nn.Module:
        return model

    def save(self, model: nn.Module, context: Context) -> Path:
        """The compressed model's state dict (what a deployment would load), as ``model.pt``."""
        path = context.directory / "model.pt"
        torch.save(model.state_dict(), path)
        return path

    def describe(self) -> dict[str, Any]:
        """The method's settings, for the record."""
        return {"method": self.name}
