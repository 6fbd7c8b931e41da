"""BBC News topic classification (business, entertainment, politics, sport, tech): a real long-document task.

Articles average about 384 words (about 2,200 bytes); ``task.seq_len`` truncates them, so
accuracy against length shows how much of a document each model can use. ``task.tokenizer``:
``bpe`` (a BPE vocabulary fitted to the training split) or ``bytes`` (one id per UTF-8 byte, as
the Long Range Arena's Text task reads IMDB: LRA's Text analogue at 1K-4K bytes). Source:
``summarization/bbc_news_summary`` (MANIFEST.md §3): no official split, so duplicate articles
are removed (as for summarization) and a seeded, category-stratified split is made.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

from suite.data.tokenizers import BYTE_PAD, BYTE_VOCAB, PAD, byte_names, encode, train_bpe, utf8_ids
from suite.models.embeddings import TokenEmbedding
from tasks.classification import ClassificationData, ClassificationTask, TokenDataset, pad_collate
from tasks.summarization import bbc_split_rows

CATEGORIES = ["business", "entertainment", "politics", "sport", "tech"]


@dataclass
class Encoded:
    """Texts as ids: one id list per text, the vocabulary size, the padding id, and readable names of ids."""

    ids: list[list[int]]
    vocab_size: int
    pad_id: int
    names: Callable[[list[int]], list[str]]


def bpe_encoded(texts: list[str], train: list[int], vocab_size: int) -> Encoded:
    """A lowercase BPE vocabulary fitted to the training texts (indices ``train``) alone."""
    tok = train_bpe([texts[i] for i in train], vocab_size, lowercase=True)
    return Encoded(
        encode(tok, texts), tok.get_vocab_size(), tok.token_to_id(PAD), lambda ids: [tok.id_to_token(i) for i in ids]
    )


def byte_encoded(texts: list[str], train: list[int], vocab_size: int) -> Encoded:
    """UTF-8 bytes; nothing is fitted (``train`` and ``vocab_size`` are unused: 256 bytes + padding)."""
    return Encoded(utf8_ids(texts), BYTE_VOCAB, BYTE_PAD, byte_names)


TOKENIZERS: dict[str, Callable[[list[str], list[int], int], Encoded]] = {"bpe": bpe_encoded, "bytes": byte_encoded}


def load(
    data_dir: str | None,
    seq_len: int,
    vocab_size: int,
    val_fraction: float,
    test_fraction: float,
    split_seed: int,
    tokenizer: str = "bpe",
) -> ClassificationData:
    records, parts = bbc_split_rows(
        data_dir, val_fraction, test_fraction, split_seed
    )  # the split summarization and language_model use
    texts = [r["article"] for r in records]
    labels = [CATEGORIES.index(r["category"]) for r in records]
    encoded = TOKENIZERS[tokenizer](texts, parts["train"], vocab_size)
    splits = {
        name: TokenDataset([encoded.ids[i][:seq_len] for i in idx], [labels[i] for i in idx])
        for name, idx in parts.items()
    }  # the first seq_len ids
    return ClassificationData(
        splits=splits,
        collate=pad_collate(encoded.pad_id, seq_len),
        n_classes=len(CATEGORIES),
        class_names=CATEGORIES,
        embedding=partial(TokenEmbedding, encoded.vocab_size, padding_idx=encoded.pad_id),
        max_len=seq_len,
        token_names=encoded.names,
    )


def build(
    name: str,
    dataset: str = "bbc",
    data_dir: str | None = None,
    seq_len: int = 256,
    vocab_size: int = 8000,
    tokenizer: str = "bpe",
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
) -> ClassificationTask:
    """The news-topic task (``conf/task/news_topic.yaml``); an unknown ``tokenizer`` is refused here, before any data is
    read."""
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown news_topic tokenizer {tokenizer!r}; choose one of {sorted(TOKENIZERS)}")
    loader = partial(load, data_dir, seq_len, vocab_size, val_fraction, test_fraction, split_seed, tokenizer)
    return ClassificationTask(name, dataset, loader, label_smoothing=label_smoothing, max_len=seq_len)
