"""Abstractive summarization: AESLC (email body -> subject line) and BBC News Summary (MANIFEST.md §2-3).

- ``aeslc``: the corpus's train / dev / test. The target and main reference is ``subject``;
  dev and test are also scored against the three human annotations (as the AESLC paper does),
  as ``ann_rouge*``: the mean over the three annotations, each taken as the single reference.
- ``bbc``: no official split. Duplicate article bodies are removed first, then a seeded
  split stratified by category. The source is the article body (the title line dropped: the
  summaries are sentences of the body); the missing spaces between the summaries' glued
  sentences are restored.

One BPE vocabulary (source and target are the same language). ROUGE-1/2/L F1 with Porter
stemming from ``rouge-score``, averaged over examples, reported as percentages.
"""

from __future__ import annotations

import re
from functools import partial

from suite.data.datadir import require
from suite.data.readers import read_jsonl
from suite.data.splits import dedupe, stratified_split
from suite.data.tokenizers import train_bpe
from tasks.seq2seq import Search, Seq2SeqData, Seq2SeqTask, TextPair

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
DATASETS = ("aeslc", "bbc")
# Per-dataset defaults for what the config leaves null: (max_source_len, max_target_len, lead_sentences).
# BBC's Lead-7: its training summaries have a median of seven sentences (suite.data.tokenizers.split_sentences).
DEFAULTS = {"aeslc": (256, 32, 1), "bbc": (512, 256, 7)}

# A sentence end glued to the next sentence: . ! or ? after a lowercase letter, digit, %, ), a
# quote, or an acronym (two capitals: "AOL.For"), directly followed by a capital or a quote.
GLUED_END = re.compile(r"(?:(?<=[a-z0-9%)\"'])|(?<=[A-Z]{2}))[.!?]")


def unglue(summary: str) -> str:
    """Restore the space between BBC summary sentences glued together (``$10.9bn.For the full-year``).

    A double quote right after the end closes the sentence when a quote is open before it
    (``months."I think``: the space goes after it) and opens the next one otherwise.
    """
    cuts = []
    for m in GLUED_END.finditer(summary):
        j = m.end()
        after = summary[j : j + 2]
        if after[:1].isupper():
            cuts.append(j)
        elif after[:1] in "\"'" and after[1:2].isupper():
            closing = after[0] == "'" or summary[:j].count('"') % 2 == 1
            cuts.append(j + 1 if closing else j)
        elif after == '""':
            cuts.append(j + 1)
    pieces = [summary[a:b] for a, b in zip([0, *cuts], [*cuts, len(summary)])]
    return " ".join(pieces)


def aeslc_splits(data_dir: str | None) -> dict[str, list[TextPair]]:
    root = require(data_dir, "summarization", "aeslc")
    splits = {}
    for split, name in (("train", "train"), ("val", "dev"), ("test", "test")):
        rows = read_jsonl(root / f"{name}.jsonl", ["email_body", "subject"])
        splits[split] = [TextPair(r["email_body"], r["subject"], tuple(r.get("annotations", ()))) for r in rows]
    return splits


def bbc_body(article: str) -> str:
    """The article without its first line, the title."""
    return article.split("\n", 1)[-1].strip()


def bbc_records(data_dir: str | None) -> list[dict]:
    """BBC News Summary records with duplicates removed (shared with the news-topic task).

    Duplicates would straddle a split: 98 articles repeat verbatim, and 35 more repeat a body
    under another title.
    """
    path = require(data_dir, "summarization", "bbc_news_summary") / "bbc_news_summary.jsonl"
    rows = read_jsonl(path, ["category", "article", "summary"])
    return [rows[i] for i in dedupe([bbc_body(r["article"]) for r in rows])]


def bbc_split_rows(
    data_dir: str | None, val_fraction: float, test_fraction: float, split_seed: int
) -> tuple[list[dict[str, str]], dict[str, list[int]]]:
    """BBC News records (duplicates removed) and each split's record indices, stratified by category and seeded.

    The one split of the corpus: summarization, news_topic and language_model all draw theirs
    here, so with the same fractions and seed an article lands in the same split in every task.
    """
    rows = bbc_records(data_dir)
    categories = sorted({r["category"] for r in rows})
    fractions = {"train": 1 - val_fraction - test_fraction, "val": val_fraction, "test": test_fraction}
    return rows, stratified_split([categories.index(r["category"]) for r in rows], fractions, split_seed)


