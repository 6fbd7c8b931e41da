"""Summarization: AESLC and BBC reading and splitting, glued sentences, Lead-k, and ROUGE as rouge-score gives it."""

import json
from collections import Counter

import pytest
import torch
from rouge_score import rouge_scorer

from suite.data.datadir import DataError
from suite.data.tokenizers import split_sentences, train_bpe
from suite.generation.search import greedy
from suite.models.lead import Lead
from tasks.seq2seq import Seq2SeqData, Seq2SeqTask, TextPair
from tasks.summarization import Rouge, aeslc_splits, bbc_splits, unglue
from tests.conftest import compose_config, need_data, shrink


@pytest.fixture(scope="module")
def aeslc():
    need_data("summarization", "aeslc")
    return aeslc_splits(None)


def test_aeslc_splits_and_annotations(aeslc):
    assert {k: len(v) for k, v in aeslc.items()} == {"train": 14436, "val": 1960, "test": 1906}
    assert all(len(p.references) == 3 for p in aeslc["val"] + aeslc["test"])
    assert not any(p.references for p in aeslc["train"])


def test_bbc_split_is_deduplicated_stratified_seeded_and_unglued():
    need_data("summarization", "bbc_news_summary")
    splits = bbc_splits(None, 0.1, 0.1, split_seed=0)
    sources = [p.source for part in splits.values() for p in part]
    assert len(sources) == len(set(sources)) == 2225 - 98 - 35  # no body in two splits (35 recur under another title)
    assert splits == bbc_splits(None, 0.1, 0.1, split_seed=0) and splits != bbc_splits(None, 0.1, 0.1, split_seed=1)
    assert 0.09 < len(splits["test"]) / len(sources) < 0.11
    # The source is the body: it never starts with the title line, and the summaries are drawn from it.
    glued = sum(".For the" in p.target or "bn.The" in p.target for part in splits.values() for p in part)
    assert glued == 0
    found = [s in p.source for p in splits["test"] for s in split_sentences(p.target)]
    assert sum(found) / len(found) > 0.9


def test_unglue_restores_the_missing_spaces():
    assert (
        unglue("sales rose to $10.9bn.For the full-year, profit rose.")
        == "sales rose to $10.9bn. For the full-year, profit rose."
    )
    assert unglue("less users for AOL.For 2005, it plans.") == "less users for AOL. For 2005, it plans."
    assert unglue('it said "in recent months."I think so.') == 'it said "in recent months." I think so.'
    assert unglue('as expected."We reckon it is," he said.') == 'as expected. "We reckon it is," he said.'
    assert unglue("The U.S. economy grew 3.5% in 2004.") == "The U.S. economy grew 3.5% in 2004."  # nothing glued


def test_lead_k_takes_the_first_sentences():
    text = "Hi Sara,\nThe meeting moved to 3 pm. Please tell Bob! Thanks.\n\nJohn"
    assert Lead(1)([text]) == ["Hi Sara,"]
    assert Lead(3)([text]) == ["Hi Sara, The meeting moved to 3 pm. Please tell Bob!"]
    with pytest.raises(ValueError):
        Lead(0)


def tiny_task(aeslc) -> Seq2SeqTask:
    """The summarization task over a slice of AESLC (fast: a small vocabulary on 300 emails)."""
    splits = {"train": aeslc["train"][:300], "val": aeslc["val"][:50], "test": aeslc["test"][:70]}
    tok = train_bpe([p.source for p in splits["train"]] + [p.target for p in splits["train"]], 500, reversible=True)
    task = Seq2SeqTask(
        "summarization",
        "aeslc",
        lambda: Seq2SeqData(splits, tok, tok),
        Rouge(),
        greedy,
        greedy,
        max_source_len=64,
        max_target_len=8,
        primary_metric="rougeL",
    )
    task.setup()
    return task


