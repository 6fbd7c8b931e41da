"""The Hydra entry point: compose, build, fit, evaluate, record.

    python -m suite.run task=sentiment model=lstm trainer=quick
    python -m suite.run -m task=sentiment model=transformer,lstm,gru,rnn seed=0,1

Every run writes ``result.json`` into its Hydra run directory, whatever happens: a run
that fails, diverges or runs out of memory is recorded with that status, and a multirun
goes on to the next job.
"""
from __future__ import annotations

import logging
import random
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from suite import numerics
from suite.datadir import DataError
from suite.models.model import count_parameters
from suite.results import RESULT_FILE, ResultRecord, device_description, git_commit, library_versions, read_result
from suite.tracking import NullTracker, Tracker
from suite.failures import Interrupted, RunFailure
from suite.train import resume_identity
from suite.types import WritesArtifacts

log = logging.getLogger("suite.run")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_device(name: str) -> torch.device:
    """'auto' picks CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def is_oom(err: BaseException) -> bool:
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


def model_label(model_cfg: DictConfig) -> str:
    """The model's name in records and logs; a copy head is part of it ('transformer+copy'): it changes the architecture."""
    return f"{model_cfg.name}+copy" if model_cfg.get("copy") is not None else str(model_cfg.name)


def make_tracker(cfg: DictConfig, run_dir: Path, multirun: bool) -> Tracker:
    """The configured logger, with the run's directory, sweep group, tags and full config."""
    if cfg.logger is None or cfg.logger.get("_target_") is None:
        return NullTracker()
    group = cfg.get("group") or (HydraConfig.get().sweep.dir if multirun else None)
    # Partial first: the composed config passed along holds _target_ nodes that must stay data.
    return instantiate(cfg.logger, _partial_=True)(
        dir=run_dir,
        group=group,
        tags=[cfg.task.name, model_label(cfg.model)],
        run_config=OmegaConf.to_container(cfg, resolve=True),
        name=f"{cfg.task.name}-{model_label(cfg.model)}-s{cfg.seed}",
    )


def ok_fields(task: Any, params: int) -> dict[str, Any]:
    """The record fields every finished job on a task shares."""
    return dict(status="ok", dataset=task.dataset, seq_len=task.seq_len(), params=params, split_sizes=task.split_sizes())


def train_job(cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker) -> dict[str, Any]:
    """Fit on the training split, select on validation, evaluate test once; returns the record's fields."""
    task = instantiate(cfg.task)
    task.setup()
    model = task.build_model(cfg.model).to(device)
    params = count_parameters(model)
    log.info("%s/%s on %s: %d parameters, splits %s", task.name, model_label(cfg.model), device, params, task.split_sizes())
    trainer = instantiate(cfg.trainer)
    fit = trainer.fit(model, task, device, cfg.seed, checkpoint_dir=run_dir / "checkpoints", tracker=tracker, identity=resume_identity(cfg))
    test, infer = trainer.score(fit.model, task, device, cfg.seed, "test")
    speed = fit.speed | infer
    artifacts = task.write_artifacts(fit.model, run_dir, device) if isinstance(task, WritesArtifacts) else []
    tracker.summary({f"test/{k}": v for k, v in test.items()} | {f"speed/{k}": v for k, v in speed.items()} | {"params": params})
    return dict(
        **ok_fields(task, params),
        metrics={**test, **{f"val_{k}": v for k, v in fit.val.items()}},
        speed=speed,
        train_seconds=fit.train_seconds,
        steps=fit.steps,
        epochs=fit.epochs,
        stop_reason=fit.stop_reason,
        planned_steps=fit.planned_steps,
        precision=fit.precision,
        resumed_at=fit.resumed_at,
        artifacts=[str(Path(p).relative_to(run_dir)) for p in artifacts],
    )


def load_weights(model: torch.nn.Module, checkpoint: str | Path, device: torch.device) -> None:
    """Load a training run's ``checkpoints/best.pt`` into ``model``, or say why it cannot be."""
    path = Path(checkpoint)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}: a training run writes its best weights to <run dir>/checkpoints/best.pt")
    try:
        model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    except RuntimeError as err:
        raise ValueError(f"checkpoint {path} does not fit this model: compose it with the task, model and vocabulary overrides of the run that trained it ({err})") from err


def evaluation_task(task_cfg: DictConfig) -> Any:
    """The task, with validation decoded by ``task.search`` where the task decodes."""
    task_cfg = task_cfg.copy()
    if "search" in task_cfg and "val_search" in task_cfg:
        task_cfg.val_search = task_cfg.search
    return instantiate(task_cfg)


def evaluate_job(cfg: DictConfig, device: torch.device, run_dir: Path, tracker: Tracker, checkpoint: str, splits: list[str]) -> dict[str, Any]:
    """Score trained weights on ``splits`` ('val', 'test') with the configured task, e.g. another decoding.

    Validation is decoded with ``task.search`` too (training decodes it with the cheaper
    ``task.val_search``), so a setting chosen on 'val' alone is the one 'test' is scored with.
    """
    unknown = sorted(set(splits) - {"val", "test"})
    if unknown or not splits:
        raise ValueError(f"job.splits takes 'val' and/or 'test', got {list(splits)}")
    task = evaluation_task(cfg.task)
    task.setup()
    model = task.build_model(cfg.model).to(device)
    load_weights(model, checkpoint, device)
    trainer = instantiate(cfg.trainer)
    loaders = task.loaders(trainer.batch_size, cfg.seed, eval_batch_size=trainer.eval_batch_size)
    metrics: dict[str, float] = {}
    speed: dict[str, float] = {}
    for split in splits:
        scores, speed = trainer.evaluate(model, task, loaders[split], device)
        metrics |= scores if split == "test" else {f"val_{k}": v for k, v in scores.items()}
    artifacts = task.write_artifacts(model, run_dir, device) if isinstance(task, WritesArtifacts) else []
    tracker.summary({(f"val/{k[4:]}" if k.startswith("val_") else f"test/{k}"): v for k, v in metrics.items()})
    return dict(
        **ok_fields(task, count_parameters(model)),
        metrics=metrics,
        speed=speed,
        train_seconds=0.0,
        steps=0,
        epochs=0,
        stop_reason="evaluated",
        precision=numerics.resolve_precision(trainer.precision, device),
        artifacts=[str(Path(p).relative_to(run_dir)) for p in artifacts],
    )


