"""Greedy and beam search: cache or not, beam 1 is greedy, beam beats greedy where it should, batches change nothing."""

import math

import pytest
import torch

from suite.generation.search import beam_search, greedy
from suite.models.heads import Generator
from suite.models.seq2seq import build_seq2seq
from suite.tools import decode_bench
from tests.conftest import compose_config, shrink

BOS, EOS, VOCAB = 2, 3, 50


def model(name: str):
    cfg = shrink(compose_config(f"model={name}"))
    return build_seq2seq(cfg.model, VOCAB, VOCAB, max_len=40, shared_vocab=True).eval()


def sources():
    src = torch.randint(4, VOCAB, (4, 9))
    mask = torch.zeros(4, 9, dtype=torch.bool)
    mask[1, 6:] = True
    mask[3, 2:] = True
    return src.masked_fill(mask, 0), mask


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_cache_changes_nothing(name):
    net, (src, mask) = model(name), sources()
    opts = dict(bos=BOS, eos=EOS, max_len=12)
    assert greedy(net, src, mask, **opts) == greedy(net, src, mask, cache=False, **opts)
    assert beam_search(net, src, mask, beam_size=3, **opts) == beam_search(
        net, src, mask, beam_size=3, cache=False, **opts
    )


@pytest.mark.parametrize("name", ["transformer", "lstm", "gru"])
def test_beam_one_is_greedy(name):
    net, (src, mask) = model(name), sources()
    opts = dict(bos=BOS, eos=EOS, max_len=15)
    for eos in (EOS, int(greedy(net, src, mask, **opts)[0][3])):  # also an EOS that the model does produce
        out = greedy(net, src, mask, bos=BOS, eos=eos, max_len=15)
        assert beam_search(net, src, mask, bos=BOS, eos=eos, max_len=15, beam_size=1) == out
        assert all(len(hyp) <= 15 and eos not in hyp for hyp in out)


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_batching_and_padding_change_nothing(name):
    net, (src, mask) = model(name), sources()
    opts = dict(bos=BOS, eos=EOS, max_len=10, beam_size=3)
    batched = beam_search(net, src, mask, **opts)
    alone = [beam_search(net, src[i : i + 1, : int((~mask[i]).sum())], None, **opts)[0] for i in range(len(src))]
    assert batched == alone


class Bigram(torch.nn.Module):
    """A toy ``Generative`` model: the next token depends on the previous token only, via a fixed table."""

    def __init__(self, probs: dict[int, dict[int, float]], vocab: int = 6) -> None:
        super().__init__()
        table = torch.full((vocab, vocab), 1e-9)
        for prev, row in probs.items():
            for nxt, p in row.items():
                table[prev, nxt] = p
        self.logits = table.log()

    def encode(self, src, src_mask=None):
        return torch.zeros(src.size(0), src.size(1), 1)

    def decode_features(self, tgt, memory, src_mask=None):
        return tgt  # (B, T): the previous token is all the state there is

    def project(self, h, state):
        return self.logits[h]  # (..., V)

    def start(self, memory, src_mask=None, src=None):
        return {"memory": memory, "memory_mask": torch.zeros(memory.shape[:2], dtype=torch.bool)}

    def step(self, tokens, position, state):
        return self.logits[tokens[:, -1]], state

    def logprob(self, hyp: list[int]) -> float:
        seq = [BOS, *hyp, EOS]
        return sum(self.logits[a, b].item() for a, b in zip(seq, seq[1:]))


def test_beam_finds_what_greedy_misses():
    # Greedy takes 'a' (0.6) and then wanders; 'b' (0.4) ends at once with 0.95: 0.38 overall.
    a, b = 4, 5
    toy = Bigram({BOS: {a: 0.6, b: 0.4}, a: {a: 0.35, b: 0.35, EOS: 0.3}, b: {EOS: 0.95, a: 0.05}})
    src = torch.ones(1, 3, dtype=torch.long)
    opts = dict(bos=BOS, eos=EOS, max_len=6)
    best = beam_search(toy, src, None, beam_size=2, length_penalty=0.0, **opts)[0]
    assert best == [b] and math.isclose(toy.logprob(best), math.log(0.38), rel_tol=1e-5)
    assert toy.logprob(greedy(toy, src, None, **opts)[0]) < toy.logprob(best)


def test_length_penalty_prefers_longer_hypotheses():
    # [] has probability 0.5 and [a] 0.4: by log-probability [] wins; divided by GNMT's
    # ((5 + length) / 6)^2, [a] does (-0.92 / 1.36 > -0.69 / 1).
    a = 4
    toy = Bigram({BOS: {EOS: 0.5, a: 0.5}, a: {EOS: 0.8, a: 0.2}})
    src = torch.ones(1, 3, dtype=torch.long)
    opts = dict(bos=BOS, eos=EOS, max_len=8, beam_size=4)
    assert beam_search(toy, src, None, length_penalty=0.0, **opts) == [[]]
    assert beam_search(toy, src, None, length_penalty=2.0, **opts) == [[a]]


