"""Our scans against the packages that implement the same layer, forward and backward, in one process.

    python -m suite.tools.scan_bench                      # lengths 1024 and 4096, batch 4, one thread
    python -m suite.tools.scan_bench --lengths 1024 4096 16384

Two tables, every row timed interleaved (median, IQR), the same weights and inputs for both:

1. Mamba's block with our log-space scan (``suite.models.mamba``, ``kernel=log``: the chunked scan on the signed
   parts) against ``mambapy``'s block (its Blelloch ``pscan``, which ``model=mamba`` uses by default), width 128,
   E = 256, N = 16;
2. minGRU's layer: ours (the chunked scan) against ``mingru-pytorch``'s (one ``logcumsumexp`` over the whole
   sequence), width 128.

``mingru-pytorch`` is in the ``peers`` extra (and so in ``test``); a table whose package is missing says so.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch

from suite.measure.timing import Timing
from suite.models.mamba import MambaBlock
from suite.models.minrnn import MinRNN
from suite.runtime import numerics
from suite.tools import measured_on
from suite.tools.peers import peer_tables


def backward_of(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    return lambda: model(x).float().square().mean().backward()


def mamba_pair(length: int, batch: int, width: int) -> dict[str, Callable[[], None]]:
    from mambapy.mamba import MambaBlock as Theirs
    from mambapy.mamba import MambaConfig

    theirs = Theirs(MambaConfig(d_model=width, n_layers=1, d_state=16, expand_factor=2, d_conv=4))
    ours = MambaBlock(width, d_state=16, expand=2, d_conv=4, kernel="log")
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(batch, length, width)
    return {"ours": backward_of(ours, x), "mambapy": backward_of(theirs, x)}


def mingru_pair(length: int, batch: int, width: int) -> dict[str, Callable[[], None]]:
    from minGRU_pytorch import minGRU

    theirs = minGRU(width)
    ours = MinRNN(width, "gru")
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(batch, length, width)
    return {"ours": lambda: ours(x)[0].square().mean().backward(), "mingru-pytorch": backward_of(theirs, x)}


def main(argv: list[str] | None = None) -> dict[str, dict[int, dict[str, Timing]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)
    cpu = torch.device("cpu")
    print(measured_on(cpu, f"batch {args.batch}, width {args.width}, fp32, forward + backward"))
    pairs = (
        ("mamba", lambda n: mamba_pair(n, args.batch, args.width), "mambapy"),
        ("mingru", lambda n: mingru_pair(n, args.batch, args.width), "mingru-pytorch"),
    )
    return peer_tables(pairs, args.lengths, cpu, args.warmup, args.repeats, "one layer, forward + backward", "peers")


if __name__ == "__main__":
    main()
