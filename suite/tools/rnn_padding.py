"""What right-padded batches cost a recurrent cell: torch's fused kernel over the padded batch against packed sequences.

    python -m suite.tools.rnn_padding                      # batch 32, L 256, width 128, lengths 150-256, one and two
    layers
    python -m suite.tools.rnn_padding --length 64 --batch 8

``suite.models.rnn.RecurrentEncoder`` runs a one-way cell over right-padded batches through the
fused kernel and zeroes the padded outputs (a padded position comes after every real one, so no
real output reads it); packing is kept for two-way cells. This prints, per cell and depth, the
training step (forward and backward) both ways, timed interleaved in one process, their ratio, and
the largest difference of the real outputs.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from suite.measure.timing import time_calls
from suite.runtime import numerics
from suite.tools import measured_on, recurrent_sizes


def compare(cell: type[nn.RNNBase], layers: int, batch: int, length: int, width: int, repeats: int) -> dict[str, float]:
    """Median ms of a forward + backward both ways, and the largest difference of the real outputs."""
    generator = torch.Generator().manual_seed(0)
    rnn = cell(width, width, num_layers=layers, batch_first=True)
    x = torch.randn(batch, length, width, generator=generator, requires_grad=True)
    lengths = torch.randint(length * 6 // 10, length + 1, (batch,), generator=generator)
    lengths[0] = length
    keep = (torch.arange(length)[None] < lengths[:, None])[..., None]

    def packed() -> torch.Tensor:
        out, _ = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        return pad_packed_sequence(out, batch_first=True, total_length=length)[0]

    def fused() -> torch.Tensor:
        return rnn(x)[0] * keep

    times = time_calls(
        {"packed": lambda: packed().sum().backward(), "fused": lambda: fused().sum().backward()},
        torch.device("cpu"),
        warmup=1,
        repeats=repeats,
    )
    with torch.no_grad():
        difference = ((packed() - fused()) * keep).abs().max().item()
    packed_ms, fused_ms = times["packed"].median * 1e3, times["fused"].median * 1e3
    return {"packed_ms": packed_ms, "fused_ms": fused_ms, "speedup": packed_ms / fused_ms, "max_difference": difference}


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = recurrent_sizes(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite
    print(
        measured_on(
            torch.device("cpu"),
            f"forward + backward, batch {args.batch}, L {args.length}, width {args.width}, lengths "
            f"{args.length * 6 // 10}-{args.length}, fp32",
        )
    )
    print()
    print("| cell | layers | packed ms | fused ms | packed / fused | largest difference |")
    print("|---|---|---|---|---|---|")
    rows = []
    for name, cell in (("lstm", nn.LSTM), ("gru", nn.GRU), ("rnn", nn.RNN)):
        for layers in args.layers:
            r = compare(cell, layers, args.batch, args.length, args.width, args.repeats)
            print(
                f"| {name} | {layers} | {r['packed_ms']:.0f} | {r['fused_ms']:.0f} | {r['speedup']:.2f}x "
                f"| {r['max_difference']:.1e} |"
            )
            rows.append({"cell": name, "layers": layers, **r})
    return rows


if __name__ == "__main__":
    main()
