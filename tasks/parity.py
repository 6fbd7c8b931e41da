"""Parity of a bit string: a state-tracking task generated from a seed (Delétang et al. 2023's 'parity check').

Each input is ``seq_len`` random bits (token ids 1 and 2; 0 pads); the label is whether the number of ones is odd.
The answer depends on every position equally, so a model must carry one bit of state over the whole string: a
recurrence can, a model that sees a bounded window cannot do better than chance. Splits come from ``split_seed`` (not
the model seed), and no validation or test string occurs in training. A task in this module and
``conf/task/parity.yaml``, nothing else.
"""

from __future__ import annotations

import random
from functools import partial

from suite.models.embeddings import TokenEmbedding
from tasks.classification import ClassificationData, ClassificationTask, TokenDataset, pad_collate
from tasks.long_range import Example, generate_splits

PAD, ZERO, ONE = 0, 1, 2


def parity_example(rng: random.Random, seq_len: int) -> Example:
    """``seq_len`` random bits as ids (1: a zero, 2: a one) and their parity (1: odd)."""
    bits = [rng.randrange(2) for _ in range(seq_len)]
    return [ONE if b else ZERO for b in bits], sum(bits) % 2


def load(seq_len: int, n_train: int, n_val: int, n_test: int, split_seed: int) -> ClassificationData:
    splits = generate_splits(
        partial(parity_example, seq_len=seq_len), {"train": n_train, "val": n_val, "test": n_test}, split_seed
    )
    return ClassificationData(
        splits={name: TokenDataset([s for s, _ in ex], [y for _, y in ex]) for name, ex in splits.items()},
        collate=pad_collate(PAD, seq_len),
        n_classes=2,
        class_names=["even", "odd"],
        embedding=partial(TokenEmbedding, 3, padding_idx=PAD),
        max_len=seq_len,
    )


def build(
    name: str,
    seq_len: int = 16,
    n_train: int = 2000,
    n_val: int = 300,
    n_test: int = 500,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
) -> ClassificationTask:
    """The parity task (``conf/task/parity.yaml``)."""
    if seq_len < 1 or 2**seq_len < n_train + n_val + n_test:
        raise ValueError(
            f"parity: {n_train + n_val + n_test} distinct strings of {seq_len} bits are needed, and {2**seq_len} exist"
        )
    loader = partial(load, seq_len, n_train, n_val, n_test, split_seed)
    return ClassificationTask(name, f"parity{seq_len}", loader, label_smoothing=label_smoothing, max_len=seq_len)
