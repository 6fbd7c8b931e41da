"""Language modelling on real text: BBC News articles (default) or AESLC email bodies (MANIFEST.md §2-3).

- ``bbc``: the shared BBC News Summary articles (title line, blank line, body: the text as it
  is), duplicate articles removed as for summarization and news_topic, then a seeded split by
  document, stratified by category: no article is in two splits.
- ``aeslc``: the email bodies of the corpus's own train / dev / test. 6 % of the training bodies
  repeat, and some repeat across splits: a body is kept once, in the first split it occurs in
  (train, then val, then test), so no text is in two splits.

The tokenizer is fitted to the training documents alone: ``tokenizer=bpe`` a byte-level BPE of
``vocab_size`` ids (GPT-2's kind: lossless, nothing unknown), ``tokenizer=byte`` the 256 UTF-8
bytes. Bits per byte compares the two. Windows, loss and metrics: ``tasks.next_token``.
"""

from __future__ import annotations

from functools import partial

import torch

from suite.data.datadir import require
from suite.data.readers import read_jsonl
from suite.data.splits import dedupe
from suite.data.tokenizers import EOS, PAD, SPECIALS, byte_lengths, encode, train_byte_bpe
from tasks.next_token import Corpus, NextTokenTask, join_documents
from tasks.summarization import bbc_split_rows

DATASETS = ("bbc", "aeslc")
TOKENIZERS = ("bpe", "byte")
AESLC_FILES = {"train": "train", "val": "dev", "test": "test"}


def bbc_documents(
    data_dir: str | None, val_fraction: float, test_fraction: float, split_seed: int
) -> dict[str, list[str]]:
    """BBC News articles, duplicates removed, split by document (stratified by category, seeded)."""
    rows, parts = bbc_split_rows(data_dir, val_fraction, test_fraction, split_seed)
    return {split: [rows[i]["article"].strip() for i in idx] for split, idx in parts.items()}


def first_occurrences(splits: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each text once, in the first split (in the dict's order) and place it occurs in."""
    flat = [(split, text) for split, texts in splits.items() for text in texts]
    kept = [flat[i] for i in dedupe([text for _, text in flat])]
    return {split: [text for s, text in kept if s == split] for split in splits}


def aeslc_documents(data_dir: str | None) -> dict[str, list[str]]:
    """AESLC email bodies of the official splits, each body kept once (first split wins)."""
    root = require(data_dir, "summarization", "aeslc")
    splits = {
        split: [r["email_body"].strip() for r in read_jsonl(root / f"{name}.jsonl", ["email_body"])]
        for split, name in AESLC_FILES.items()
    }
    return first_occurrences(splits)


def load(
    dataset: str,
    data_dir: str | None,
    tokenizer: str,
    vocab_size: int,
    val_fraction: float,
    test_fraction: float,
    split_seed: int,
) -> Corpus:
    """Read and split the documents, fit the tokenizer on the training ones, encode every split as one stream."""
    if dataset == "bbc":
        documents = bbc_documents(data_dir, val_fraction, test_fraction, split_seed)
    elif dataset == "aeslc":
        documents = aeslc_documents(data_dir)
    else:
        raise ValueError(f"unknown language-model dataset {dataset!r}; choose one of {list(DATASETS)}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {list(TOKENIZERS)}")
    size = vocab_size if tokenizer == "bpe" else 256 + len(SPECIALS)  # bytes: no merges learned
    tok = train_byte_bpe(documents["train"], size)
    eos = tok.token_to_id(EOS)
    token_bytes = torch.tensor(byte_lengths(tok))
    token_bytes[eos] = 1  # the break that ends a document
    streams = {split: join_documents(encode(tok, texts), eos) for split, texts in documents.items()}
    return Corpus(
        documents=documents,
        streams=streams,
        tokenizer=tok,
        token_bytes=token_bytes,
        eos_id=eos,
        pad_id=tok.token_to_id(PAD),
    )


def build(
    name: str,
    dataset: str = "bbc",
    data_dir: str | None = None,
    seq_len: int = 256,
    stride: int = 128,
    tokenizer: str = "bpe",
    vocab_size: int = 4000,
    val_fraction: float = 0.1,
    test_fraction: float = 0.1,
    split_seed: int = 0,
    tie_output: bool = True,
) -> NextTokenTask:
    """The language-modelling task (``conf/task/language_model.yaml``); validation bits per byte selects the model.

    ``val_fraction``, ``test_fraction`` and ``split_seed`` apply to BBC (AESLC has its own split).
    """
    if dataset not in DATASETS:
        raise ValueError(f"unknown language-model dataset {dataset!r}; choose one of {list(DATASETS)}")
    loader = partial(load, dataset, data_dir, tokenizer, vocab_size, val_fraction, test_fraction, split_seed)
    return NextTokenTask(name, dataset, loader, seq_len=seq_len, stride=stride, tie_output=tie_output)
