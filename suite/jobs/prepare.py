"""The set-up every job shares: the task with its data, the model on the device, and the record fields they fix."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn

from suite.data.datadir import identity, reading
from suite.models.classifier import count_parameters
from suite.models.declaration import declare
from suite.runtime.compose import importable
from suite.training.trainer import RESUME_MAY_CHANGE
from suite.types import Task

log = logging.getLogger("suite.jobs")


def model_label(model_cfg: DictConfig) -> str:
    """The model's name in records and logs; a copy head is part of it ('transformer+copy'): it changes the
    architecture."""
    return f"{model_cfg.name}+copy" if model_cfg.get("copy") is not None else str(model_cfg.name)


def ready(task: Task) -> Task:
    """The task with its data loaded (``setup`` is idempotent)."""
    task.setup()
    return task


def model_on(task: Task, model_cfg: DictConfig, device: torch.device) -> nn.Module:
    """The task's model (its embedding and head around the configured backbone), on ``device``."""
    return task.build_model(model_cfg).to(device)


@dataclass
class Prepared:
    """A task with its data and a model on the device: what a job starts from; ``data``, what the task read
    (``suite.data.datadir.identity``)."""

    task: Task
    model: nn.Module
    params: int
    data: dict[str, str] = field(default_factory=dict)

    def ok_fields(self) -> dict[str, Any]:
        """The record fields every finished job on a task shares."""
        return dict(
            status="ok",
            dataset=self.task.dataset,
            seq_len=self.task.seq_len(),
            params=self.params,
            split_sizes=self.task.split_sizes(),
            data=self.data,
            primary_metric=self.task.primary_metric,
            declaration=declared_fields(self.model, self.task.seq_len()),
        )


def declared_fields(model: nn.Module, length: int | None) -> dict[str, Any]:
    """What the model's backbone (a classifier's or language model's ``backbone``, an encoder-decoder's ``encoder``)
    declares, with its state size at the task's length; empty for a model without one (Lead-k)."""
    backbone = getattr(model, "backbone", None) or getattr(model, "encoder", None)
    if not isinstance(backbone, nn.Module):
        return {}
    return declare(backbone, length or 1024).fields()


def configured_task(task_cfg: DictConfig) -> Task:
    """The configured task, instantiated (no data read yet: ``ready`` reads it); an unimportable target is named."""
    importable(task_cfg, "task")
    return instantiate(task_cfg)


def prepare(cfg: DictConfig, device: torch.device, task: Task | None = None) -> Prepared:
    """Instantiate ``cfg.task`` (or take ``task``, e.g. a variant of it), load its data, build ``cfg.model`` on
    ``device``; the files the task read are named by their identity (once a run: the report groups runs on it)."""
    with reading() as read:
        task = ready(task if task is not None else configured_task(cfg.task))
    model = model_on(task, cfg.model, device)
    params = count_parameters(model)
    log.info(
        "%s/%s on %s: %d parameters, splits %s", task.name, model_label(cfg.model), device, params, task.split_sizes()
    )
    return Prepared(task, model, params, identity(read))


def planned_fields(task_cfg: DictConfig) -> dict[str, Any]:
    """What a task's configuration fixes before any data is read: the dataset and the length.

    For the record of a run that failed before its job could say more, so a failed point keeps
    its place on a length axis. Instantiating a task reads no data; a task that cannot even be
    instantiated fixes nothing.
    """
    try:
        task = instantiate(task_cfg)
        return {"dataset": str(task.dataset), "seq_len": task.seq_len()}
    except Exception:  # noqa: BLE001 - the record already holds the run's own error
        return {}


def resume_identity(cfg: Any) -> dict[str, Any]:
    """What a ``last.pt`` must match to be resumed: the task, model, seed and the trainer settings that change the
    computation."""
    trainer = {k: v for k, v in OmegaConf.to_container(cfg.trainer, resolve=True).items() if k not in RESUME_MAY_CHANGE}
    return {
        "task": OmegaConf.to_container(cfg.task, resolve=True),
        "model": OmegaConf.to_container(cfg.model, resolve=True),
        "seed": cfg.seed,
        "trainer": trainer,
    }
