"""Where one training step's time goes: the operators of a configured model's step, per token, heaviest first.

    python -m suite.tools.op_profile experiment=attention_speed model/attention=performer task.seq_len=16384
    python -m suite.tools.op_profile task=sentiment model=lstm --batch 32 --top 8

The overrides compose the model and task as ``suite.run`` does (random weights: the time does not
depend on training); ``--batch`` examples of the task's training data make the batch. After
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
from hydra.utils import instantiate

from suite.jobs.prepare import prepare
from suite.measure.harness import first_batch, trainer_update, training_step
from suite.runtime import numerics
from suite.runtime.compose import composed


@dataclass(frozen=True)
class OpTime:
    """One operator's own CPU time in the profiled step."""

    name: str
    calls: int
    ms: float
    us_per_token: float


def profile_step(overrides: list[str], batch_size: int = 4, warmup: int = 2) -> tuple[list[OpTime], int]:
    """(every operator's own time in one training step, heaviest first; the step's tokens)."""
    cfg = composed(overrides)
    device = torch.device("cpu")
    task = instantiate(cfg.task)
    model = prepare(cfg, device, task).model
    batch = first_batch(task, batch_size, cfg.seed).to(device)
    step = training_step(model, task, batch, trainer_update(cfg, model), "fp32", device)

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
    return sorted(ops, key=lambda o: -o.ms), tokens


def main(argv: list[str] | None = None) -> list[OpTime]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as for suite.run")
    parser.add_argument("--batch", type=int, default=4, help="examples in the profiled batch")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--top", type=int, default=12, help="operators printed")
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite: subnormals would time the data, not the model
    ops, tokens = profile_step(args.overrides, args.batch, args.warmup)
    total = sum(o.ms for o in ops)
    print(
        f"one training step, {tokens} tokens, {torch.get_num_threads()} threads: {total:.1f} ms, {total * 1e3 / tokens:.2f} us a token"
    )
    for o in ops[: args.top]:
        print(f"  {o.name:<40}{o.ms:10.1f} ms{o.us_per_token:9.2f} us/token  {o.calls:5d} calls")
    return ops


if __name__ == "__main__":
    main()
