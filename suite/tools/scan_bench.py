"""Our scans against the packages that implement the same layer, forward and backward, in one process.

    python -m suite.tools.scan_bench                      # lengths 1024 and 4096, batch 4, one thread
    python -m suite.tools.scan_bench --lengths 1024 4096 16384
    python -m suite.tools.scan_bench --chunks --batch 64 --width 80 --lengths 64   # the loop's chunk, map shapes

Two tables, every row timed interleaved (median, IQR), the same weights and inputs for both:

1. Mamba's block with our loop over positions (``suite.models.selective_loop``, ``kernel=loop``, ``model=mamba``'s
   default) and with our log-space scan (``kernel=log``: the chunked scan on the signed parts), each against
   ``mambapy``'s block (its Blelloch ``pscan``), width 128, E = 256, N = 16;
2. minGRU's layer, width 128, against ``mingru-pytorch``'s (one ``logcumsumexp`` over the whole sequence): ours with
   the loop over positions (``kernel=loop``: ``suite.models.linear_loop``, the configs' choice on a CPU), with the
   chunked log-space scan (``kernel=log``, the choice on CUDA), and with that scan in one chunk (``chunk=null``), the
   peer's form.

Then the price of the speed: each minGRU scan's largest relative error in float32 against the same recurrence in
float64, on the same coefficients (the loop is the recurrence itself; ours chunks the scan so that the cumulative
log-decay stays small; one ``logcumsumexp`` over the whole sequence loses digits as the sequence grows).

``mingru-pytorch`` is in the ``peers`` extra (and so in ``test``); a table whose package is missing says so.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch

from suite.measure.timing import Timing, time_calls
from suite.models.linear_loop import linear_loop
from suite.models.mamba import MambaBlock
from suite.models.minrnn import MinRNN
from suite.models.scan import log_scan
from suite.models.selective_loop import chunk_positions, selective_loop
from suite.runtime import numerics
from suite.tools import measured_on, titled
from suite.tools.peers import peer_tables


def backward_of(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], None]:
    return lambda: model(x).float().square().mean().backward()


def mamba_pair(length: int, batch: int, width: int, kernel: str = "loop") -> dict[str, Callable[[], None]]:
    from mambapy.mamba import MambaBlock as Theirs
    from mambapy.mamba import MambaConfig

    theirs = Theirs(MambaConfig(d_model=width, n_layers=1, d_state=16, expand_factor=2, d_conv=4))
    ours = MambaBlock(width, d_state=16, expand=2, d_conv=4, kernel=kernel)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(batch, length, width)
    return {"ours": backward_of(ours, x), "mambapy": backward_of(theirs, x)}


def mingru_pair(
    length: int, batch: int, width: int, kernel: str, chunk: int | None = 256
) -> dict[str, Callable[[], None]]:
    from minGRU_pytorch import minGRU

    theirs = minGRU(width)
    ours = MinRNN(width, "gru", chunk=chunk, kernel=kernel)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(batch, length, width)
    return {"ours": lambda: ours(x)[0].square().mean().backward(), "mingru-pytorch": backward_of(theirs, x)}


def scan_errors(lengths: list[int], width: int) -> dict[int, dict[str, float]]:
    """Length -> {scan: largest relative error in float32 against float64}, on one sequence's minGRU coefficients."""
    from minGRU_pytorch.minGRU import heinsen_associative_scan_log as theirs

    layer, errors = MinRNN(width, "gru"), {}
    for n in lengths:
        with torch.no_grad():
            log_a, log_b = layer.coefficients(torch.randn(1, n, width))
            exact = log_scan(log_a.double(), log_b.double(), chunk=None)  # float64: ~10^-12 at 16K
            scans = {"ours (the loop)": linear_loop(log_a.exp(), log_b.exp())}
            scans[f"ours (chunks of {layer.chunk})"] = log_scan(log_a, log_b, chunk=layer.chunk)
            scans["mingru-pytorch"] = theirs(log_a, log_b)
            errors[n] = {name: ((h.double() - exact).abs() / exact.abs()).max().item() for name, h in scans.items()}
    return errors


def print_errors(errors: dict[int, dict[str, float]]) -> None:
    names = list(next(iter(errors.values())))
    print("**minGRU scan: largest relative error in float32 against float64**\n")
    print("| length | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for n, row in errors.items():
        print(f"| {n} | " + " | ".join(f"{row[name]:.1e}" for name in names) + " |")
    print()


def chunk_table(lengths: list[int], batch: int, width: int, warmup: int, repeats: int) -> list[dict[str, str]]:
    """Our loop (``selective_loop``) at each chunk length and at the one ``chunk_positions`` picks, forward and backward
    of one layer's scan at E = 2 x width, N = 16, timed interleaved: a row a length, a column a chunk (median ms)."""
    states, inner = 16, 2 * width
    picked = chunk_positions(batch, inner, states)
    out = []
    for length in lengths:
        torch.manual_seed(0)
        inputs = [torch.randn(batch, length, inner), torch.rand(batch, length, inner) * 0.1, -torch.rand(inner, states),
                  torch.randn(batch, length, states), torch.randn(batch, length, states)]  # fmt: skip
        for t in inputs:
            t.requires_grad_()

        def call(chunk: int) -> Callable[[], None]:
            def once() -> None:
                for t in inputs:
                    t.grad = None  # a fresh gradient a call, as in a training step
                sum(v.sum() for v in selective_loop(*inputs, chunk=chunk)).backward()

            return once

        times = time_calls({str(c): call(c) for c in (1, 2, 4, 8, 16)}, torch.device("cpu"), warmup, repeats)
        row = {"length": str(length)} | {f"chunk {c} (ms)": f"{t.median * 1e3:.1f}" for c, t in times.items()}
        share = next(iter(times.values())).others_cpu_share
        out.append(row | {"picked": str(picked), "others' CPU share": "" if share is None else f"{100 * share:.0f} %"})
    return out


def main(argv: list[str] | None = None) -> dict[str, dict[int, dict[str, Timing]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunks", action="store_true", help="only our loop's chunk lengths against each other")
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)
    cpu = torch.device("cpu")
    print(measured_on(cpu, f"batch {args.batch}, width {args.width}, fp32, forward + backward"))
    if args.chunks:
        print(titled("mamba, our loop's positions a chunk: one layer's scan, forward + backward",
                     chunk_table(args.lengths, args.batch, args.width, args.warmup, args.repeats)))  # fmt: skip
        return {}
    pairs = (
        ("mamba, our loop", lambda n: mamba_pair(n, args.batch, args.width, "loop"), "mambapy"),
        ("mamba, our log-space scan", lambda n: mamba_pair(n, args.batch, args.width, "log"), "mambapy"),
        ("mingru, our loop", lambda n: mingru_pair(n, args.batch, args.width, "loop"), "mingru-pytorch"),
        ("mingru, our log-space scan", lambda n: mingru_pair(n, args.batch, args.width, "log"), "mingru-pytorch"),
        (
            "mingru, the scan in one chunk",
            lambda n: mingru_pair(n, args.batch, args.width, "log", None),
            "mingru-pytorch",
        ),
    )
    timings = peer_tables(pairs, args.lengths, cpu, args.warmup, args.repeats, "one layer, forward + backward", "peers")
    try:
        print_errors(scan_errors(args.lengths, args.width))
    except ImportError:
        print("(mingru-pytorch is not installed: no error table; `pip install -e '.[peers]'`)")
    return timings


if __name__ == "__main__":
    main()