def bbc_splits(
    data_dir: str | None, val_fraction: float, test_fraction: float, split_seed: int
) -> dict[str, list[TextPair]]:
    rows, parts = bbc_split_rows(data_dir, val_fraction, test_fraction, split_seed)
    return {
        split: [TextPair(bbc_body(rows[i]["article"]), unglue(rows[i]["summary"])) for i in idx]
        for split, idx in parts.items()
    }


class Rouge:
    """ROUGE-1/2/L F1 (stemmed) in percent, averaged over examples; ``ann_*`` against the extra references."""

    def __init__(self) -> None:
        from rouge_score import rouge_scorer  # with nltk, 2 s of a process's start: only where ROUGE is scored

        self.scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)

    def f1(self, reference: str, hypothesis: str) -> dict[str, float]:
        """F1 x 100 per ROUGE type of one hypothesis."""
        return {key: 100 * score.fmeasure for key, score in self.scorer.score(reference, hypothesis).items()}

    def mean_f1(self, pairs: list[tuple[str, str]]) -> dict[str, float]:
        """(reference, hypothesis) pairs -> mean F1 x 100 per ROUGE type."""
        totals = dict.fromkeys(ROUGE_TYPES, 0.0)
        for reference, hypothesis in pairs:
            for key, score in self.f1(reference, hypothesis).items():
                totals[key] += score
        return {key: total / max(1, len(pairs)) for key, total in totals.items()}

    def per_example(self, hypotheses: list[str], pairs: list[TextPair]) -> list[dict[str, float]]:
        """Each hypothesis's ROUGE against its main reference: their mean is the unprefixed metrics."""
        return [self.f1(p.target, h) for h, p in zip(hypotheses, pairs)]

    def __call__(self, hypotheses: list[str], pairs: list[TextPair]) -> dict[str, float]:
        metrics = self.mean_f1([(p.target, h) for h, p in zip(hypotheses, pairs)])
        if all(p.references for p in pairs):
            extra = self.mean_f1([(ref, h) for h, p in zip(hypotheses, pairs) for ref in p.references])
            metrics.update({f"ann_{k}": v for k, v in extra.items()})
        return metrics


def load(
    dataset: str,
    data_dir: str | None,
    vocab_size: int,
    val_fraction: float,
    test_fraction: float,
    split_seed: int,
    lowercase: bool = False,
) -> Seq2SeqData:
    """Read and split; fit one BPE vocabulary on the training sources and targets (lowercased if asked)."""
    if dataset == "aeslc":
        splits = aeslc_splits(data_dir)
    elif dataset == "bbc":
        splits = bbc_splits(data_dir, val_fraction, test_fraction, split_seed)
    else:
        raise ValueError(f"unknown summarization dataset {dataset!r}; choose one of {list(DATASETS)}")
    train = splits["train"]
    tok = train_bpe(
        [p.source for p in train] + [p.target for p in train], vocab_size, lowercase=lowercase, reversible=True
    )
    return Seq2SeqData(splits=splits, src_tok=tok, tgt_tok=tok)


def build(
    name: str,
    search: Search,
    val_search: Search,
    dataset: str = "aeslc",
    data_dir: str | None = None,
    vocab_size: int = 8000,
    max_source_len: int | None = None,
    max_target_len: int | None = None,
    lead_sentences: int | None = None,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    split_seed: int = 0,
    val_limit: int | None = None,
    label_smoothing: float = 0.1,
    tie_output: bool = True,
    lowercase: bool = False,
) -> Seq2SeqTask:
    """The summarization task (``conf/task/summarization.yaml``); validation ROUGE-L selects the model.

    ``max_source_len``, ``max_target_len`` and ``lead_sentences`` left None take the dataset's
    defaults (``DEFAULTS``). ``val_fraction``, ``test_fraction`` and ``split_seed`` apply to BBC
    (AESLC has its own split). ``lowercase`` lowercases what the model reads and writes (one
    token for "Meeting" and "meeting"); ROUGE ignores case, and references stay as they are.
    """
    if dataset not in DEFAULTS:
        raise ValueError(f"unknown summarization dataset {dataset!r}; choose one of {list(DATASETS)}")
    src_len, tgt_len, lead = DEFAULTS[dataset]
    loader = partial(load, dataset, data_dir, vocab_size, val_fraction, test_fraction, split_seed, lowercase)
    return Seq2SeqTask(
        name,
        dataset,
        loader,
        scorer=Rouge(),
        search=search,
        val_search=val_search,
        max_source_len=max_source_len or src_len,
        max_target_len=max_target_len or tgt_len,
        val_limit=val_limit,
        label_smoothing=label_smoothing,
        tie_output=tie_output,
        primary_metric="rougeL",
        text_model_defaults={"sentences": lead_sentences or lead},
    )
