"""Command-line benchmarks and profilers that build whole jobs (``python -m suite.tools.<name>``).

Each prints markdown: a line that says where it was measured (``measured_on``), then its tables, so that
``make figures`` can keep its output under ``results/`` for the docs to include as it was printed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import prepare
from suite.measure.harness import first_batch
from suite.report.tables import markdown
from suite.runtime import numerics
from suite.runtime.compose import composed
from suite.runtime.record import cpu_name, git_commit
from suite.types import Batch


def recurrent_sizes(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The batch, length and width options the recurrent-cell tools share (batch 32, L 256, width 128)."""
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--width", type=int, default=128)
    return parser


def measured_on(device: torch.device, settings: str) -> str:
    """One line: the machine (CPU or GPU, its vector and bf16 units), threads, torch, commit, then ``settings``."""
    if device.type == "cuda":
        where = torch.cuda.get_device_name(device)
    else:
        unit = numerics.cpu_bf16_kind() or "none"
        where = f"{cpu_name()} ({torch.backends.cpu.get_cpu_capability()}, bf16 unit {unit})"
    threads, commit = torch.get_num_threads(), git_commit() or "unknown"
    short = commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")
    return (
        f"Measured on {where}, {threads} thread{'s' * (threads != 1)}, torch {torch.__version__}, "
        f"commit {short}: {settings}"
    )


def titled(title: str, rows: list[dict[str, str]]) -> str:
    """A table with a bold title line above it, as the tools print them."""
    return f"\n**{title}**\n\n{markdown(rows)}"


@dataclass
class Setup:
    """What a tool times a training step of: the composed run, its task, model (on the CPU) and first training batch,
    and the precision the run would train in."""

    cfg: DictConfig
    task: Any
    model: torch.nn.Module
    batch: Batch
    precision: str


def configured(overrides: list[str], batch_size: int, precision: str | None = None) -> Setup:
    """The run ``suite.run`` would compose from ``overrides``, built; ``precision`` None: the run's
    ``trainer.precision``, 'auto' resolved for the CPU and the model."""
    cfg = composed(overrides)
    device = torch.device("cpu")
    task = instantiate(cfg.task)
    model = prepare(cfg, device, task).model
    batch = first_batch(task, batch_size, cfg.seed).to(device)
    return Setup(cfg, task, model, batch, numerics.resolve_precision(precision or cfg.trainer.precision, device, model))
