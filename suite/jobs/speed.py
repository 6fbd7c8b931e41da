"""``job=speed``: one point of a speed sweep, a model's time, memory and FLOPs at its task's length; no training.

Every model of every task goes through the same harness (``suite.measure.harness``). A point longer than ``max_len`` is
recorded as ``skipped``; one whose first calls show it cannot finish inside ``time_budget_s`` as
``timeout``; one that runs out of device memory as ``oom``. The sweep goes on.
"""

from __future__ import annotations

from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import prepare
from suite.measure.flops import matmul_peak
from suite.measure.harness import first_batch, measure_model, trainer_update
from suite.runtime import numerics
from suite.runtime.failures import PointSkipped


def speed_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Any,
    tracker: Any,
    batch_size: int = 8,
    warmup: int = 2,
    repeats: int = 5,
    time_budget_s: float = 300.0,
    max_len: int = 8192,
    measure_peak: bool = True,
    precision: str = "auto",
    min_time_s: float = 5.0,
) -> dict[str, Any]:
    """Measure the configured model at its task's length (``task.seq_len()``); returns the record's fields.

    Args:
        batch_size: sequences per timed batch.
        warmup, repeats: untimed and timed calls per figure (at least).
        min_time_s: keep timing rounds until they span this many seconds, so the median covers
            the machine's drift rather than one moment of it.
        time_budget_s: a point predicted to take longer is recorded as 'timeout'.
        max_len: longest length measured on this machine (longer points: 'skipped').
        measure_peak: also time a large matmul in the point's precision, the denominator of MFU.
        precision: 'auto' (per model family on this device: ``numerics.choose``), 'fp32' or 'bf16': autocast of the
            timed passes.
    """
    numerics.choose(precision, device)  # a bad setting fails before any data is read
    task = instantiate(cfg.task)
    if (
        length := task.seq_len()
    ) is not None and length > max_len:  # known from the config: no data read for a skipped point
        raise PointSkipped(f"seq_len {length} is above this machine's cap job.max_len={max_len}")
    prepared = prepare(cfg, device, task)
    choice = numerics.choose(precision, device, prepared.model)
    precision = choice.precision
    figures = measure_model(
        prepared.model,
        task,
        first_batch(task, batch_size, cfg.seed),
        device,
        trainer_update(cfg, prepared.model),
        warmup,
        repeats,
        time_budget_s,
        precision,
        min_time_s,
    )
    if measure_peak:
        peak = matmul_peak(device, dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
        figures["machine_peak_flops"], figures["machine_peak_spread"] = peak.flops, peak.spread
        figures["mfu_train"] = (
            figures["flops_train_step"] / (figures["train_step_ms"] / 1e3) / figures["machine_peak_flops"]
        )
    tracker.summary({f"speed/{k}": v for k, v in figures.items()})
    return {**prepared.ok_fields(), "speed": figures, "steps": 0, **choice.fields()}
