"""The suite's dropout against torch's: mask candidates, one dropout, and a configured model's training step.

    python -m suite.tools.dropout_bench     # the standard encoder: d_model 256, 4 layers, d_ff 1024, L 256, batch 8
    python -m suite.tools.dropout_bench task=sentiment model=lstm --batch 64

Three tables, every row of a table timed interleaved in one process (median, IQR):

1. ways to draw a keep-mask for one (8, 256, 1024) activation: ``bernoulli_`` (what ``F.dropout``
   calls on a CPU), uniform floats, a uint8 per element, and the suite's four 16-bit lanes of a
   64-bit draw (``suite.nn.dropout.keep_mask``);
2. one dropout of that activation, forward and backward, ``F.dropout`` against the suite's, in fp32
   and bf16;
3. the training step of the configured model (``suite.run``'s overrides; the step training takes:
   forward, backward, clip, AdamW, schedule) with the suite's dropout, with ``torch.nn.Dropout``
   swapped in (the same weights: the step as it was before the suite had its own), and with every
   dropout at 0, in fp32 and in bf16 autocast where the CPU has bf16 instructions (``--step-precision``).
"""

from __future__ import annotations

import argparse
import copy
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from suite.measure.harness import trainer_update, training_step
from suite.measure.timing import Timing, time_calls
from suite.nn import Dropout, dropout
from suite.nn.dropout import keep_mask, with_torch_dropout
from suite.runtime import numerics
from suite.tools import configured, measured_on, titled

STANDARD = [
    "task=long_range",
    "task.seq_len=256",
    "model=transformer",
    "model.d_model=256",
    "model.backbone.n_layers=4",
    "model.backbone.d_ff=1024",
]
SHAPE = (8, 256, 1024)


def mask_candidates(shape: tuple[int, ...], p: float) -> dict[str, Callable[[], object]]:
    """Ways to draw a keep-mask of ``shape``: torch's calls, and the suite's lanes."""
    x = torch.empty(shape)
    return {
        "bernoulli_ (F.dropout's)": lambda: torch.empty_like(x).bernoulli_(1 - p),
        "rand >= p": lambda: torch.rand_like(x) >= p,
        "randint uint8": lambda: torch.randint(0, 256, shape, dtype=torch.uint8),
        "suite: 16-bit lanes": lambda: keep_mask(shape, p),
    }


def one_dropout(shape: tuple[int, ...], p: float, dtype: torch.dtype) -> dict[str, Callable[[], object]]:
    """Forward and backward of one dropout: torch's and the suite's."""
    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    g = torch.randn(shape, dtype=dtype)
    return {
        "F.dropout": lambda: F.dropout(x, p, True).backward(g),
        "suite": lambda: dropout(x, p, True).backward(g),
    }


def without_dropout(model: nn.Module) -> nn.Module:
    """``model`` with every dropout module's p set to 0 (in place)."""
    for m in model.modules():
        if isinstance(m, (Dropout, nn.Dropout)):
            m.p = 0.0
    return model


def model_steps(overrides: list[str], batch_size: int, precision: str) -> dict[str, Callable[[], None]]:
    """The configured model's training step with the suite's dropout, torch's, and none (the same weights)."""
    run, device = configured(overrides, batch_size, precision), torch.device("cpu")
    model, task, batch = run.model, run.task, run.batch
    variants = {
        "suite dropout": model,
        "nn.Dropout": with_torch_dropout(copy.deepcopy(model)),
        "dropout 0": without_dropout(copy.deepcopy(model)),
    }
    return {
        name: training_step(m, task, batch, trainer_update(run.cfg, m), precision, device)
        for name, m in variants.items()
    }


def table(title: str, times: dict[str, Timing], reference: str) -> None:
    rows = [
        {"": name, "median (IQR)": str(t), f"of {reference}": f"{t.median / times[reference].median:.2f}x"}
        for name, t in times.items()
    ]
    print(titled(title, rows))


def main(argv: list[str] | None = None) -> dict[str, dict[str, Timing]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides (default: the standard encoder)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--p", type=float, default=0.1, help="drop probability of tables 1 and 2")
    parser.add_argument("--shape", type=int, nargs="+", default=list(SHAPE), help="activation of tables 1 and 2")
    parser.add_argument("--precision", choices=["fp32", "bf16"], nargs="+", default=["fp32", "bf16"])
    parser.add_argument(
        "--step-precision",
        choices=["fp32", "bf16"],
        nargs="+",
        default=None,
        help="table 3's precisions (default: fp32, and bf16 where the CPU has bf16 instructions: emulated, a bf16 "
        "step takes minutes of rounds and times the emulation)",
    )
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite
    cpu = torch.device("cpu")
    shape = tuple(args.shape)
    print(measured_on(cpu, f"activation {shape}, p {args.p}; median of {args.repeats} interleaved rounds"))
    out = {"masks": time_calls(mask_candidates(shape, args.p), cpu, args.warmup, args.repeats)}
    table("1. a keep-mask", out["masks"], "bernoulli_ (F.dropout's)")
    for precision in args.precision:
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        out[f"dropout {precision}"] = time_calls(one_dropout(shape, args.p, dtype), cpu, args.warmup, args.repeats)
        table(f"2. one dropout, forward + backward, {precision}", out[f"dropout {precision}"], "F.dropout")
    overrides = args.overrides or STANDARD
    for precision in args.step_precision or numerics.timed_precisions(cpu):
        steps = model_steps(overrides, args.batch, precision)
        out[f"step {precision}"] = time_calls(steps, cpu, args.warmup, args.repeats)
        table(
            f"3. training step, {precision}, batch {args.batch}: {' '.join(overrides)}",
            out[f"step {precision}"],
            "nn.Dropout",
        )
    return out


if __name__ == "__main__":
    main()
