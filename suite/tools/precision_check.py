"""fp32 against bf16 autocast for every model family, side by side in one process: is ``precision=auto`` right here?

    python -m suite.tools.precision_check                        # L 256, batch 8, width 128, 2 layers
    (one model of every precision family: attention, recurrent cells, parallel scan, long convolution)
    python -m suite.tools.precision_check --models transformer --length 256 model.d_model=256 model.backbone.n_layers=4
    model.backbone.d_ff=1024
    OMP_NUM_THREADS=1 python -m suite.tools.precision_check      # one thread, as make bench's speed points

Each model is composed as ``experiment=speed_vs_length`` composes it (the recall task at
``--length``, random weights: speed does not depend on training; extra Hydra overrides apply to
every model). Its training step (the one training takes: forward, backward, clip, AdamW, schedule) and its inference
pass are timed in
fp32 and under bf16 autocast, all four interleaved round by round (``suite.measure.timing.time_calls``),
so the machine's drift hits both precisions alike. The table gives real tokens/s, the bf16/fp32
ratio, the family its backbone declares and what ``precision=auto`` picks for it on this device (the policy of
``suite.runtime.precision_policy``);
a pick that the measurement contradicts is named below it. Then the fp32 and bf16 matmul peaks
(the MFU denominators) with every round's figure and their spread.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch
from hydra.utils import instantiate

from suite.jobs.prepare import prepare
from suite.measure.flops import Peak, matmul_peak
from suite.measure.harness import first_batch, inferring, trainer_update, training_step
from suite.measure.timing import time_calls
from suite.report import formatting as fmt
from suite.runtime import numerics
from suite.runtime.compose import composed
from suite.runtime.precision_policy import family_of
from suite.tools import measured_on
from suite.types import inference

PRECISIONS = ("fp32", "bf16")


@dataclass(frozen=True)
class Row:
    """One model's tokens/s in each precision, and what ``auto`` picks for it."""

    model: str
    family: str
    auto: str
    train: dict[str, float]  # precision -> training tokens/s
    infer: dict[str, float]  # precision -> inference tokens/s

    def ratio(self, kind: str) -> float:
        figures = getattr(self, kind)
        return figures["bf16"] / figures["fp32"]

    def contradicted(self, margin: float = 0.10) -> bool:
        """``auto`` picks the precision that trained slower here by more than ``margin`` (one point moves ~8 % between
        processes here)."""
        ratio = self.ratio("train")
        return ratio < 1 - margin if self.auto == "bf16" else ratio > 1 + margin


def measure(
    model_name: str,
    length: int,
    batch_size: int,
    overrides: list[str],
    device: torch.device,
    repeats: int,
    min_seconds: float,
) -> Row:
    """Training and inference tokens/s of one model in fp32 and bf16, timed interleaved."""
    cfg = composed(["experiment=speed_vs_length", f"model={model_name}", f"task.seq_len={length}", *overrides])
    task = instantiate(cfg.task)
    model = prepare(cfg, device, task).model
    batch = first_batch(task, batch_size, cfg.seed).to(device)
    update = trainer_update(cfg, model)
    calls = {}
    for precision in PRECISIONS:
        calls[f"train/{precision}"] = training_step(model, task, batch, update, precision, device)
        calls[f"infer/{precision}"] = inferring(model, lambda: inference(task, model, batch), precision, device)
    times = time_calls(calls, device, warmup=1, repeats=repeats, min_seconds=min_seconds)
    rate = {k: batch.n_tokens / t.median for k, t in times.items()}
    return Row(
        model_name,
        family_of(model) or "",
        numerics.resolve_precision("auto", device, model),
        {p: rate[f"train/{p}"] for p in PRECISIONS},
        {p: rate[f"infer/{p}"] for p in PRECISIONS},
    )


def table(rows: list[Row]) -> str:
    """The rows as a markdown table."""
    head = (
        "| model | family | auto picks | train tok/s fp32 | train tok/s bf16 | bf16/fp32 "
        "| infer tok/s fp32 | infer tok/s bf16 | bf16/fp32 |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.family} | {r.auto} | {fmt.rate(r.train['fp32'])} | {fmt.rate(r.train['bf16'])} "
            f"| {r.ratio('train'):.2f}x | {fmt.rate(r.infer['fp32'])} | {fmt.rate(r.infer['bf16'])} "
            f"| {r.ratio('infer'):.2f}x |"
        )
    return "\n".join(lines)


def peak_line(peak: Peak) -> str:
    rounds = ", ".join(f"{f / 1e9:.1f}" for f in peak.rounds)
    return (
        f"{peak.dtype} matmul peak ({peak.size}^2): {peak.flops / 1e9:.1f} GFLOP/s, the best of {len(peak.rounds)} "
        f"rounds ({rounds}); spread {peak.spread:.1%}"
    )


def main(argv: list[str] | None = None) -> list[Row]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="Hydra overrides applied to every model (e.g. model.d_model=256)")
    parser.add_argument(
        "--models",
        default="transformer,lstm,gru,rnn,mingru,mamba,s4d",
        help="model configs (conf/model/), comma-separated; the default has every declared precision family",
    )
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds at least")
    parser.add_argument("--min-seconds", type=float, default=3.0, help="and more rounds until they span this long")
    parser.add_argument("--no-peak", action="store_true", help="skip the matmul peaks")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite
    device = torch.device(args.device)
    unit = numerics.cpu_bf16_kind() if device.type == "cpu" else "cuda"
    print(
        measured_on(
            device,
            f"length {args.length}, batch {args.batch}"
            + (f"; overrides {' '.join(args.overrides)}" if args.overrides else ""),
        )
    )
    print()
    rows = [
        measure(m, args.length, args.batch, args.overrides, device, args.repeats, args.min_seconds)
        for m in args.models.split(",")
    ]
    print(table(rows))
    for r in rows:
        if r.contradicted():
            print(
                f"\nnote: precision=auto picks {r.auto} for {r.model}, but bf16 trained "
                f"{r.ratio('train'):.2f}x the fp32 speed here"
            )
    if not args.no_peak:
        # Without a bf16 unit every bf16 product is converted in software (about 1 GFLOP/s on an AVX2 EPYC): a smaller
        # square says as much.
        bf16_size = None if unit in ("amx", "avx512_bf16", "cuda") else 512
        print()
        print(peak_line(matmul_peak(device, dtype=torch.float32)))
        print()
        print(peak_line(matmul_peak(device, bf16_size, dtype=torch.bfloat16)))
    return rows


if __name__ == "__main__":
    main()
