"""The modern baselines' chunked training forms against their own recurrences and against ``fla``'s reference
functions, forward and backward, in one process.

    python -m suite.tools.chunked_bench                                  # 16-16K, 16K tokens a batch, one thread
    python -m suite.tools.chunked_bench --models gla --lengths 1024 4096 --width 64

Two kinds of table, every pair timed interleaved (median, IQR), the same weights and inputs:

1. **Chunked against sequential**, one mixer a model (``suite.models.mamba2``, ``gla``, ``deltanet``, ``retnet``,
   ``xlstm``'s mLSTM, ``rwkv7``) at
   width ``--width``, a fixed number of tokens a batch (``--tokens``: batch = tokens / length, so the tokens/s of two
   lengths compare like for like): training tokens/s of the chunked form and of the recurrence (the decoding form,
   run over the whole sequence; above ``--sequential-max`` positions it is not timed and the table says so: its
   autograd graph keeps every position's state, a (d_k, d_v) matrix a head, so at 16K tokens a batch it holds
   gigabytes and takes seconds a call), the ratio, and the chunked form's peak memory. Under the table: the
   crossover (the shortest length where the chunked form is faster) and the chunked form's tokens/s at the longest
   length over that at 1K.
2. **Against the peer**: our kernel (``suite.models.chunked``) beside ``fla``'s reference function of the same
   recurrence (naive_recurrent_gla, naive_chunk_simple_gla, delta_rule_recurrence, naive_retention, dplr_chunkwise)
   and ``xlstm``'s chunkwise_simple mLSTM, the same inputs, forward and backward; ``fla-core`` and ``xlstm`` are in
   the ``peers`` extra, and a missing package is named.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from suite.measure.memory import peak_memory
from suite.measure.timing import Timing, time_calls
from suite.models import chunked
from suite.models.chunked_dplr import chunk_dplr
from suite.models.chunked_mlstm import chunk_mlstm
from suite.models.deltanet import CHUNK as DELTA_CHUNK
from suite.models.deltanet import DeltaNetMixer
from suite.models.gla import CHUNK as GLA_CHUNK
from suite.models.gla import GLAMixer
from suite.models.mamba2 import Mamba2Mixer
from suite.models.retnet import RetentionMixer
from suite.models.rwkv7 import CHUNK as RWKV7_CHUNK
from suite.models.rwkv7 import RWKV7Mixer
from suite.models.xlstm import MLSTMMixer
from suite.runtime import numerics
from suite.tools import measured_on, titled
from suite.tools.peers import peer_tables

MIXERS: dict[str, Callable[[int], nn.Module]] = {
    "mamba2": lambda d: Mamba2Mixer(d, head_dim=min(64, 2 * d)),
    "gla": lambda d: GLAMixer(d),
    "deltanet": lambda d: DeltaNetMixer(d),
    "gated_deltanet": lambda d: DeltaNetMixer(d, gated=True),
    "retnet": lambda d: RetentionMixer(d),
    "mlstm": lambda d: MLSTMMixer(d),
    "rwkv7": lambda d: RWKV7Mixer(d),
}


def training_call(mixer: nn.Module, x: torch.Tensor, step: bool) -> Callable[[], None]:
    """One forward and backward of ``mixer`` over x, in its chunked form or (``step``) its recurrence."""

    def call() -> None:
        mixer.zero_grad(set_to_none=True)
        mixer(x, None, step)[0].float().square().mean().backward()

    return call


def forms_table(
    model: str, lengths: list[int], width: int, tokens: int, sequential_max: int, warmup: int, repeats: int
) -> dict[int, dict[str, Timing | int]]:
    """Length -> {'chunked', 'sequential' (Timing), and their peak bytes}; prints the table."""
    device = torch.device("cpu")
    torch.manual_seed(0)
    mixer = MIXERS[model](width)
    out, rows = {}, []
    for n in lengths:
        x = torch.randn(max(1, tokens // n), n, width)
        calls = {"chunked": training_call(mixer, x, False)}
        if n <= sequential_max:
            calls["sequential"] = training_call(mixer, x, True)
        times = time_calls(calls, device, warmup, repeats)
        peak = peak_memory(calls["chunked"], device)
        out[n] = times | {"chunked peak": peak}
        real = x.shape[0] * n
        row = {"length": str(n), "batch": str(x.shape[0])}
        row["chunked tok/s"] = f"{real / times['chunked'].median:,.0f}"
        seq = times.get("sequential")
        row["sequential tok/s"] = f"{real / seq.median:,.0f}" if seq else f"not timed (> {sequential_max})"
        row["chunked / sequential"] = f"{seq.median / times['chunked'].median:.2f}x" if seq else ""
        row["chunked peak MiB"] = f"{peak / 2**20:,.1f}"
        rows.append(row)
    print(titled(f"{model}: one mixer, width {width}, {tokens} tokens a batch, forward + backward", rows))
    faster = [n for n in lengths if "sequential" in out[n] and out[n]["sequential"].median > out[n]["chunked"].median]
    crossover = f"from {min(faster)}" if faster else "none measured"
    print(f"crossover: {crossover} (the shortest length where the chunked form is faster)")
    if 1024 in out and max(lengths) > 1024:  # the same tokens a batch: the time ratio is the tokens/s ratio
        keep = out[1024]["chunked"].median / out[max(lengths)]["chunked"].median
        print(f"chunked tokens/s at {max(lengths)} over 1024: {keep:.2f}x\n")
    return out


def peer_pairs(batch_tokens: int, heads: int, dim: int) -> list[tuple[str, Callable[[int], dict], str]]:
    """(name, length -> {'ours', peer: call}, peer) for each recurrence ``fla`` has a reference function of."""

    def inputs(n: int, per_key: bool = False, gate: bool = True):
        torch.manual_seed(0)
        b = max(1, batch_tokens // n)
        q, k, v = (torch.randn(b, heads, n, dim, requires_grad=True) for _ in range(3))
        g = F.logsigmoid(torch.randn(b, heads, n, dim if per_key else 1) + 3).detach().requires_grad_(gate)
        return q, k, v, g

    def backward(fn):
        return lambda: fn()[0].square().mean().backward()

    def gla(n):
        from fla.ops.gla.naive import naive_recurrent_gla

        q, k, v, g = inputs(n, per_key=True)
        t = [x.transpose(1, 2) for x in (q, k, v, g)]
        return {
            "ours": backward(lambda: chunked.chunk_gated(q * dim**-0.5, k, v, g, chunk=GLA_CHUNK)),
            "fla naive_recurrent_gla": backward(lambda: naive_recurrent_gla(*t)),
        }

    def ssd(n):
        from fla.ops.simple_gla.naive import naive_chunk_simple_gla

        q, k, v, g = inputs(n)
        t = [x.transpose(1, 2) for x in (q, k, v)]
        return {
            "ours": backward(lambda: chunked.chunk_gated(q * dim**-0.5, k, v, g)),
            "fla naive_chunk_simple_gla": backward(lambda: naive_chunk_simple_gla(*t, g[..., 0].transpose(1, 2))),
        }

    def delta(n):
        from fla.ops.delta_rule.naive import delta_rule_recurrence

        q, k, v, _ = inputs(n)
        beta = torch.rand(q.shape[:3], requires_grad=True)
        kn = F.normalize(k.detach(), dim=-1).requires_grad_()  # keys of unit length, a leaf as the others are
        return {
            "ours": backward(lambda: chunked.chunk_delta(q * dim**-0.5, kn, v, beta, chunk=DELTA_CHUNK)),
            "fla delta_rule_recurrence": backward(lambda: delta_rule_recurrence(q, kn, v, beta)),
        }

    def retention(n):
        from fla.ops.retention.naive import naive_retention

        q, k, v, _ = inputs(n, gate=False)
        g = torch.log(1 - 2.0 ** (-5 - torch.arange(float(heads))))[:, None, None].expand(q.shape[0], heads, n, 1)
        return {
            "ours": backward(lambda: chunked.chunk_gated(q * dim**-0.5, k, v, g)),
            "fla naive_retention": backward(lambda: (naive_retention(q, k, v),)),
        }

    def mlstm(n):
        from xlstm.blocks.mlstm.backends import chunkwise_simple

        q, k, v, _ = inputs(n)
        i, f = (torch.randn(q.shape[:3], requires_grad=True) for _ in range(2))
        chunk = math.gcd(n, 64)  # theirs needs whole chunks
        return {
            "ours": backward(lambda: chunk_mlstm(q, k * dim**-0.5, v, i, F.logsigmoid(f), chunk=64)),
            "xlstm chunkwise_simple": backward(lambda: (chunkwise_simple(q, k, v, i, f, chunk_size=chunk),)),
        }

    def dplr(n):
        from fla.ops.generalized_delta_rule.dplr.naive import dplr_chunkwise

        q, k, v, _ = inputs(n)
        torch.manual_seed(1)
        kk = F.normalize(torch.randn(q.shape), dim=-1)
        a = torch.rand(q.shape)
        alpha, beta = (-kk).requires_grad_(), (kk * a).requires_grad_()
        g = (-0.6 * torch.rand(q.shape)).requires_grad_()  # RWKV-7's decays: at most e^-0.61 a position
        return {
            "ours": backward(lambda: chunk_dplr(q, k, v, alpha, beta, g, chunk=RWKV7_CHUNK)),
            "fla dplr_chunkwise": backward(
                lambda: dplr_chunkwise(q * dim**0.5, k, v, alpha, beta, g, chunk_size=RWKV7_CHUNK)
            ),  # q scaled by dim^-0.5 inside
        }

    return [
        ("GLA (a decay a key dimension)", gla, "fla naive_recurrent_gla"),
        ("Mamba-2 / simple GLA (a decay a head)", ssd, "fla naive_chunk_simple_gla"),
        ("DeltaNet", delta, "fla delta_rule_recurrence"),
        ("RetNet", retention, "fla naive_retention"),
        ("mLSTM (xLSTM)", mlstm, "xlstm chunkwise_simple"),
        ("RWKV-7 (diagonal plus low rank)", dplr, "fla dplr_chunkwise"),
    ]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MIXERS), choices=list(MIXERS), help="none: the peers only")
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 256, 1024, 4096, 16384])
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=16384, help="tokens a batch (batch = tokens / length)")
    parser.add_argument("--sequential-max", type=int, default=1024, help="longest length the recurrence is timed at")
    parser.add_argument("--peer-lengths", type=int, nargs="*", default=[1024, 4096], help="none: no peer tables")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)
    cpu = torch.device("cpu")
    print(measured_on(cpu, f"width {args.width}, {args.tokens} tokens a batch, fp32, forward + backward"))
    forms = {
        m: forms_table(m, args.lengths, args.width, args.tokens, args.sequential_max, args.warmup, args.repeats)
        for m in args.models
    }
    peers = {} if not args.peer_lengths else peer_tables(
        peer_pairs(args.tokens, 4, 32), args.peer_lengths, cpu, args.warmup, args.repeats,
        "the kernel alone, 4 heads of 32, forward + backward", "peers",
    )  # fmt: skip
    return {"forms": forms, "peers": peers}


if __name__ == "__main__":
    main()
