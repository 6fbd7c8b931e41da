"""The same training step run in the ways torch offers, timed interleaved in one process: which is fastest here?

    python -m suite.tools.step_options experiment=mfu_standard --batch 8    # the standard encoder
    python -m suite.tools.step_options task=sentiment model=transformer --variant "lr 3e-4=trainer.optimizer.lr=3e-4"

Every variant is the configured step (forward, backward, clip, optimizer, schedule: the step training takes) with one
change, on a copy of the same weights and the same batch:

- AdamW's three implementations: ``trainer.optimizer.foreach=false`` (a loop over the tensors: torch's default for
  CPU tensors), ``foreach=true`` (one multi-tensor kernel per operation: its default on CUDA), ``fused=true`` (one
  kernel for the whole update);
- the attention kernel: under ``torch.nn.attention.sdpa_kernel``, the math backend (the weights materialised)
  against flash attention (what ``F.scaled_dot_product_attention`` picks on a CPU when it can);
- any overrides given with ``--variant "name=override,override"``.

Printed as markdown: median (IQR) and the ratio to the configured step.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
from dataclasses import dataclass
from typing import Callable, ContextManager

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from suite.measure.harness import trainer_update, training_step
from suite.measure.timing import time_calls
from suite.runtime import numerics
from suite.runtime.compose import composed
from suite.tools import configured, measured_on, titled

Context = Callable[[], ContextManager[object]]
NONE: Context = contextlib.nullcontext

# name -> (overrides of the trainer, the context the step runs in)
BUILT_IN: dict[str, tuple[list[str], Context]] = {
    "as configured": ([], NONE),
    "AdamW for-loop": (["++trainer.optimizer.foreach=false"], NONE),
    "AdamW foreach": (["++trainer.optimizer.foreach=true"], NONE),
    "AdamW fused": (["++trainer.optimizer.fused=true"], NONE),
    "SDPA flash": ([], lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)),
    "SDPA math": ([], lambda: sdpa_kernel(SDPBackend.MATH)),
}


def parse_variant(text: str) -> tuple[str, tuple[list[str], Context]]:
    """'name=a=1,b=2' -> ('name', (['a=1', 'b=2'], no context))."""
    name, sep, overrides = text.partition("=")
    if not sep or not overrides:
        raise argparse.ArgumentTypeError(f"a variant is 'name=override,override', got {text!r}")
    return name, ([o for o in overrides.split(",") if o], NONE)


@dataclass
class Way:
    """One variant, ready to time: its step call, the weights it trains and the optimizer it steps."""

    step: Callable[[], None]
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer


def in_context(step: Callable[[], None], context: Context) -> Callable[[], None]:
    def run() -> None:
        with context():
            step()

    return run


def variant_steps(
    overrides: list[str], variants: dict[str, tuple[list[str], Context]], batch_size: int, precision: str | None
) -> tuple[dict[str, Way], str, int]:
    """(each variant's way of stepping; the precision they run in; the batch's tokens). One model
    and batch, each variant on its own copy of the weights with its own optimizer (from the composed trainer with the
    variant's overrides)."""
    run, device = configured(overrides, batch_size, precision), torch.device("cpu")
    steps = {}
    for name, (extra, context) in variants.items():
        own = copy.deepcopy(run.model)
        update = trainer_update(composed([*overrides, *extra]), own)
        step = in_context(training_step(own, run.task, run.batch, update, run.precision, device), context)
        steps[name] = Way(step, own, update.optimizer)
    return steps, run.precision, run.batch.n_tokens


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for suite.run")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], default=None, help="default: the run's")
    parser.add_argument("--only", nargs="+", choices=sorted(BUILT_IN), help="built-in variants timed (default: all)")
    parser.add_argument("--variant", type=parse_variant, action="append", default=[], help="'name=override,...'")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite
    variants = {k: v for k, v in BUILT_IN.items() if k == "as configured" or not args.only or k in args.only}
    variants.update(dict(args.variant))
    steps, precision, tokens = variant_steps(args.overrides, variants, args.batch, args.precision)
    times = time_calls({k: way.step for k, way in steps.items()}, torch.device("cpu"), args.warmup, args.repeats)
    reference = times["as configured"].median
    print(
        measured_on(
            torch.device("cpu"),
            f"one training step in {precision}, batch {args.batch} ({tokens} tokens): "
            f"{' '.join(args.overrides) or 'the default run'}; median of {args.repeats} interleaved rounds",
        )
    )
    rows = [
        {
            "variant": name,
            "median (IQR)": str(t),
            "of as configured": f"{t.median / reference:.2f}x",
            "tokens/s": f"{tokens / t.median:,.0f}",
        }
        for name, t in times.items()
    ]
    print(titled("the training step, each way", rows))
    return times


if __name__ == "__main__":
    main()
