"""The speed harness: how every model of every task is timed, on one real batch of its task.

Warm-up, then interleaved timed repeats with the device synchronised (``suite.measure.timing``);
throughput counts real (non-pad) tokens. The task says how its model runs
(``suite.types.inference``: a classifier's call unless the task defines ``infer``); a task whose
model writes sequences (``suite.types.Generates``) also has its generation timed, with and
without the cache. ``job=speed`` records one point with it; compression and the profilers use
its pieces.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable

import torch
from hydra.utils import instantiate

from suite.measure.flops import count_flops
from suite.measure.memory import peak_memory
from suite.measure.timing import time_calls
from suite.runtime import numerics
from suite.runtime.device import sync
from suite.runtime.failures import PointTimeout
from suite.runtime.precision_policy import RECURRENT_CELLS, family_of
from suite.training.step import Update, optimizer_step
from suite.types import Batch, Generates, Infers, inference

Generate = Callable[[bool], list[list[int]]]  # cache on or off -> the generated ids of every sequence


def first_batch(task: Any, batch_size: int, seed: int) -> Batch:
    """The first training batch of the task (real data, real padding)."""
    return next(iter(task.loaders(batch_size, seed, eval_batch_size=batch_size)["train"]))


def head(batch: Batch, n: int) -> Batch:
    """The batch's first ``n`` examples (the counts are not recomputed: they serve no figure here)."""
    rows = lambda t: None if t is None else t[:n]  # noqa: E731
    return replace(
        batch,
        inputs=rows(batch.inputs),
        targets=rows(batch.targets),
        pad_mask=rows(batch.pad_mask),
        extra={k: rows(v) for k, v in batch.extra.items()},
    )


def seconds(fn: Callable[[], object], device: torch.device) -> float:
    """Wall time of one call, the device synchronised around it."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def generation_speed(
    generate: Generate, device: torch.device, warmup: int, repeats: int, min_time_s: float = 0.0
) -> dict[str, float]:
    """Generated tokens per second with the cache and without it (timed interleaved), and their ratio.

    ``generate(cache)`` must produce the same number of tokens either way (no early end).
    """
    tokens = sum(len(ids) for ids in generate(True))  # also the first warm-up
    times = time_calls(
        {"cached": lambda: generate(True), "uncached": lambda: generate(False)},
        device,
        warmup=max(0, warmup - 1),
        repeats=repeats,
        min_seconds=min_time_s,
    )
    cached, uncached = tokens / times["cached"].median, tokens / times["uncached"].median
    return {
        "generate_tokens_per_s": cached,
        "generate_uncached_tokens_per_s": uncached,
        "generate_cache_speedup": cached / uncached,
        "generate_ms": times["cached"].median * 1e3,
        "generate_uncached_ms": times["uncached"].median * 1e3,
        "generated_tokens": float(tokens),
    }


SCHEDULE_STEPS = (
    10_000  # the length of the timed step's schedule: any will do, a learning rate does not change a step's time
)


def trainer_update(cfg: Any, model: torch.nn.Module) -> Update:
    """The update of the run's trainer (``cfg.trainer``: its optimizer, schedule and clip), so the timed step is the one
    training takes."""
    return instantiate(cfg.trainer).update(model, total_steps=SCHEDULE_STEPS)


def training_step(
    model: torch.nn.Module, task: Any, batch: Batch, update: Update, precision: str, device: torch.device
) -> Callable[[], None]:
    """One training step of ``model`` on ``batch`` as a call: the step training takes
    (``suite.training.step.optimizer_step``)."""

    def step() -> None:
        model.train()
        optimizer_step(model, task, batch, update, precision, device)

    return step


def inferring(
    model: torch.nn.Module, fn: Callable[[], object], precision: str, device: torch.device
) -> Callable[[], object]:
    """``fn`` (a forward pass of ``model``) in eval mode, without gradients, under ``precision`` autocast, as a call."""

    def run() -> object:
        model.eval()
        with torch.inference_mode(), numerics.autocast(precision, device):
            return fn()

    return run


AFFINE_FROM = 64  # a recurrent classifier's FLOPs are counted at 64 and 128 positions and extended to its length


def prefix(batch: Batch, length: int) -> Batch:
    """The batch's first ``length`` positions of a classification batch (one target per example)."""
    return replace(
        batch,
        inputs=batch.inputs[:, :length],
        pad_mask=None if batch.pad_mask is None else batch.pad_mask[:, :length],
        n_tokens=batch.n_items * length,
    )


