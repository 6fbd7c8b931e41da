"""The compressed model against the uncompressed one, timed in the same process, interleaved.

Absolute times on a shared machine say more about the moment than about the model; timed
round-robin (``suite.measure.timing.time_calls``), the machine's drift hits both alike and their ratio
means something. Throughput at a batch of ``batch.n_items`` (32 by default) and latency at batch 1.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from suite.measure.harness import head
from suite.measure.timing import time_calls
from suite.runtime import numerics
from suite.types import Batch, Generates, inference

Variant = tuple[nn.Module, str]  # a model and the autocast its passes run under ('fp32' or 'bf16')


def inferring(task: Any, model: nn.Module, batch: Batch, precision: str, device: torch.device) -> Callable[[], object]:
    """One inference call of ``model`` on ``batch``, without gradients, under ``precision`` autocast."""

    def call() -> object:
        with torch.inference_mode(), numerics.autocast(precision, device):
            return inference(task, model, batch)

    return call


def generating(
    task: Generates, model: nn.Module, batch: Batch, precision: str, device: torch.device
) -> Callable[[], list[list[int]]]:
    """One greedy generation (with the cache) for the batch, without gradients, under ``precision`` autocast."""

    def call() -> list[list[int]]:
        with torch.inference_mode(), numerics.autocast(precision, device):
            return task.generate(model, batch, cache=True)

    return call


def compare_speed(
    task: Any,
    variants: dict[str, Variant],
    batch: Batch,
    device: torch.device,
    warmup: int,
    repeats: int,
    min_time_s: float,
) -> dict[str, dict[str, float]]:
    """Per variant: latency at batch 1 (ms), time per batch (ms) and items per second at the batch's size, all timed
    interleaved;
    where the task writes sequences (``Generates``: translation), also the batch's greedy generation (ms, tokens/s),
    what a user of it waits for.

    Args:
        variants: name -> (model, precision); every model in eval mode.
        batch: on ``device``; its first example is the latency input.
    """
    one = head(batch, 1)
    calls: dict[str, Callable[[], object]] = {}
    generated: dict[str, int] = {}
    for name, (model, precision) in variants.items():
        model.eval()
        calls[f"{name}/batch"] = inferring(task, model, batch, precision, device)
        calls[f"{name}/one"] = inferring(task, model, one, precision, device)
        if isinstance(task, Generates):
            calls[f"{name}/generate"] = generating(task, model, batch, precision, device)
            generated[name] = sum(len(ids) for ids in calls[f"{name}/generate"]())
    times = time_calls(calls, device, warmup=warmup, repeats=repeats, min_seconds=min_time_s)
    out = {}
    for name in variants:
        full, single = times[f"{name}/batch"], times[f"{name}/one"]
        out[name] = {
            "latency_ms": single.median * 1e3,
            "latency_iqr_ms": single.spread * 1e3,
            "batch_ms": full.median * 1e3,
            "batch_iqr_ms": full.spread * 1e3,
            "throughput_items_per_s": batch.n_items / full.median,
            "throughput_tokens_per_s": batch.n_tokens / full.median,
        }
        if full.others_cpu_share is not None:  # how quiet the machine was (one figure for all: the rounds interleave)
            out[name]["others_cpu_share"] = full.others_cpu_share
        if name in generated:
            out[name] |= {
                "generate_ms": times[f"{name}/generate"].median * 1e3,
                "generate_tokens_per_s": generated[name] / times[f"{name}/generate"].median,
            }
    return out


def output_difference(task: Any, a: nn.Module, b: nn.Module, batch: Batch, device: torch.device) -> float:
    """Largest absolute difference between two models' outputs (logits) on ``batch``."""
    with torch.inference_mode():
        return float((inference(task, a, batch).float() - inference(task, b, batch).float()).abs().max())
