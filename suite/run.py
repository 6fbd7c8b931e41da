"""The Hydra entry point: compose, seed, pick the device, call the configured job, record.

    python -m suite.run task=sentiment model=lstm trainer=quick
    python -m suite.run -m task=sentiment model=transformer,lstm,gru,rnn seed=0,1

The jobs live in ``suite/jobs/``, one module per ``conf/job/<name>.yaml``. Every run writes
``result.json`` into its Hydra run directory, whatever happens: a run that fails, diverges or
runs out of memory is recorded with that status (a ``suite.runtime.failures.RunFailure`` carries its
own), and a multirun goes on to the next job. A run or sweep without ``hydra.run.dir`` / ``hydra.sweep.dir`` writes
into a directory named by the command's settings, so the same command resumes it (``suite.runtime.names``); every
point of a sweep gets a directory of its own before any runs (``suite.runtime.sweep_dirs``).
"""

from __future__ import annotations

import logging
import os
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

from suite.data.datadir import DataError
from suite.jobs.prepare import model_label, planned_fields
from suite.runtime import distributed, numerics
from suite.runtime.device import resolve_device
from suite.runtime.failures import Interrupted, status_of
from suite.runtime.names import model_id
from suite.runtime.preemption import HeldWhileRecording
from suite.runtime.record import (
    RESULT_FILE,
    ResultRecord,
    device_description,
    git_commit,
    library_versions,
    read_result,
)
from suite.runtime.sweep_dirs import SweepCollision
from suite.runtime.tracking import NullTracker, Tracker

log = logging.getLogger("suite.run")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


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


def existing_record(run_dir: Path) -> ResultRecord | None:
    """The record already in ``run_dir`` (None: none, or a file that is not a record of ours)."""
    path = run_dir / RESULT_FILE
    try:
        return read_result(path) if path.exists() else None
    except (ValueError, TypeError):
        return None


def finished(existing: ResultRecord | None, config: dict[str, Any]) -> ResultRecord | None:
    """``existing`` if it finished ok with this config, but for settings that change nothing computed (so a re-run
    skips it)."""
    from suite.runtime.differences import same_computation

    ok = existing is not None and existing.status == "ok" and same_computation(existing.config, config)
    return existing if ok else None


def refuse_collision(existing: ResultRecord | None, run_dir: Path, config: dict[str, Any]) -> None:
    """Raise ``SweepCollision`` when ``existing`` (``run_dir``'s record) is of another config (the same config
    resumes)."""
    from suite.runtime.differences import computed_differences

    if existing is None or not existing.config or not (differences := computed_differences(existing.config, config)):
        return
    raise SweepCollision(
        f"{run_dir / RESULT_FILE} holds the record of another configuration ({'; '.join(differences[:4])}); "
        "this sweep would overwrite it. Name the swept setting in hydra.sweep.subdir (e.g. "
        "'hydra.sweep.subdir=${hydra.job.num}') or use another hydra.sweep.dir"
    )