def counted_flops(
    model: torch.nn.Module, task: Any, batch: Batch, update: Update, device: torch.device
) -> tuple[int, int]:
    """FLOPs of one training step and one inference pass on ``batch``, counted in fp32.

    The same arithmetic in either precision, so counted in fp32: under bf16 autocast the counter's dispatch reaches
    kernels (oneDNN's bf16 LSTM) that refuse it. A recurrent classifier on an unpadded batch does the same work at
    every position (the cell's matrices) and once a sequence (the head): its count is affine in the length, so past
    ``2 * AFFINE_FROM`` positions it is counted at ``AFFINE_FROM`` and twice that and extended, exactly, in integers.
    On a CPU torch runs the GRU and the plain RNN cell by cell, and counting every cell's operators at length 4096
    costs a minute of Python dispatch a point; ``tests/test_measure.py`` checks the extension against the direct
    count for every cell.
    """

    def direct(b: Batch) -> tuple[int, int]:
        train = count_flops(training_step(model, task, b, update, "fp32", device))
        infer = count_flops(inferring(model, lambda: inference(task, model, b), "fp32", device))
        return train, infer

    length = batch.inputs.shape[1] if batch.inputs.dim() == 2 else 0
    affine = (
        family_of(model) == RECURRENT_CELLS
        and not isinstance(task, Infers)  # a classifier: model(inputs, pad_mask), one target per example
        and batch.targets.dim() == 1
        and (batch.pad_mask is None or not bool(batch.pad_mask.any()))  # padding would make the work data-dependent
        and length > 2 * AFFINE_FROM
    )
    if not affine:
        return direct(batch)
    short, double = direct(prefix(batch, AFFINE_FROM)), direct(prefix(batch, 2 * AFFINE_FROM))
    return tuple(a + (b - a) * (length - AFFINE_FROM) // AFFINE_FROM for a, b in zip(short, double))  # type: ignore[return-value]


def measure_model(
    model: torch.nn.Module,
    task: Any,
    batch: Batch,
    device: torch.device,
    update: Update,
    warmup: int,
    repeats: int,
    time_budget_s: float,
    precision: str = "fp32",
    min_time_s: float = 0.0,
) -> dict[str, float]:
    """Training-step and inference time, latency per sequence, peak memory and FLOPs of one model on one batch.

    ``update`` is what the timed step updates the weights with (the run's trainer: ``Trainer.update``).
    ``precision`` ('fp32' or 'bf16') is the autocast of the forward passes, as in training.
    Generation figures are added where the task generates (``suite.types.Generates``).
    """
    batch = batch.to(device)
    train_step = training_step(model, task, batch, update, precision, device)
    infer = lambda b=batch, autocast=precision: inferring(model, lambda: inference(task, model, b), autocast, device)  # noqa: E731
    generate: Generate | None = None
    if isinstance(task, Generates):
        generate = lambda cache: inferring(model, lambda: task.generate(model, batch, cache=cache), precision, device)()  # noqa: E731

    first = seconds(train_step, device)  # also the first warm-up; its time predicts the point's cost
    predicted = first * (warmup + repeats) * 2.5  # training, inference and latency, generously
    if generate is not None:
        predicted += (seconds(lambda: generate(True), device) + seconds(lambda: generate(False), device)) * (
            warmup + repeats
        )
    if predicted > time_budget_s:
        raise PointTimeout(
            f"first training step took {first:.1f}s; the point would need ~{predicted:.0f}s "
            f"> budget {time_budget_s:.0f}s"
        )
    times = time_calls(
        {"train": train_step, "infer": infer(), "latency": infer(head(batch, 1))},
        device,
        warmup=max(0, warmup - 1),
        repeats=repeats,
        min_seconds=min_time_s,
    )
    tokens = batch.n_tokens
    memory_train, memory_infer = peak_memory(train_step, device), peak_memory(infer(), device)
    flops_train, flops_infer = counted_flops(model, task, batch, update, device)
    figures = {
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
        "peak_mem_train_bytes": float(memory_train),
        "peak_mem_infer_bytes": float(memory_infer),
        "flops_train_step": float(flops_train),  # counted in fp32: counted_flops
        "flops_infer": float(flops_infer),
        "batch_size": float(batch.n_items),
        "timed_rounds": float(len(times["train"].samples)),
        "tokens": float(tokens),
    }
    if (
        share := times["train"].others_cpu_share
    ) is not None:  # how quiet the machine was while the figures above were timed
        figures["others_cpu_share"] = share
    if generate is not None:
        figures |= generation_speed(generate, device, warmup, repeats, min_time_s)
    return figures
