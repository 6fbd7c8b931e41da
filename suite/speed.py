"""One point of a speed sweep: a model's time, memory and FLOPs at one sequence length, no training.

Used as ``job=speed`` (see ``conf/experiment/speed_vs_length.yaml``). Every model goes through
the same harness: warm-up, then interleaved timed repeats with the device synchronised;
throughput counts real (non-pad) tokens. A point longer than ``max_len`` is recorded as
``skipped``; one whose first step shows it cannot finish inside ``time_budget_s`` as
``timeout``; one that runs out of device memory as ``oom``. The sweep goes on.
"""
from __future__ import annotations

import time
from typing import Any

import torch
from omegaconf import DictConfig

from suite import numerics
from suite.failures import PointSkipped, PointTimeout
from suite.measure import count_flops, matmul_peak_flops, peak_memory, time_calls
from suite.models.model import count_parameters
from suite.train import sync
from suite.types import Batch


def one_batch(task: Any, batch_size: int, seed: int) -> Batch:
    """The first training batch of the task (real data, real padding)."""
    return next(iter(task.loaders(batch_size, seed, eval_batch_size=batch_size)["train"]))


def measure_model(model: torch.nn.Module, task: Any, batch: Batch, device: torch.device, warmup: int, repeats: int, time_budget_s: float, precision: str = "fp32", min_time_s: float = 0.0) -> dict[str, float]:
    """Training-step and inference time, latency per sequence, peak memory and FLOPs of one model on one batch.

    ``precision`` ('fp32' or 'bf16') is the autocast of the forward passes, as in training.
    """
    batch = batch.to(device)
    single = Batch(batch.inputs[:1], batch.targets[:1], None if batch.pad_mask is None else batch.pad_mask[:1])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train_step() -> None:
        model.train()
        optimizer.zero_grad(set_to_none=True)
        with numerics.autocast(precision, device):
            loss = task.loss(model, batch)
        loss.backward()
        optimizer.step()

    def infer(b: Batch = batch):
        def run() -> None:
            model.eval()
            with torch.inference_mode(), numerics.autocast(precision, device):
                model(b.inputs, b.pad_mask)

        return run

    sync(device)
    start = time.perf_counter()
    train_step()  # also the first warm-up; its time predicts the point's cost
    sync(device)
    first = time.perf_counter() - start
    predicted = first * (warmup + repeats) * 2.5  # training, inference and latency, generously
    if predicted > time_budget_s:
        raise PointTimeout(f"first training step took {first:.1f}s; the point would need ~{predicted:.0f}s > budget {time_budget_s:.0f}s")
    times = time_calls({"train": train_step, "infer": infer(), "latency": infer(single)}, device, warmup=max(0, warmup - 1), repeats=repeats, min_seconds=min_time_s)
    tokens = batch.n_tokens
    return {
        "train_tokens_per_s": tokens / times["train"].median,
        "train_items_per_s": batch.n_items / times["train"].median,
        "infer_tokens_per_s": tokens / times["infer"].median,
        "infer_items_per_s": batch.n_items / times["infer"].median,
        "train_step_ms": times["train"].median * 1e3,
        "train_step_iqr_ms": times["train"].spread * 1e3,
        "infer_ms": times["infer"].median * 1e3,
        "infer_iqr_ms": times["infer"].spread * 1e3,
        "latency_ms": times["latency"].median * 1e3,
        "latency_iqr_ms": times["latency"].spread * 1e3,
        "ms_per_token_train": times["train"].median * 1e3 / tokens,
        "peak_mem_train_bytes": float(peak_memory(train_step, device)),
        "peak_mem_infer_bytes": float(peak_memory(infer(), device)),
        "flops_train_step": float(count_flops(train_step)),
        "flops_infer": float(count_flops(infer())),
        "batch_size": float(batch.n_items),
        "timed_rounds": float(len(times["train"].samples)),
        "tokens": float(tokens),
    }


def speed_job(cfg: DictConfig, device: torch.device, run_dir: Any, tracker: Any, batch_size: int = 8, warmup: int = 2, repeats: int = 5, time_budget_s: float = 300.0, max_len: int = 8192, measure_peak: bool = True, precision: str = "auto", min_time_s: float = 5.0) -> dict[str, Any]:
    """Measure the configured model at ``task.seq_len``; returns the record's fields.

    Args:
        batch_size: sequences per timed batch.
        warmup, repeats: untimed and timed calls per figure (at least).
        min_time_s: keep timing rounds until they span this many seconds, so the median covers
            the machine's drift rather than one moment of it.
        time_budget_s: a point predicted to take longer is recorded as 'timeout'.
        max_len: longest length measured on this machine (longer points: 'skipped').
        measure_peak: also time a large matmul in the point's precision, the denominator of MFU.
        precision: 'auto' (bf16 where fast), 'fp32' or 'bf16': autocast of the timed passes.
    """
    precision = numerics.resolve_precision(precision, device)
    seq_len = int(cfg.task.seq_len)
    if seq_len > max_len:
        raise PointSkipped(f"seq_len {seq_len} is above this machine's cap job.max_len={max_len}")
    from hydra.utils import instantiate

    task = instantiate(cfg.task)
    task.setup()
    model = task.build_model(cfg.model).to(device)
    figures = measure_model(model, task, one_batch(task, batch_size, cfg.seed), device, warmup, repeats, time_budget_s, precision, min_time_s)
    if measure_peak:
        figures["machine_peak_flops"] = matmul_peak_flops(device, dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
        figures["mfu_train"] = figures["flops_train_step"] / (figures["train_step_ms"] / 1e3) / figures["machine_peak_flops"]
    tracker.summary({f"speed/{k}": v for k, v in figures.items()})
    return {"status": "ok", "dataset": task.dataset, "seq_len": task.seq_len(), "params": count_parameters(model), "speed": figures, "steps": 0, "precision": precision}