def execute(
    cfg: DictConfig, run_dir: Path, multirun: bool = False, attention: str | None = None, resume: bool = True
) -> ResultRecord:
    """Run the configured job (``cfg.job``) and return its record, also written to ``run_dir/result.json``.

    With ``resume``, a run directory that already holds an ok record of the same composed
    config is not run again: an interrupted sweep loses nothing and repeats nothing.
    In a multirun, a directory that holds the record of another config is refused
    (``SweepCollision``): two jobs of one sweep never share a directory.
    """
    config = OmegaConf.to_container(cfg, resolve=True)
    existing = existing_record(Path(run_dir))  # read once: the collision check and the resume both look at it
    if multirun:  # before anything is written: a directory of a sweep holds one job's record
        refuse_collision(existing, Path(run_dir), config)
    world, device_name = distributed.join(cfg.device, float(cfg.get("distributed_timeout_s") or 1800))
    try:
        distributed.require_same_config(config, world)
    except ValueError as err:  # recorded, then the whole world stops: no rank may train on its own settings
        if world.main:
            ResultRecord(
                status="failed",
                error=f"{type(err).__name__}: {err}",
                task=cfg.task.name,
                dataset="",
                model=model_label(cfg.model),
                seed=cfg.seed,
                world_size=world.size,
                backend=world.backend,
                config=config,
            ).write(run_dir)
        raise
    run_dir = Path(distributed.broadcast(str(run_dir), world))  # every rank checkpoints where rank 0 records
    done = (
        finished(existing, config) if resume and world.main else None
    )  # rank 0 keeps its own run_dir through the broadcast
    if distributed.broadcast(done, world) is not None:
        log.info("already finished with this config: %s", run_dir / RESULT_FILE)
        return done
    started = time.perf_counter()
    flushed = numerics.set_flush_denormals(bool(cfg.get("flush_denormals", True)))
    seed_everything(cfg.seed)
    device = resolve_device(device_name)
    log.info(
        "denormals flushed: %s; fast bf16 on %s: %s%s",
        flushed,
        device,
        numerics.fast_bf16(device),
        f"; rank {world.rank} of {world.size} ({world.backend})" if world.launched else "",
    )
    base: dict[str, Any] = dict(
        task=cfg.task.name,
        model=model_label(cfg.model),
        seed=cfg.seed,
        attention=attention,
        device=device_description(device),
        numerics=numerics.describe(device, flushed),
        versions=library_versions(),
        git_commit=git_commit(),
        config=config,
        world_size=world.size,
        backend=world.backend,
    )
    tracker: Tracker = NullTracker()
    err_seen: BaseException | None = None
    with HeldWhileRecording() as signals:
        try:
            tracker = make_tracker(cfg, run_dir, multirun) if world.main else NullTracker()
            job = instantiate(cfg.job)
            record = ResultRecord(**(base | job(cfg=cfg, device=device, run_dir=run_dir, tracker=tracker)))
        except Exception as err:  # noqa: BLE001 - every failure becomes a record; the sweep goes on
            signals.hold()  # e.g. torchrun's SIGTERM to the ranks that outlive a dead one waits for the record
            err_seen, status = err, status_of(err)
            if status == "failed" and not isinstance(err, DataError):
                log.error(
                    "run failed%s:\n%s", f" on rank {world.rank}" if world.distributed else "", traceback.format_exc()
                )
            # What the task's config fixes (dataset, length), so a failed point keeps its place on a length axis.
            record = ResultRecord(
                status=status,
                error=f"{type(err).__name__}: {err}",
                **({"dataset": ""} | planned_fields(cfg.task) | base | getattr(err, "fields", {})),
            )
        signals.hold()
        record.wall_seconds = time.perf_counter() - started
        tracker.finish(exit_code=0 if record.status in ("ok", "skipped") else 1)
        if world.main:  # under torchrun, one record for the whole run
            record.write(run_dir)
        if isinstance(err_seen, Interrupted):
            err_seen.forward()  # e.g. submitit requeues the job, which then resumes from last.pt
    return record


def summary_line(record: ResultRecord) -> str:
    """The figures of one job in a line: test metrics, or the speed point's, or the error."""
    if record.error:
        return record.error
    if record.metrics:
        shown = [k for k in record.metrics if not k.startswith("val_")] or list(
            record.metrics
        )  # validation alone: show it
        return ", ".join(f"{k}={record.metrics[k]:.4g}" for k in shown if not k.endswith("loss"))
    s = record.speed
    if "train_step_ms" in s:
        return (
            f"L={record.seq_len}{' ' + record.precision if record.precision else ''}: train "
            f"{s['train_tokens_per_s']:.4g} tok/s, infer {s['infer_tokens_per_s']:.4g} tok/s, peak "
            f"{s['peak_mem_train_bytes'] / 2**20:.4g} MiB train"
            + (f", MFU {s['mfu_train']:.2%}" if "mfu_train" in s else "")
            + (
                f", generate {s['generate_tokens_per_s']:.4g} tok/s ({s['generate_cache_speedup']:.2f}x the uncached)"
                if "generate_tokens_per_s" in s
                else ""
            )
        )
    if record.curves:
        return f"L={record.seq_len}: curves " + ", ".join(sorted(record.curves))
    return ""


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir = Path(hc.runtime.output_dir)
    record = execute(cfg, run_dir, multirun, attention=hc.runtime.choices.get("model/attention"))
    if int(os.environ.get("RANK", "0")) != 0:
        return None  # rank 0 reports for the torchrun world
    name = model_id(record.model, record.attention)  # 'transformer-local': the attention core is part of the model
    print(f"[{record.status}] {record.task}/{record.dataset} {name} seed={record.seed}: {summary_line(record)}")
    print(f"result: {run_dir / 'result.json'}")
    if record.status not in ("ok", "skipped") and not multirun:
        sys.exit(1)
    return record.metrics.get(f"val_{cfg.get('objective') or record.primary_metric}")  # what a sweeper optimises


if __name__ == "__main__":
    main()
