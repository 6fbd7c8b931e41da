"""BBC News topic classification (business, entertainment, politics, sport, tech): a real long-document task.

Articles average about 384 words; ``task.seq_len`` truncates them, so accuracy against length
shows how much of a document each model can use. Source: ``summarization/bbc_news_summary``
(MANIFEST.md §3): no official split, so duplicate articles are removed (as for summarization)
and a seeded, category-stratified split is made.
"""
from __future__ import annotations

from functools import partial

from suite.models.embeddings import TokenEmbedding
from suite.splits import stratified_split
from suite.text import PAD, encode, train_bpe
from tasks.classification import ClassificationData, ClassificationTask, TokenDataset, pad_collate
from tasks.summarization import bbc_records

CATEGORIES = ["business", "entertainment", "politics", "sport", "tech"]


def load(data_dir: str | None, seq_len: int, vocab_size: int, val_fraction: float, test_fraction: float, split_seed: int) -> ClassificationData:
    records = bbc_records(data_dir)  # duplicates removed, as for summarization
    texts = [r["article"] for r in records]
    labels = [CATEGORIES.index(r["category"]) for r in records]
    parts = stratified_split(labels, {"train": 1 - val_fraction - test_fraction, "val": val_fraction, "test": test_fraction}, split_seed)
    tok = train_bpe([texts[i] for i in parts["train"]], vocab_size, lowercase=True)
    pad_id = tok.token_to_id(PAD)
    splits = {}
    for name, idx in parts.items():
        ids = [s[:seq_len] for s in encode(tok, [texts[i] for i in idx])]  # truncate: the first seq_len tokens
        splits[name] = TokenDataset(ids, [labels[i] for i in idx])
    return ClassificationData(
        splits=splits,
        collate=pad_collate(pad_id, seq_len),
        n_classes=len(CATEGORIES),
        class_names=CATEGORIES,
        embedding=partial(TokenEmbedding, tok.get_vocab_size(), padding_idx=pad_id),
        max_len=seq_len,
    )


def build(name: str, dataset: str = "bbc", data_dir: str | None = None, seq_len: int = 256, vocab_size: int = 8000, val_fraction: float = 0.1, test_fraction: float = 0.2, split_seed: int = 0, label_smoothing: float = 0.0) -> ClassificationTask:
    """The news-topic task (``conf/task/news_topic.yaml``)."""
    loader = partial(load, data_dir, seq_len, vocab_size, val_fraction, test_fraction, split_seed)
    return ClassificationTask(name, dataset, loader, label_smoothing=label_smoothing, max_len=seq_len)
