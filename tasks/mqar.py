"""Multi-query associative recall (MQAR; Arora et al. 2023, "Zoology"): key-value pairs, then queries of the keys.

An example of ``seq_len`` tokens: ``n_pairs`` pairs ``k_1 v_1 ... k_D v_D`` (distinct keys, values drawn with
replacement), then a query region where each of the D keys comes back once, in random order and at random places,
each followed by its value; the rest of the region is filler. The model reads left to right (a language model's
causal backbone, as in Zoology) and is scored where a query key stands: the next token must be its value. Accuracy is
over the queries. A model must hold every pair until its query comes: attention has all of them at hand, a recurrence
only what its state keeps, which is why the experiment sweeps the model's width.

Ids: 0 padding (unused: every example has ``seq_len`` tokens), keys 1..K, values K+1..K+V, filler K+V+1..K+V+F.
Splits are generated from ``split_seed`` (the same data for every model).
"""

from __future__ import annotations

import random
from typing import Any, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader

from suite.models.language_model import LanguageModel, build_language_model
from suite.models.scan import positive_int
from suite.runtime.predictions import sequence_rows
from suite.types import Batch
from tasks.capabilities.base import Example, collate, scored_logits


def mqar_example(rng: random.Random, seq_len: int, n_pairs: int, n_keys: int, n_values: int, n_filler: int) -> Example:
    """One example and its targets (the value at each query key's position, -1 elsewhere)."""
    keys = rng.sample(range(1, n_keys + 1), n_pairs)
    values = [n_keys + 1 + rng.randrange(n_values) for _ in keys]
    tokens = [t for kv in zip(keys, values) for t in kv]
    region = seq_len - 2 * n_pairs
    filler = n_keys + n_values + 1
    query = [filler + rng.randrange(n_filler) for _ in range(region)]
    targets = [-1] * seq_len
    slots = sorted(rng.sample(range(region // 2), n_pairs))  # one pair of positions a query: the key, its value
    for i, slot in zip(rng.sample(range(n_pairs), n_pairs), slots):
        query[2 * slot], query[2 * slot + 1] = keys[i], values[i]
        targets[2 * n_pairs + 2 * slot] = values[i]
    return tokens + query, targets


class MqarTask:
    """The ``Task`` contract for MQAR (and ``KeepsPredictions``: one row a query).

    Args:
        name, dataset: as recorded.
        seq_len: L; at least 4 x ``n_pairs`` (the pairs, and a query region that holds each key and value).
        n_pairs: D, the key-value pairs an example holds and queries.
        vocab_size: keys and values, half each (Zoology's split), plus 16 filler ids.
        n_train, n_val, n_test: examples a split.
        split_seed: generates the splits.
    """

    primary_metric = "accuracy"
    FILLER = 16

    def __init__(
        self,
        name: str,
        dataset: str,
        seq_len: int,
        n_pairs: int,
        vocab_size: int = 256,
        n_train: int = 10000,
        n_val: int = 500,
        n_test: int = 1000,
        split_seed: int = 0,
    ) -> None:
        for value, setting in ((seq_len, "seq_len"), (n_pairs, "n_pairs"), (vocab_size, "vocab_size")):
            positive_int(value, f"task.{setting}", "mqar")
        if seq_len < 4 * n_pairs:
            raise ValueError(
                f"mqar: task.seq_len={seq_len} cannot hold task.n_pairs={n_pairs} pairs and their queries (at least "
                f"4 x n_pairs = {4 * n_pairs} positions)"
            )
        if vocab_size // 2 < n_pairs:
            raise ValueError(f"mqar: task.vocab_size={vocab_size} has fewer than task.n_pairs={n_pairs} keys (half)")
        self.name, self.dataset, self.length, self.n_pairs = name, dataset, seq_len, n_pairs
        self.n_keys, self.n_values = vocab_size // 2, vocab_size - vocab_size // 2
        self.sizes = {"train": n_train, "val": n_val, "test": n_test}
        self.split_seed = split_seed
        self.splits: dict[str, list[Example]] | None = None
        self.latest: list[dict[str, Any]] | None = None

    @property
    def vocab(self) -> int:
        return 1 + self.n_keys + self.n_values + self.FILLER

    def setup(self) -> None:
        if self.splits is None:
            rng = random.Random(self.split_seed)
            make = lambda: mqar_example(  # noqa: E731
                rng, self.length, self.n_pairs, self.n_keys, self.n_values, self.FILLER
            )
            self.splits = {split: [make() for _ in range(n)] for split, n in self.sizes.items()}

    def split_sizes(self) -> dict[str, int]:
        return dict(self.sizes)

    def seq_len(self) -> int:
        return self.length

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, DataLoader]:
        if self.splits is None:
            raise RuntimeError(f"task {self.name!r} used before setup()")
        gen = torch.Generator().manual_seed(seed)
        loaders = {
            "train": DataLoader(self.splits["train"], batch_size, shuffle=True, generator=gen, collate_fn=collate)
        }
        for split in ("val", "test"):
            loaders[split] = DataLoader(self.splits[split], eval_batch_size or batch_size, collate_fn=collate)
        return loaders

    def build_model(self, model_cfg: Any) -> LanguageModel:
        return build_language_model(model_cfg, self.vocab, self.length, pad_id=0, tie_output=False)

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        return F.cross_entropy(scored_logits(model, batch).float(), batch.targets[batch.extra["scored"]])

    def infer(self, model: nn.Module, batch: Batch) -> Tensor:
        """The inference pass ``job=speed`` times (``suite.types.Infers``): the logits at the queries."""
        return scored_logits(model, batch)

    def evaluate(self, model: nn.Module, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
        """Accuracy over every query of the split, and the loss at the queries."""
        rows: list[dict[str, Any]] = []
        loss = 0.0
        for batch in batches:
            scored = batch.extra["scored"]
            logits = scored_logits(model, batch).float()
            loss += float(F.cross_entropy(logits, batch.targets[scored], reduction="sum"))
            rows += sequence_rows(scored, logits.argmax(-1) == batch.targets[scored], len(rows))
        self.latest = rows
        queries = max(1, sum(r["scored"] for r in rows))
        return {"accuracy": sum(r["correct"] for r in rows) / queries, "loss": loss / queries}

    def predictions(self) -> list[dict[str, Any]]:
        """The latest evaluation's test sequences, in order: id, its queries and how many were answered right (a
        paired test resamples sequences: one sequence's queries are not independent draws)."""
        if self.latest is None:
            raise RuntimeError(f"task {self.name!r}: predictions() before any evaluate()")
        return self.latest


def build(name: str = "mqar", dataset: str = "mqar", **settings: Any) -> MqarTask:
    """The MQAR task (``conf/task/mqar.yaml``)."""
    return MqarTask(name, dataset, **settings)
