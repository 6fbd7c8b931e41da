"""Decoding speed with and without the key/value cache, as a ratio from one run.

    python -m suite.tools.decode_bench                      # transformer and lstm, 64 generated tokens
    python -m suite.tools.decode_bench --models transformer --batch 64 --tokens 128

A thin command line over the speed job's generation measurement
(``suite.measure.harness.generation_speed``, which ``job=speed`` runs on a translation or
summarization model with its task's data), for models without a task or data: each model
(built from ``conf/model/<name>.yaml`` with random weights: speed does not depend on
training) greedily generates exactly ``--tokens`` tokens for a batch of random sources (no EOS
can end a sequence early). Without the cache every step re-runs the decoder over the whole
prefix; with it, one position per step. One warm-up, then the median of ``--repeats`` timed
runs, cached and uncached interleaved, the device synchronised before each clock read.
"""

from __future__ import annotations

import argparse

import torch

from suite.generation.search import greedy
from suite.measure.harness import generation_speed
from suite.models.seq2seq import Seq2Seq, build_seq2seq
from suite.runtime import numerics
from suite.runtime.compose import composed
from suite.runtime.device import resolve_device


def build(name: str, vocab: int, max_len: int) -> Seq2Seq:
    """A model from its config (the real composition, as ``suite.run`` sees it)."""
    cfg = composed([f"model={name}"])
    return build_seq2seq(cfg.model, vocab, vocab, max_len=max_len, shared_vocab=True)


def main(argv: list[str] | None = None) -> list[dict[str, float | str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["transformer", "lstm"], help="model configs (conf/model/)")
    parser.add_argument("--tokens", type=int, default=64, help="tokens generated per sequence")
    parser.add_argument("--batch", type=int, default=32, help="sequences per batch")
    parser.add_argument("--src-len", type=int, default=32, help="source length")
    parser.add_argument("--vocab", type=int, default=8000, help="vocabulary size")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per setting (median reported)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's choice)")
    args = parser.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    numerics.set_flush_denormals(True)  # as every run of the suite: subnormals would time the data, not the model
    torch.manual_seed(0)
    device = resolve_device(args.device)
    src = torch.randint(4, args.vocab, (args.batch, args.src_len), device=device)
    print(
        f"greedy decoding, {args.tokens} tokens x batch {args.batch}, source length {args.src_len}, vocab "
        f"{args.vocab}, {device} ({torch.get_num_threads()} threads); median of {args.repeats} runs"
    )
    print(f"{'model':<14}{'params':>10}{'cached tok/s':>15}{'uncached tok/s':>17}{'ratio':>8}")
    rows = []
    for name in args.models:
        model = build(name, args.vocab, max_len=max(args.src_len, args.tokens + 1)).to(device).eval()
        generate = lambda cache, model=model: greedy(model, src, None, bos=2, eos=-1, max_len=args.tokens, cache=cache)  # noqa: E731 - eos=-1: never ends early
        with torch.inference_mode():
            figures = generation_speed(generate, device, warmup=1, repeats=args.repeats)
        assert figures["generated_tokens"] == args.batch * args.tokens
        fast, slow = figures["generate_tokens_per_s"], figures["generate_uncached_tokens_per_s"]
        params = sum(p.numel() for p in model.parameters())
        rows.append(
            {
                "model": name,
                "params": params,
                "cached_tokens_per_s": fast,
                "uncached_tokens_per_s": slow,
                "ratio": fast / slow,
            }
        )
        print(f"{name:<14}{params:>10,}{fast:>15,.0f}{slow:>17,.0f}{fast / slow:>7.2f}x")
    return rows


if __name__ == "__main__":
    main()
