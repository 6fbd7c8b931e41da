"""Where one training step's time goes: the operators of a configured model's step, per token, heaviest first.

    python -m suite.tools.op_profile experiment=attention_speed model/attention=performer task.seq_len=16384
    python -m suite.tools.op_profile task=sentiment model=lstm --batch 32 --top 8
    python -m suite.tools.op_profile task=long_range task.seq_len=256 --precision bf16

The overrides compose the model and task as ``suite.run`` does (random weights: the time does not
depend on training); ``--batch`` examples of the task's training data make the batch. The step runs
in the precision the run would (``trainer.precision``, resolved for this device and model: ``auto``
is bf16 or fp32 by the policy of ``suite.runtime.numerics``) unless ``--precision`` says otherwise,
and with the model's dropout as configured (the cost every training run pays). After
``--warmup`` untimed steps, one step (the one training takes: forward, backward, clip, optimizer, schedule) runs under
``torch.profiler``,
and each operator's own CPU time is printed in microseconds per token, so two lengths compare
directly: an operator whose time per token grows with the length is where a linear-time model
still slows (typically the memory-bound ones, once the activations leave the caches). Denormals
are flushed, as in every run of the suite; threads are the process's (``OMP_NUM_THREADS=1`` for one).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from suite.measure.harness import trainer_update, training_step
from suite.runtime import numerics
from suite.tools import configured, measured_on, titled


@dataclass(frozen=True)
class OpTime:
    """One operator's own CPU time in the profiled step."""

    name: str
    calls: int
    ms: float
    us_per_token: float


def profile_step(
    overrides: list[str], batch_size: int = 4, warmup: int = 2, precision: str | None = None
) -> tuple[list[OpTime], int, str]:
    """(every operator's own time in one training step, heaviest first; the step's tokens; its precision).

    ``precision`` None: the run's ``trainer.precision``; 'auto' is resolved for the device and model."""
    run = configured(overrides, batch_size, precision)
    batch, resolved = run.batch, run.precision
    step = training_step(run.model, run.task, batch, trainer_update(run.cfg, run.model), resolved, torch.device("cpu"))

    for _ in range(warmup):
        step()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    tokens = batch.n_tokens
    ops = [
        OpTime(e.key, e.count, e.self_cpu_time_total / 1e3, e.self_cpu_time_total / tokens)
        for e in prof.key_averages()
        if e.self_cpu_time_total > 0
    ]
    return sorted(ops, key=lambda o: -o.ms), tokens, resolved


def main(argv: list[str] | None = None) -> list[OpTime]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for suite.run")
    parser.add_argument("--batch", type=int, default=4, help="examples in the profiled batch")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--top", type=int, default=12, help="operators printed")
    parser.add_argument(
        "--precision", choices=["auto", "fp32", "bf16"], default=None, help="default: the run's trainer.precision"
    )
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite: subnormals would time the data, not the model
    ops, tokens, precision = profile_step(args.overrides, args.batch, args.warmup, args.precision)
    total = sum(o.ms for o in ops)
    print(
        measured_on(
            torch.device("cpu"),
            f"one training step in {precision}, {tokens} tokens: {total:.1f} ms, "
            f"{total * 1e3 / tokens:.2f} us a token; "
            f"{' '.join(args.overrides) or 'the default run'}, batch {args.batch}",
        )
    )
    rows = [
        {
            "operator": o.name,
            "ms": f"{o.ms:.1f}",
            "share": f"{o.ms / total:.1%}",
            "us/token": f"{o.us_per_token:.2f}",
            "calls": str(o.calls),
        }
        for o in ops[: args.top]
    ]
    print(titled(f"the {len(rows)} costliest operators, by their own CPU time", rows))
    return ops


if __name__ == "__main__":
    main()
