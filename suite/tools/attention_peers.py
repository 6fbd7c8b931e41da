"""Our efficient attention cores against the maintained packages that implement the same attention, in one process.

    python -m suite.tools.attention_peers                      # lengths 4096 and 16384, batch 4, 4 heads of 32
    python -m suite.tools.attention_peers --lengths 1024 4096

One table a core, forward and backward of the core alone (no projections), every row timed interleaved (median,
IQR) on the same q, k, v, with the peer set as ours is:

- ``local`` (window 64 a side, blocks of 64 reading their neighbours) against ``local-attention``'s
  ``LocalAttention(window_size=64, look_backward=1, look_forward=1, exact_windowsize=True)``, which masks the same
  keys (the outputs are compared before timing);
- ``performer`` (FAVOR+, 256 orthogonal random features, softmax kernel) against ``performer-pytorch``'s
  ``FastAttention(dim_heads, nb_features=256)``;
- ``reformer`` (shared QK, 2 hash rounds, chunks of 64, L / 64 buckets) against ``reformer-pytorch``'s
  ``LSHAttention(bucket_size=64, n_hashes=2)``, which takes L / 64 buckets at every length.

The packages are the ``peers`` extra (``pip install -e '.[peers]'``), never a run-time dependency; a table whose
package is missing says so.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch
from torch import Tensor

from suite.attention.local import LocalAttention
from suite.attention.performer import PerformerAttention
from suite.attention.reformer import ReformerAttention
from suite.measure.timing import Timing
from suite.runtime import numerics
from suite.tools import measured_on
from suite.tools.peers import Pair, peer_tables

WINDOW, FEATURES, CHUNK, ROUNDS = 64, 256, 64, 2


def inputs(batch: int, heads: int, length: int, head_dim: int) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v (B, H, L, Dh) that want gradients."""
    return tuple(torch.randn(batch, heads, length, head_dim, requires_grad=True) for _ in range(3))  # type: ignore[return-value]


def backward_of(fn: Callable[[], Tensor], grads: tuple[Tensor, ...]) -> Callable[[], None]:
    """Forward, a scalar loss, backward; the inputs' gradients cleared each call (no accumulation to pay for)."""

    def step() -> None:
        fn().square().mean().backward()
        for g in grads:
            g.grad = None

    return step


def local_pair(q: Tensor, k: Tensor, v: Tensor) -> Pair:
    from local_attention import LocalAttention as Theirs

    ours = LocalAttention(window=WINDOW, n_heads=q.size(1), head_dim=q.size(-1))
    theirs = Theirs(window_size=WINDOW, look_backward=1, look_forward=1, exact_windowsize=True, autopad=True)
    with torch.no_grad():  # the same keys in reach: the same outputs, or the timing compares two different things
        torch.testing.assert_close(ours(q, k, v), theirs(q, k, v), atol=1e-4, rtol=1e-4)
    return {
        "ours": backward_of(lambda: ours(q, k, v), (q, k, v)),
        "local-attention": backward_of(lambda: theirs(q, k, v), (q, k, v)),
    }


def performer_pair(q: Tensor, k: Tensor, v: Tensor) -> Pair:
    from performer_pytorch import FastAttention

    ours = PerformerAttention(n_features=FEATURES, n_heads=q.size(1), head_dim=q.size(-1))
    theirs = FastAttention(dim_heads=q.size(-1), nb_features=FEATURES)
    return {
        "ours": backward_of(lambda: ours(q, k, v), (q, k, v)),
        "performer-pytorch": backward_of(lambda: theirs(q, k, v), (q, k, v)),
    }


def reformer_pair(q: Tensor, k: Tensor, v: Tensor) -> Pair:
    from reformer_pytorch.reformer_pytorch import LSHAttention

    b, h, length, d = q.shape
    ours = ReformerAttention(n_buckets=length // CHUNK, n_rounds=ROUNDS, chunk=CHUNK, n_heads=h, head_dim=d)
    theirs = LSHAttention(bucket_size=CHUNK, n_hashes=ROUNDS)
    flat = lambda x: x.reshape(b * h, length, d)  # noqa: E731  (theirs: heads folded into the batch)
    return {
        "ours": backward_of(lambda: ours(q, k, v), (q, k, v)),
        "reformer-pytorch": backward_of(lambda: theirs(flat(q), flat(v))[0], (q, k, v)),
    }


PAIRS: tuple[tuple[str, Callable[[Tensor, Tensor, Tensor], Pair], str], ...] = (
    ("local", local_pair, "local-attention"),
    ("performer", performer_pair, "performer-pytorch"),
    ("reformer", reformer_pair, "reformer-pytorch"),
)


def main(argv: list[str] | None = None) -> dict[str, dict[int, dict[str, Timing]]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cores", nargs="+", default=[name for name, _, _ in PAIRS], choices=[n for n, _, _ in PAIRS])
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)
    torch.manual_seed(0)
    cpu = torch.device("cpu")
    print(measured_on(cpu, f"batch {args.batch}, {args.heads} heads of {args.head_dim}, fp32, forward + backward"))
    pairs = [
        (name, lambda n, pair=pair: pair(*inputs(args.batch, args.heads, n, args.head_dim)), peer)
        for name, pair, peer in PAIRS
        if name in args.cores
    ]
    what = "the core alone, forward + backward"
    return peer_tables(pairs, args.lengths, cpu, args.warmup, args.repeats, what, "peers")


if __name__ == "__main__":
    main()