def direct_rouge(hyps: list[str], refs: list[str]) -> dict[str, float]:
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    scores = [scorer.score(r, h) for h, r in zip(hyps, refs)]
    return {k: 100 * sum(s[k].fmeasure for s in scores) / len(scores) for k in ("rouge1", "rouge2", "rougeL")}


def test_task_rouge_equals_rouge_score_called_directly(aeslc):
    task = tiny_task(aeslc)
    metrics = task.evaluate(Lead(1), task.loaders(16, seed=0, eval_batch_size=16)["test"], torch.device("cpu"))
    pairs = aeslc["test"][:70]
    hyps = [" ".join(split_sentences(p.source)[:1]) for p in pairs]
    expected = direct_rouge(hyps, [p.target for p in pairs])
    # Against the annotations: each of the three as the single reference, averaged.
    annotated = direct_rouge([h for h in hyps for _ in range(3)], [r for p in pairs for r in p.references])
    for key in ("rouge1", "rouge2", "rougeL"):
        assert metrics[key] == pytest.approx(expected[key], abs=1e-9)
        assert metrics[f"ann_{key}"] == pytest.approx(annotated[key], abs=1e-9)
    assert 0 < metrics["rougeL"] < 100


def test_the_outputs_file_gives_each_examples_rouge_whose_mean_is_the_metric(aeslc, tmp_path):
    """What a paired comparison of two summarizers resamples (suite.report.significance.mean_difference)."""
    task = tiny_task(aeslc)
    metrics = task.evaluate(Lead(1), task.loaders(16, seed=0, eval_batch_size=16)["test"], torch.device("cpu"))
    (path,) = task.write_artifacts(Lead(1), tmp_path, torch.device("cpu"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 70 and {"rouge1", "rouge2", "rougeL"} == rows[0]["scores"].keys()
    for key in ("rouge1", "rouge2", "rougeL"):
        assert sum(r["scores"][key] for r in rows) / len(rows) == pytest.approx(metrics[key], abs=1e-9)
    assert rows[3]["scores"]["rougeL"] == pytest.approx(
        direct_rouge([rows[3]["output"]], [rows[3]["reference"]])["rougeL"]
    )


def test_neural_model_is_scored_on_decoded_text(aeslc):
    task = tiny_task(aeslc)
    model = task.build_model(shrink(compose_config("model=lstm")).model).eval()
    with torch.no_grad():
        metrics = task.evaluate(model, task.loaders(16, seed=0, eval_batch_size=16)["val"], torch.device("cpu"))
    assert {"rouge1", "rouge2", "rougeL", "ann_rougeL", "loss"} <= metrics.keys() and metrics["loss"] > 0
    assert Counter(task.groups) == {"train": 300, "val": 50, "test": 70}


def test_an_empty_source_is_a_data_error(aeslc):
    splits = {"train": aeslc["train"][:20], "val": [TextPair("", "subject")], "test": aeslc["test"][:5]}
    tok = train_bpe([p.source for p in splits["train"]], 300, reversible=True)
    task = Seq2SeqTask(
        "summarization",
        "aeslc",
        lambda: Seq2SeqData(splits, tok, tok),
        Rouge(),
        greedy,
        greedy,
        max_source_len=64,
        max_target_len=8,
    )
    with pytest.raises(DataError, match="val: example 1 has an empty source"):
        task.setup()


def test_lowercase_vocabulary_and_rouge_ignores_case(aeslc):
    from tasks.summarization import load

    tok = load("aeslc", None, 500, 0.1, 0.1, 0, lowercase=True).src_tok
    assert tok.encode("Meeting With ENRON").ids == tok.encode("meeting with enron").ids
    assert tok.decode(tok.encode("Meeting With ENRON").ids) == "meeting with enron"
    pairs = aeslc["test"][:50]
    hyps = [" ".join(split_sentences(p.source)[:1]) for p in pairs]
    assert Rouge()([h.lower() for h in hyps], pairs) == Rouge()(
        hyps, pairs
    )  # the model writing lowercase loses no ROUGE