def failure_status(err: BaseException) -> str:
    """The record status an exception stands for."""
    if isinstance(err, RunFailure):
        return err.status
    return "oom" if is_oom(err) else "failed"


def finished(run_dir: Path, config: dict[str, Any]) -> ResultRecord | None:
    """The record already in ``run_dir`` if it finished ok with this very config (so a re-run skips it)."""
    path = run_dir / RESULT_FILE
    if not path.exists():
        return None
    try:
        record = read_result(path)
    except (ValueError, TypeError):
        return None
    return record if record.status == "ok" and record.config == config else None


def configured_length(cfg: DictConfig) -> int | None:
    """The input length a task is configured for (its records' ``seq_len`` when a run produced none)."""
    for key in ("task.seq_len", "task.max_len", "task.max_source_len"):
        if (value := OmegaConf.select(cfg, key, default=None)) is not None:
            return int(value)
    return None


def execute(cfg: DictConfig, run_dir: Path, multirun: bool = False, attention: str | None = None, resume: bool = True) -> ResultRecord:
    """Run the configured job (``cfg.job``) and return its record, also written to ``run_dir/result.json``.

    With ``resume``, a run directory that already holds an ok record of the same composed
    config is not run again: an interrupted sweep loses nothing and repeats nothing.
    """
    config = OmegaConf.to_container(cfg, resolve=True)
    if resume and (done := finished(run_dir, config)) is not None:
        log.info("already finished with this config: %s", run_dir / RESULT_FILE)
        return done
    started = time.perf_counter()
    flushed = numerics.set_flush_denormals(bool(cfg.get("flush_denormals", True)))
    seed_everything(cfg.seed)
    device = resolve_device(cfg.device)
    log.info("denormals flushed: %s; fast bf16 on %s: %s", flushed, device, numerics.fast_bf16(device))
    base: dict[str, Any] = dict(
        task=cfg.task.name,
        dataset=str(cfg.task.get("dataset") or cfg.task.get("problem") or ""),
        model=model_label(cfg.model),
        seed=cfg.seed,
        attention=attention,
        device=device_description(device),
        numerics=numerics.describe(device, flushed),
        versions=library_versions(),
        git_commit=git_commit(),
        config=config,
    )
    tracker: Tracker = NullTracker()
    err_seen: BaseException | None = None
    try:
        tracker = make_tracker(cfg, run_dir, multirun)
        job = instantiate(cfg.job)
        record = ResultRecord(**(base | job(cfg=cfg, device=device, run_dir=run_dir, tracker=tracker)))
    except Exception as err:  # noqa: BLE001 - every failure becomes a record; the sweep goes on
        err_seen, status = err, failure_status(err)
        if status == "failed" and not isinstance(err, DataError):
            log.error("run failed:\n%s", traceback.format_exc())
        # The configured length, so a failed point still has its place on a length axis.
        record = ResultRecord(status=status, error=f"{type(err).__name__}: {err}", seq_len=configured_length(cfg), **base)
    record.wall_seconds = time.perf_counter() - started
    tracker.finish(exit_code=0 if record.status in ("ok", "skipped") else 1)
    record.write(run_dir)
    if isinstance(err_seen, Interrupted):
        err_seen.forward()  # e.g. submitit requeues the job, which then resumes from last.pt
    return record


def summary_line(record: ResultRecord) -> str:
    """The figures of one job in a line: test metrics, or the speed point's, or the error."""
    if record.error:
        return record.error
    if record.metrics:
        shown = [k for k in record.metrics if not k.startswith("val_")] or list(record.metrics)  # validation alone: show it
        return ", ".join(f"{k}={record.metrics[k]:.4g}" for k in shown if not k.endswith("loss"))
    s = record.speed
    if "train_step_ms" in s:
        return (f"L={record.seq_len}{' ' + record.precision if record.precision else ''}: train {s['train_tokens_per_s']:.4g} tok/s, infer {s['infer_tokens_per_s']:.4g} tok/s, "
                f"peak {s['peak_mem_train_bytes'] / 2**20:.4g} MiB train" + (f", MFU {s['mfu_train']:.2%}" if "mfu_train" in s else ""))
    if record.curves:
        return f"L={record.seq_len}: curves " + ", ".join(sorted(record.curves))
    return ""


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    record = execute(cfg, run_dir, multirun, attention=hc.runtime.choices.get("model/attention"))
    print(f"[{record.status}] {record.task}/{record.dataset} {record.model} seed={record.seed}: {summary_line(record)}")
    print(f"result: {run_dir / 'result.json'}")
    if record.status not in ("ok", "skipped") and not multirun:
        sys.exit(1)
    return record.metrics.get(f"val_{cfg.get('objective', 'accuracy')}")


if __name__ == "__main__":
    main()
