"""Sentiment classification: SST-2 (GLUE protocol) and Rotten Tomatoes sentence polarity (MR).

SST-2 here is ALPS's re-split of GLUE (see MANIFEST.md §4): ``train.tsv + dev.tsv`` is GLUE's
training set and ``test.tsv`` is GLUE's dev set, on which results are reported. A seeded,
stratified slice of training data is held out for validation (model selection).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from suite.data.datadir import DataError, require
from suite.data.readers import parse_labels, read_delimited
from suite.data.splits import dedupe, stratified_split
from suite.data.tokenizers import PAD, encode, train_bpe
from suite.models.embeddings import TokenEmbedding
from tasks.classification import ClassificationData, ClassificationTask, TokenDataset, pad_collate

LABELS = {"0": 0, "1": 1}
CLASS_NAMES = ["negative", "positive"]


def read_sst2(path: Path) -> tuple[list[str], list[int]]:
    """One SST-2 TSV file (header ``sentence<TAB>label``) -> sentences, labels."""
    cols = read_delimited(path, ["sentence", "label"], delimiter="\t")
    return [s.strip() for s in cols["sentence"]], parse_labels(path, cols["label"], LABELS)


def read_polarity(path: Path) -> list[str]:
    """One rt-polarity file: Windows-1252 bytes, one snippet per line, split on '\\n' only (not on 0x85)."""
    lines = path.read_bytes().decode("cp1252").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise DataError(f"{path}:{number}: empty snippet")
    return [line.strip() for line in lines]


def token_spans(text: str, proper: bool) -> set[str]:
    """Every contiguous run of whole tokens of ``text`` (only the shorter ones if ``proper``)."""
    words = text.split()
    n = len(words)
    return {" ".join(words[i:j]) for i in range(n) for j in range(i + 1, n + 1) if not proper or j - i < n}


def sst2_splits(data_dir: str | None, val_fraction: float, split_seed: int) -> dict[str, tuple[list[str], list[int]]]:
    """GLUE protocol: train = train.tsv + dev.tsv minus validation sentences; test = test.tsv (GLUE dev).

    GLUE's training rows are the phrases of parse trees, so a random validation slice shares its
    sub-phrases with training and says little about whole sentences. Validation is therefore
    a seeded, stratified ``val_fraction`` of the full sentences (rows that are no part of another
    row), and every training row that is a part of a validation sentence is removed.
    """
    root = require(data_dir, "sentiment", "sst2")
    texts, labels = [], []
    for name in ("train.tsv", "dev.tsv"):
        t, y = read_sst2(root / name)
        texts, labels = texts + t, labels + y
    keep = dedupe(texts)  # GLUE's train repeats some phrases
    texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    rows = set(texts)  # only spans that are rows themselves are kept: all spans would be millions of strings
    parts_of_rows = {span for text in texts for span in token_spans(text, proper=True) if span in rows}
    sentences = [i for i, text in enumerate(texts) if text not in parts_of_rows]
    chosen = stratified_split(
        [labels[i] for i in sentences], {"val": val_fraction, "rest": 1 - val_fraction}, split_seed
    )["val"]
    val = [sentences[i] for i in chosen]
    leaked: set[str] = set()
    for i in val:
        leaked |= token_spans(texts[i], proper=False)
    train = [i for i, text in enumerate(texts) if text not in leaked]
    return {
        "train": ([texts[i] for i in train], [labels[i] for i in train]),
        "val": ([texts[i] for i in val], [labels[i] for i in val]),
        "test": read_sst2(root / "test.tsv"),
    }


def rt_polarity_splits(
    data_dir: str | None, val_fraction: float, test_fraction: float, split_seed: int
) -> dict[str, tuple[list[str], list[int]]]:
    """MR has no official split: a seeded, stratified train/val/test split after removing duplicate snippets."""
    root = require(data_dir, "sentiment", "rt_polarity")
    neg, pos = read_polarity(root / "rt-polarity.neg"), read_polarity(root / "rt-polarity.pos")
    texts, labels = neg + pos, [0] * len(neg) + [1] * len(pos)
    keep = dedupe(texts)
    texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    fractions = {"train": 1 - val_fraction - test_fraction, "val": val_fraction, "test": test_fraction}
    parts = stratified_split(labels, fractions, split_seed)
    return {name: ([texts[i] for i in idx], [labels[i] for i in idx]) for name, idx in parts.items()}


def load(
    dataset: str,
    data_dir: str | None,
    vocab_size: int,
    max_len: int,
    val_fraction: float,
    test_fraction: float,
    split_seed: int,
) -> ClassificationData:
    """Read, split, fit a BPE tokenizer on the training split only, and encode."""
    if dataset == "sst2":
        splits = sst2_splits(data_dir, val_fraction, split_seed)
    elif dataset == "rt_polarity":
        splits = rt_polarity_splits(data_dir, val_fraction, test_fraction, split_seed)
    else:
        raise ValueError(f"unknown sentiment dataset {dataset!r}; choose one of ['rt_polarity', 'sst2']")
    tok = train_bpe(splits["train"][0], vocab_size)
    datasets = {name: TokenDataset(encode(tok, texts), labels) for name, (texts, labels) in splits.items()}
    pad_id = tok.token_to_id(PAD)
    return ClassificationData(
        splits=datasets,
        collate=pad_collate(pad_id, max_len),
        n_classes=2,
        class_names=CLASS_NAMES,
        embedding=partial(TokenEmbedding, tok.get_vocab_size(), padding_idx=pad_id),
        max_len=max_len,
        token_names=lambda ids: [tok.id_to_token(i) for i in ids],
    )


def build(
    name: str,
    dataset: str,
    data_dir: str | None = None,
    vocab_size: int = 8000,
    max_len: int = 64,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
) -> ClassificationTask:
    """The sentiment task (``conf/task/sentiment.yaml``)."""
    loader = partial(load, dataset, data_dir, vocab_size, max_len, val_fraction, test_fraction, split_seed)
    return ClassificationTask(name, dataset, loader, label_smoothing=label_smoothing, max_len=max_len)
