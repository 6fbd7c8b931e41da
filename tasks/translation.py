"""Machine translation: Multi30k task 1, English<->German (MANIFEST.md §1).

train / val / test_2016_flickr is the standard benchmark; test_2017_flickr, test_2017_mscoco
and test_2018_flickr can be evaluated as extra test sets in the same run. Subword BPE is
trained on the training split only (one joint vocabulary, or one per language). Scores are
detokenized sacreBLEU BLEU and chrF: hypotheses are decoded back to plain text and compared
with the raw references, as sacreBLEU intends.
"""

from __future__ import annotations

import gzip
from functools import partial
from pathlib import Path

import sacrebleu

from suite.data.datadir import DataError, require
from suite.data.tokenizers import train_bpe
from tasks.seq2seq import Search, Seq2SeqData, Seq2SeqTask, TextPair

TEST_SETS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr")
DIRECTIONS = ("en-de", "de-en")


def read_lines(path: Path) -> list[str]:
    """One sentence per line of a gzip text file; an empty line is a ``DataError`` naming file and line."""
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataError(f"{path}:{number}: empty sentence")
    return lines


def read_pairs(root: Path, split: str, src_lang: str, tgt_lang: str) -> list[TextPair]:
    """Line-aligned sentence pairs of one split."""
    src_path, tgt_path = root / f"{split}.{src_lang}.gz", root / f"{split}.{tgt_lang}.gz"
    for path in (src_path, tgt_path):
        if not path.exists():
            raise DataError(f"dataset file not found: {path} (run `make data`)")
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: the pair is not aligned")
    return [TextPair(s, t) for s, t in zip(src, tgt)]


def bleu_chrf(hypotheses: list[str], pairs: list[TextPair]) -> dict[str, float]:
    """Corpus BLEU (13a tokenization) and chrF from sacreBLEU on detokenized text, one reference each."""
    refs = [[p.target for p in pairs]]
    return {
        "bleu": sacrebleu.corpus_bleu(hypotheses, refs).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, refs).score,
    }


def load(
    data_dir: str | None,
    direction: str,
    test_set: str,
    extra_test_sets: list[str],
    vocab: str,
    vocab_size: int,
    lowercase: bool,
) -> Seq2SeqData:
    """Read the splits and fit BPE on the training pairs only."""
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; choose one of {list(DIRECTIONS)}")
    for name in (test_set, *extra_test_sets):
        if name not in TEST_SETS:
            raise ValueError(f"unknown Multi30k test set {name!r}; choose from {list(TEST_SETS)}")
    if vocab not in ("joint", "separate"):
        raise ValueError(f"vocab must be 'joint' or 'separate', got {vocab!r}")
    root = require(data_dir, "translation", "multi30k")
    src_lang, tgt_lang = direction.split("-")
    names = ["train", "val", test_set] + [s for s in extra_test_sets if s != test_set]
    splits = {("test" if name == test_set else name): read_pairs(root, name, src_lang, tgt_lang) for name in names}
    train = splits["train"]
    bpe = partial(train_bpe, vocab_size=vocab_size, lowercase=lowercase, reversible=True)
    if vocab == "joint":
        src_tok = tgt_tok = bpe([p.source for p in train] + [p.target for p in train])
    else:
        src_tok, tgt_tok = bpe([p.source for p in train]), bpe([p.target for p in train])
    return Seq2SeqData(splits=splits, src_tok=src_tok, tgt_tok=tgt_tok)


def build(
    name: str,
    search: Search,
    val_search: Search,
    direction: str = "en-de",
    data_dir: str | None = None,
    test_set: str = "test_2016_flickr",
    extra_test_sets: list[str] | tuple[str, ...] = (),
    vocab: str = "joint",
    vocab_size: int = 8000,
    lowercase: bool = False,
    max_source_len: int = 64,
    max_target_len: int = 64,
    val_limit: int | None = None,
    label_smoothing: float = 0.1,
    tie_output: bool = True,
) -> Seq2SeqTask:
    """The translation task (``conf/task/translation.yaml``); validation BLEU selects the model."""
    loader = partial(load, data_dir, direction, test_set, list(extra_test_sets), vocab, vocab_size, lowercase)
    return Seq2SeqTask(
        name,
        f"multi30k-{direction}",
        loader,
        scorer=bleu_chrf,
        search=search,
        val_search=val_search,
        max_source_len=max_source_len,
        max_target_len=max_target_len,
        val_limit=val_limit,
        label_smoothing=label_smoothing,
        tie_output=tie_output,
        primary_metric="bleu",
    )