def test_generator_can_tie_to_the_embedding():
    emb = torch.nn.Embedding(VOCAB, 16)
    tied, free = Generator(16, VOCAB, tie_to=emb), Generator(16, VOCAB)
    assert tied.proj.weight is emb.weight and free.proj.weight is not emb.weight
    with pytest.raises(ValueError, match="tie"):
        Generator(8, VOCAB, tie_to=emb)


def test_decode_bench_reports_both_speeds_and_their_ratio(capsys):
    rows = decode_bench.main(
        [
            "--models",
            "transformer",
            "lstm",
            "--tokens",
            "3",
            "--batch",
            "2",
            "--src-len",
            "4",
            "--vocab",
            "50",
            "--repeats",
            "1",
        ]
    )
    assert [r["model"] for r in rows] == ["transformer", "lstm"]
    assert all(
        r["cached_tokens_per_s"] > 0 and r["ratio"] == r["cached_tokens_per_s"] / r["uncached_tokens_per_s"]
        for r in rows
    )
    assert "ratio" in capsys.readouterr().out


def ngrams(seq: list[int], n: int) -> list[tuple[int, ...]]:
    return [tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)]


def test_no_repeat_ngram_breaks_a_loop():
    # Left alone the toy loops on 'a' until max_len; forbidding a repeated bigram allows 'a a'
    # once, then the next 'a' would repeat it, so the runner-up EOS ends the sequence.
    a, b = 4, 5
    toy = Bigram({BOS: {a: 0.9, b: 0.1}, a: {a: 0.7, b: 0.1, EOS: 0.2}, b: {a: 0.6, EOS: 0.4}})
    src = torch.ones(1, 3, dtype=torch.long)
    opts = dict(bos=BOS, eos=EOS, max_len=6)
    assert greedy(toy, src, None, **opts) == [[a] * 6]
    assert greedy(toy, src, None, no_repeat_ngram=2, **opts) == [[a, a]]
    # Blocking prunes but does not renormalise: [a] (0.9 * 0.2) beats [a a] (0.9 * 0.7 * 0.2).
    assert beam_search(toy, src, None, beam_size=2, length_penalty=0.0, no_repeat_ngram=2, **opts) == [[a]]
    assert greedy(toy, src, None, no_repeat_ngram=1, **opts) == [[a]]  # no token twice


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_no_repeat_ngram_holds_and_keeps_the_searches_consistent(name):
    net, (src, mask) = model(name), sources()
    opts = dict(bos=BOS, eos=-1, max_len=20, no_repeat_ngram=2)  # no EOS: 20 tokens from 50 ids must repeat tokens
    out = greedy(net, src, mask, **opts)
    assert all(len(hyp) == 20 and len(set(ngrams([BOS, *hyp], 2))) == len(hyp) for hyp in out)
    assert out == greedy(net, src, mask, cache=False, **opts) == beam_search(net, src, mask, beam_size=1, **opts)
    beams = beam_search(net, src, mask, beam_size=3, **opts)
    assert beams == beam_search(net, src, mask, beam_size=3, cache=False, **opts)
    assert all(len(set(ngrams([BOS, *hyp], 2))) == len(hyp) for hyp in beams)


def test_min_len_holds_off_the_end():
    a = 4
    toy = Bigram({BOS: {EOS: 0.6, a: 0.4}, a: {EOS: 0.8, a: 0.2}})
    src = torch.ones(1, 3, dtype=torch.long)
    opts = dict(bos=BOS, eos=EOS, max_len=8)
    assert greedy(toy, src, None, **opts) == [[]]
    for m in (1, 3):
        assert greedy(toy, src, None, min_len=m, **opts) == [[a] * m]
        assert beam_search(toy, src, None, beam_size=2, min_len=m, **opts) == [[a] * m]


@pytest.mark.parametrize("name", ["transformer", "gru"])
def test_min_len_with_a_model(name):
    net, (src, mask) = model(name), sources()
    eos = int(greedy(net, src, mask, bos=BOS, eos=EOS, max_len=15)[0][0])  # an EOS the model produces at once
    opts = dict(bos=BOS, eos=eos, max_len=15, min_len=4)
    out = greedy(net, src, mask, **opts)
    assert all(4 <= len(hyp) for hyp in out) and out == beam_search(net, src, mask, beam_size=1, **opts)
    assert all(4 <= len(hyp) for hyp in beam_search(net, src, mask, beam_size=3, **opts))
