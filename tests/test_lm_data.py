"""Language-model data: splits by document with no text twice, lossless streams that hold every
byte once, windows that score every target exactly once (checked against brute force), the
metrics' formulas, and a smoke training run through the command line."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from suite.run import execute
from suite.runtime.record import RESULT_FILE, read_result
from tasks.language_model import build, first_occurrences, load
from tasks.next_token import (
    Corpus,
    Tally,
    Windows,
    document_index,
    scored_nll,
    sliding_windows,
    training_windows,
    window_collate,
)
from tests.conftest import LM_VOCAB as V
from tests.conftest import TINY_LM, compose_config, need_data, shrink, tiny_lm

ROOT = Path(__file__).resolve().parents[1]


def test_bbc_split_is_by_document_without_repeats(bbc_dir):
    corpus = load("bbc", str(bbc_dir), "bpe", 300, 0.1, 0.1, 0)
    docs = corpus.documents
    assert sum(len(d) for d in docs.values()) == 60  # the repeated article and the repeated body are gone
    bodies = {split: {d.split("\n\n", 1)[1] for d in texts} for split, texts in docs.items()}
    assert (
        not (bodies["train"] & bodies["val"])
        and not (bodies["train"] & bodies["test"])
        and not (bodies["val"] & bodies["test"])
    )
    assert docs == load("bbc", str(bbc_dir), "bpe", 300, 0.1, 0.1, 0).documents  # seeded
    assert docs != load("bbc", str(bbc_dir), "bpe", 300, 0.1, 0.1, 1).documents


def test_streams_hold_every_byte_once_and_decode_back(bbc_dir):
    for tokenizer in ("bpe", "byte"):
        corpus = load("bbc", str(bbc_dir), tokenizer, 300, 0.1, 0.1, 0)
        for split, texts in corpus.documents.items():
            stream = corpus.streams[split]
            assert int(corpus.token_bytes[stream[1:]].sum()) == sum(
                len(t.encode("utf-8")) + 1 for t in texts
            )  # + one [EOS] byte a document
            assert int((stream == corpus.eos_id).sum()) == len(texts) + 1
            first = stream[1 : (stream[1:] == corpus.eos_id).nonzero()[0].item() + 1].tolist()
            assert corpus.tokenizer.decode(first) == texts[0]  # lossless: "£5 café" survives
    assert corpus.tokenizer.get_vocab_size() == 260  # bytes: 256 and the 4 specials


def test_first_occurrences_keep_a_repeated_text_in_its_first_split_only():
    splits = first_occurrences({"train": ["a", "b", "a"], "val": ["b", "c"], "test": ["c", "d", "a"]})
    assert splits == {"train": ["a", "b"], "val": ["c"], "test": ["d"]}


def test_aeslc_keeps_each_body_once_in_its_first_split(bbc_dir):
    corpus = load("aeslc", str(bbc_dir), "bpe", 300, 0.1, 0.1, 0)
    assert [len(corpus.documents[s]) for s in ("train", "val", "test")] == [
        20,
        5,
        5,
    ]  # repeats dropped: 2 in train, 1 in dev
    assert int((corpus.streams["test"] == corpus.eos_id).sum()) == 6


def test_real_aeslc_bodies_are_in_one_split_each():
    need_data("summarization", "aeslc")
    from tasks.language_model import aeslc_documents

    docs = aeslc_documents(None)
    seen = [set(d) for d in docs.values()]
    assert all(len(d) == len(s) for d, s in zip(docs.values(), seen))
    assert not (seen[0] & seen[1]) and not (seen[0] & seen[2]) and not (seen[1] & seen[2])
    assert len(docs["train"]) > 13000 and len(docs["test"]) > 1500


def test_real_bbc_split_has_no_article_twice():
    need_data("summarization", "bbc_news_summary")
    from tasks.language_model import bbc_documents

    docs = bbc_documents(None, 0.1, 0.1, 0)
    everything = [d for texts in docs.values() for d in texts]
    assert len(everything) == len(set(everything)) == 2092
    assert len(docs["test"]) == 210


def test_unknown_dataset_and_tokenizer_are_named(bbc_dir):
    with pytest.raises(ValueError, match="'wiki'.*bbc"):
        build("language_model", dataset="wiki")
    with pytest.raises(ValueError, match="'chars'.*bpe"):
        load("bbc", str(bbc_dir), "chars", 300, 0.1, 0.1, 0)


def test_missing_data_names_the_path_and_make_data(tmp_path):
    record = execute(
        shrink(compose_config("task=language_model", "model=lstm", f"data_dir={tmp_path / 'nowhere'}")), tmp_path
    )
    assert record.status == "failed"
    assert (
        str(tmp_path / "nowhere" / "summarization" / "bbc_news_summary") in record.error and "make data" in record.error
    )


@pytest.mark.parametrize("n, length, stride", [(40, 8, 1), (40, 8, 3), (40, 8, 8), (41, 8, 5), (6, 8, 4), (9, 8, 2)])
def test_sliding_windows_score_every_target_once_with_enough_context(n, length, stride):
    scored = []
    for start, first in sliding_windows(n, length, stride):
        width = min(length, n - 1)
        assert 0 <= start and start + width <= n - 1
        for j in range(first, width):
            target = start + j + 1
            scored.append(target)
            context = j + 1
            assert context == target or context >= width - stride + 1  # short only at the stream's start
    assert sorted(scored) == list(range(1, n))


def test_training_windows_are_full_and_do_not_overlap():
    windows = training_windows(40, 8)
    assert [a for a, _ in windows] == [0, 8, 16, 24] and all(
        first == 0 for _, first in windows
    )  # 32 + 8 targets need 41 tokens


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_evaluation_equals_brute_force_per_token(model):
    # Stride 1: target i is scored with exactly the min(i, L) tokens before it; so is the brute force.
    length, n = 8, 30
    stream = torch.randint(4, V, (n,))
    task = build("language_model", seq_len=length, stride=1)
    task.corpus = Corpus(
        documents={},
        streams={"val": stream},
        tokenizer=None,
        token_bytes=torch.ones(V, dtype=torch.long),
        eos_id=3,
        pad_id=0,
    )
    task.unigram = torch.zeros(V)
    loader = DataLoader(Windows(stream, sliding_windows(n, length, 1), length), batch_size=5, collate_fn=window_collate)
    net = tiny_lm(model, context=length)
    with torch.no_grad():
        metrics = task.evaluate(net, loader, torch.device("cpu"))
        brute = sum(
            -torch.log_softmax(net(stream[max(0, i - length) : i][None])[0, -1], -1)[stream[i]].item()
            for i in range(1, n)
        )
    assert metrics["loss"] == pytest.approx(brute / (n - 1), rel=1e-5)
    assert metrics["bits_per_byte"] == pytest.approx(brute / math.log(2) / (n - 1), rel=1e-5)  # one byte a token here


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_exact_context_scores_each_drawn_target_with_exactly_c_tokens(model):
    # What job=context_use rests on: at every c the same targets, each scored given exactly the c tokens before it.
    length, n, contexts = 8, 40, [2, 5, 8]
    stream = torch.randint(4, V, (n,))
    task = build("language_model", seq_len=length, stride=4)
    task.corpus = Corpus(
        documents={},
        streams={"test": stream},
        tokenizer=None,
        token_bytes=torch.ones(V, dtype=torch.long),
        eos_id=3,
        pad_id=0,
    )
    task.unigram = torch.zeros(V)
    net = tiny_lm(model, context=length)
    batches = task.exact_context_batches("test", contexts, n_targets=10, batch_size=3, seed=0)
    spans = {
        tuple(stream[i : i + c + 1].tolist()) for c in contexts for i in range(n - c)
    }  # every c tokens and the one after them
    first = None
    for c in contexts:
        brute, targets = [], []
        for b in batches[c]:
            assert (
                b.inputs.size(1) == c and (b.extra["scored"].sum(1) == 1).all() and b.extra["scored"][:, -1].all()
            )  # one target, after all c
            for window, target in zip(b.inputs, b.targets[:, -1]):
                assert (
                    tuple(window.tolist()) + (int(target),) in spans
                )  # c tokens of the stream and the token that follows them
                targets.append(int(target))
                with torch.no_grad():
                    brute.append(-torch.log_softmax(net(window[None])[0, -1], -1)[target].item())
        first = first or targets
        assert len(targets) == 10 and targets == first  # the same targets at every c
        with torch.no_grad():
            assert task.evaluate(net, batches[c], torch.device("cpu"))["loss"] == pytest.approx(
                sum(brute) / len(brute), rel=1e-5
            )


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_per_document_sums_are_each_documents_own_targets(model):
    # Stride 3 over a stream of documents of 1-9 tokens: windows straddle documents, and each target's loss goes to
    # the document whose text (or closing [EOS]) it is.
    length, eos = 8, 3
    gen = torch.Generator().manual_seed(0)
    docs = [torch.randint(4, V, (int(n),), generator=gen).tolist() for n in torch.randint(1, 10, (9,), generator=gen)]
    stream = torch.tensor([eos] + [t for d in docs for t in (*d, eos)])
    task = build("language_model", seq_len=length, stride=3)
    task.corpus = Corpus(
        documents={}, streams={"val": stream}, tokenizer=None, token_bytes=torch.arange(V) % 3, eos_id=eos, pad_id=0
    )
    task.unigram = torch.zeros(V)
    windows = Windows(stream, sliding_windows(len(stream), length, 3), length, document_index(stream, eos))
    net = tiny_lm(model, context=length)
    with torch.no_grad():
        metrics = task.evaluate(net, DataLoader(windows, batch_size=4, collate_fn=window_collate), torch.device("cpu"))
        per_target = {}  # stream position -> nll, as the windows score it
        for start, first in windows.windows:
            logp = torch.log_softmax(net(stream[start : start + length][None])[0], -1)
            for j in range(first, min(length, len(stream) - 1 - start)):
                per_target[start + 1 + j] = -logp[j, stream[start + 1 + j]].item()
    rows = task.predictions()
    assert [r["id"] for r in rows] == list(range(len(docs)))
    ends = torch.cumsum(torch.tensor([len(d) + 1 for d in docs]), 0).tolist()  # each document's closing [EOS]
    for row, end, doc in zip(rows, ends, docs):
        mine = range(end - len(doc), end + 1)
        assert row["tokens"] == len(doc) + 1 and row["bytes"] == int((torch.arange(V) % 3)[stream[list(mine)]].sum())
        assert row["nll"] == pytest.approx(sum(per_target[p] for p in mine), rel=1e-5)
    assert sum(r["nll"] for r in rows) / sum(r["tokens"] for r in rows) == pytest.approx(metrics["loss"], rel=1e-9)


def test_bits_per_byte_and_perplexity_formulas():
    tally = Tally(nll=100 * math.log(2), unigram_nll=100 * math.log(4), tokens=50, bytes=100)
    m = tally.metrics()
    assert m["bits_per_byte"] == pytest.approx(1.0) and m["neg_bits_per_byte"] == pytest.approx(-1.0)
    assert m["perplexity"] == pytest.approx(4.0) and m["loss"] == pytest.approx(
        2 * math.log(2)
    )  # 2 bits a token: 2 bytes of 1 bit
    assert m["unigram_perplexity"] == pytest.approx(16.0)


def test_a_uniform_model_has_perplexity_v():
    class Uniform(torch.nn.Module):
        def features(self, ids):
            return torch.zeros(*ids.shape, 1)

        def generator(self, h):
            return torch.zeros(*h.shape[:-1], V)

    tally = Tally()
    ids = torch.randint(0, V, (3, 7))
    every = torch.ones_like(ids, dtype=torch.bool)
    tally.add(scored_nll(Uniform(), ids, ids, every), ids, every, torch.full((V,), 3), torch.zeros(V))
    assert tally.metrics()["perplexity"] == pytest.approx(V) and tally.metrics()["bits_per_byte"] == pytest.approx(
        math.log2(V) / 3
    )


@pytest.mark.parametrize("model", ["transformer", pytest.param("lstm", marks=pytest.mark.slow)])  # lstm: slow set
def test_smoke_training_through_the_command_line(model, tmp_path, bbc_dir):
    env = {**os.environ, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0"}
    args = [
        "task=language_model",
        f"model={model}",
        "trainer=smoke",
        "logger=none",
        f"data_dir={bbc_dir}",
        f"hydra.run.dir={tmp_path}",
        *TINY_LM,
    ]
    out = subprocess.run(
        [sys.executable, "-m", "suite.run", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    record = read_result(tmp_path / RESULT_FILE)
    assert record.status == "ok" and record.steps == 3 and record.seq_len == 16
    m = record.metrics
    assert {
        "perplexity",
        "bits_per_byte",
        "neg_bits_per_byte",
        "unigram_perplexity",
        "val_perplexity",
        "val_bits_per_byte",
    } <= m.keys()
    assert 1 < m["perplexity"] < 2 * 300 and m["bits_per_byte"] > 0 and m["neg_bits_per_byte"] == -m["bits_per_byte"]
