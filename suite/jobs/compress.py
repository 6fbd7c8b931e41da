"""``job=compress``: compress a trained run's weights with one method and measure it against them.

    python -m suite.run job=compress compress=dynamic_int8 job.checkpoint=<run dir>/checkpoints/best.pt <the run's
    overrides>

The run's weights are loaded into the composed model (as ``job=evaluate`` does; they are only
read), the method (``cfg.compress``, ``conf/compress/<name>.yaml``) checks that it applies, then
compresses a copy, fine-tunes it through the trainer where it needs to, and saves its artefact
under ``<run dir>/compressed/``. Both models are scored on test (the compressed one on validation
too) and timed interleaved in this process; the record's ``compression`` holds the sizes, the
weight counts and the ratios (``suite/compress/``, README).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict

from suite.compress.footprint import bits_per_weight, count_weights, file_bytes, linear_bytes, serialized_bytes
from suite.compress.method import Context, Method
from suite.compress.side_by_side import compare_speed, output_difference
from suite.jobs.evaluate import load_weights
from suite.jobs.prepare import model_label, model_on, prepare, resume_identity
from suite.jobs.train import kept_predictions
from suite.measure.harness import first_batch
from suite.runtime.tracking import Tracker

log = logging.getLogger("suite.jobs")
STUDENT = "student"  # a method's model config node (distillation): built as if it were the run's ``model``


def method_of(cfg: DictConfig) -> tuple[Method, DictConfig | None]:
    """The configured method (its settings checked on construction) and the run's config with the method's student as
    its model, if it has one."""
    if cfg.get("compress") is None:
        raise ValueError("job=compress needs a method: compress=<name>, one of conf/compress/*.yaml")
    settings = {
        k: OmegaConf.to_container(v, resolve=True) if OmegaConf.is_config(v) else v
        for k, v in cfg.compress.items()
        if k != STUDENT
    }
    student_root = None
    if (
        cfg.compress.get(STUDENT) is not None
    ):  # a model config: its relative interpolations (${..d_model}) now read its own keys
        student_root = cfg.copy()
        with open_dict(student_root):
            student_root.model = OmegaConf.to_container(cfg.compress[STUDENT], resolve=False)
    return instantiate(settings, _convert_="all"), student_root


def fine_tuned(
    method: Method,
    model: torch.nn.Module,
    reference: torch.nn.Module,
    cfg: DictConfig,
    context: Context,
    run_dir: Path,
    tracker: Tracker,
) -> tuple[torch.nn.Module, dict[str, Any]]:
    """The model after the method's fine-tuning (its trainer settings over the run's), and what the fit did."""
    trainer = instantiate(OmegaConf.merge(cfg.trainer, method.fine_tune))
    fit = trainer.fit(
        model,
        method.training_task(context.task, reference),
        context.device,
        context.seed,
        checkpoint_dir=run_dir / "checkpoints",
        tracker=tracker,
        callbacks=method.callbacks(),
        identity=resume_identity(cfg) | {"compress": method.describe()},
    )
    return fit.model, {
        "fine_tune_steps": fit.steps,
        "fine_tune_seconds": fit.train_seconds,
        "fine_tune_best_epoch": fit.best_epoch,
        "fine_tune_stop_reason": fit.stop_reason,
    }


def footprint(model: torch.nn.Module, artefact_bytes: int, prefix: str = "") -> dict[str, float]:
    """Bytes, weights held, non-zero weights and bits per weight of one model (Linear bytes where it has torch Linear
    layers)."""
    weights, nonzero = count_weights(model)
    out = {
        f"{prefix}bytes": float(artefact_bytes),
        f"{prefix}weights": float(weights),
        f"{prefix}nonzero_weights": float(nonzero),
        f"{prefix}sparsity": 1.0 - nonzero / max(1, weights),
        f"{prefix}bits_per_weight": bits_per_weight(artefact_bytes, weights),
    }
    if not hasattr(model, "stored_weights"):
        out[f"{prefix}linear_bytes"], out[f"{prefix}linear_layers"] = map(float, linear_bytes(model))
    return out


def ratios(f: dict[str, float]) -> dict[str, float]:
    """How many times smaller and faster the compressed model is than the reference (above 1: better), from the figures
    of both."""
    out = {
        "size_ratio": f["reference_bytes"] / f["bytes"],
        "latency_speedup": f["reference_latency_ms"] / f["latency_ms"],
        "throughput_speedup": f["throughput_items_per_s"] / f["reference_throughput_items_per_s"],
    }
    if "generate_tokens_per_s" in f:  # a task that writes sequences: its greedy generation too
        out["generate_speedup"] = f["generate_tokens_per_s"] / f["reference_generate_tokens_per_s"]
    if (
        f.get("linear_layers") == f["reference_linear_layers"]
    ):  # the same layers (an LSTM student's are not the teacher's)
        out["linear_size_ratio"] = f["reference_linear_bytes"] / f["linear_bytes"]
    return out


def measured(
    task: Any,
    model: torch.nn.Module,
    reference: torch.nn.Module,
    artefact: Path,
    example: Any,
    device: torch.device,
    timing: dict[str, Any],
) -> dict[str, float]:
    """Size, weights and speed of the compressed model and of the reference (``reference_*``), timed interleaved, and
    their ratios.

    Args:
        timing: ``warmup``, ``repeats``, ``min_time_s`` and ``bf16_reference`` (also time the reference under bf16
            autocast).
    """
    variants = {"compressed": (model, "fp32"), "reference": (reference, "fp32")}
    if timing["bf16_reference"]:
        variants["reference_bf16_autocast"] = (reference, "bf16")
    speed = compare_speed(task, variants, example, device, timing["warmup"], timing["repeats"], timing["min_time_s"])
    figures = footprint(model, file_bytes(artefact)) | footprint(
        reference, serialized_bytes(reference.state_dict()), "reference_"
    )
    figures |= speed["compressed"] | {
        f"{name}_{k}": v
        for name, values in speed.items()
        if name != "compressed"
        for k, v in values.items()
        if k != "others_cpu_share"
    }
    return figures | ratios(figures)


def no_checkpoint(cfg: DictConfig) -> str:
    """What to do when job=compress has no weights to compress: the setting, and the command that trains them."""
    return (
        "job=compress needs trained weights: set job.checkpoint=<run dir>/checkpoints/best.pt. Train them first "
        f"with the same task and model, e.g. python -m suite.run task={cfg.task.name} model={cfg.model.name} "
        "hydra.run.dir=runs/teacher (then job.checkpoint=runs/teacher/checkpoints/best.pt)"
    )


def compress_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    checkpoint: str | None = None,
    batch_size: int = 32,
    warmup: int = 3,
    repeats: int = 10,
    min_time_s: float = 10.0,
    bf16_reference: bool = True,
) -> dict[str, Any]:
    """Compress the weights at ``checkpoint`` with ``cfg.compress``; returns the record's fields.

    Args:
        checkpoint: a training run's ``checkpoints/best.pt`` (compose the task and model it was trained with).
        batch_size: the batch whose throughput is timed (latency: its first example alone).
        warmup, repeats, min_time_s: as ``job=speed``: untimed rounds, timed rounds at least, and
            more rounds until they span this long.
        bf16_reference: also time the uncompressed model under bf16 autocast (the other cheap route on a CPU).
    """
    if checkpoint is None:
        raise ValueError(no_checkpoint(cfg))
    method, student_root = method_of(cfg)  # bad settings fail here, before any data is read
    prepared = prepare(cfg, device)
    task, reference = prepared.task, prepared.model
    load_weights(reference, checkpoint, device)
    reference.eval()
    method.check(reference)
    directory = run_dir / "compressed"
    directory.mkdir(parents=True, exist_ok=True)
    example = first_batch(task, batch_size, cfg.seed).to(device)
    build_student = (lambda: model_on(task, student_root.model, device)) if student_root is not None else None
    context = Context(task, device, cfg.seed, example, directory, build_student)
    started = time.perf_counter()
    model = method.compress(reference, context)
    fit: dict[str, Any] = {}
    if method.fine_tune is not None:
        model, fit = fine_tuned(method, model, reference, cfg, context, run_dir, tracker)
    model = method.finish(model).eval()
    artefact = method.save(model, context)
    seconds = time.perf_counter() - started
    # Scored as they are timed, in fp32: an int8 or ONNX model takes fp32 inputs, and a bf16 autocast
    # of the reference alone would put the precision into the comparison (fine-tuning used the trainer's).
    trainer = instantiate(cfg.trainer, precision="fp32")
    reference_test, _ = trainer.score(reference, task, device, cfg.seed, "test")
    test, _ = trainer.score(model, task, device, cfg.seed, "test")
    predictions, _ = kept_predictions(task, run_dir)  # the compressed model's, paired with its teacher's run later
    val, _ = trainer.score(model, task, device, cfg.seed, "val")
    timing = {"warmup": warmup, "repeats": repeats, "min_time_s": min_time_s, "bf16_reference": bf16_reference}
    figures = measured(task, model, reference, artefact, example, device, timing)
    primary = task.primary_metric
    compression = (
        method.describe()
        | figures
        | fit
        | {
            "artefact": str(artefact.relative_to(run_dir)),
            "checkpoint": str(checkpoint),
            "compress_seconds": seconds,
            "reference_metrics": reference_test,
            "primary_delta": test[primary] - reference_test[primary],
            "max_abs_output_difference": output_difference(task, model, reference, example, device),
            "threads": torch.get_num_threads(),
        }
        | ({"student": model_label(student_root.model)} if student_root is not None else {})
    )
    tracker.summary(
        {f"test/{k}": v for k, v in test.items()}
        | {f"compression/{k}": v for k, v in compression.items() if isinstance(v, (int, float))}
    )
    log.info(
        "%s: %s %.4g (reference %.4g), %.2fx smaller, %.2fx throughput, %.2fx latency",
        method.name,
        primary,
        test[primary],
        reference_test[primary],
        figures["size_ratio"],
        figures["throughput_speedup"],
        figures["latency_speedup"],
    )
    return dict(
        **prepared.ok_fields() | {"params": int(figures["weights"])},
        metrics={**test, **{f"val_{k}": v for k, v in val.items()}},
        speed={
            k: figures[k]
            for k in ("latency_ms", "throughput_items_per_s", "throughput_tokens_per_s", "generate_tokens_per_s")
            if k in figures
        },
        steps=fit.get("fine_tune_steps", 0),
        train_seconds=fit.get("fine_tune_seconds", 0.0),
        stop_reason=fit.get("fine_tune_stop_reason", "compressed"),
        precision="fp32",
        compression=compression,
        artifacts=predictions,
    )
