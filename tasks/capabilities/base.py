"""The diagnostic tasks of the capability map: each a generator of token sequences scored where the answer is.

A diagnostic is a small object (its module's ``Generator``) with

    name: str                                    # as recorded ("selective_copying")
    vocab: int                                   # token ids 0..vocab-1, 0 the padding
    check(length: int) -> None                   # refuses a length its knobs cannot fill, naming the setting
    example(rng: random.Random, length: int) -> Example   # tokens (L,) and the target at each position (-1: unscored)

and ``SequenceDiagnostic`` is the ``Task`` contract around any of them: a causal language model reads the tokens left
to right and is scored at the positions with a target (the next token must be the answer; accuracy is over those
positions). Training is at ``seq_len``, or at every length from ``min_train_len`` up to it (each example's length drawn
uniformly: Delétang et al. 2023's training distribution for the state-tracking tasks); validation is at ``seq_len``;
the test set is at ``seq_len`` and, for a task that measures length extrapolation, at each of ``test_lengths`` too
(``accuracy_at_<L>`` in the record; ``accuracy`` stays at the training length). Every split comes from its own stream
of ``split_seed``, and no validation or test sequence occurs in training (held apart by construction: a drawn duplicate
is drawn again; a space too small to hold the splits apart is refused). A diagnostic is its module and its config
under conf/task/.
"""

from __future__ import annotations

import random
from typing import Any, Iterable, Protocol, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader

from suite.models.language_model import LanguageModel, build_language_model
from suite.models.scan import positive_int
from suite.runtime.predictions import sequence_rows
from suite.types import Batch

Example = tuple[list[int], list[int]]  # tokens (L,), and the target at each position (-1: not scored)
DRAWS = 20  # draws an example may take to avoid the training set before the space is called too small


def knob(value: object, least: int, setting: str, owner: str) -> int:
    """A generator's integer setting ``task.generator.<setting>`` if it is >= ``least``, else a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{owner}: task.generator.{setting} must be an integer >= {least}, got {value!r}")
    return value


class Generator(Protocol):
    name: str
    vocab: int

    def check(self, length: int) -> None: ...

    def example(self, rng: random.Random, length: int) -> Example: ...


def scored_logits(model: nn.Module, batch: Batch) -> Tensor:
    """A language model's logits at the batch's scored positions, (S, V) for its S scored positions: what the loss, the
    evaluation and ``job=speed``'s inference pass compute (the output layer skips the unscored positions)."""
    return model.generator(model.features(batch.inputs)[batch.extra["scored"]])


def collate(items: list[Example]) -> Batch:
    """Examples -> inputs (B, L), targets (B, L) (0 where not scored), extra['scored'] (B, L) bool; L the longest
    example's length, the shorter padded after their end (id 0, unscored: a causal model's outputs at an example's own
    positions never read its padding)."""
    width = max(len(t) for t, _ in items)
    ids = torch.tensor([t + [0] * (width - len(t)) for t, _ in items])
    targets = torch.tensor([y + [-1] * (width - len(y)) for _, y in items])
    scored = targets >= 0
    return Batch(ids, targets.clamp(min=0), n_items=len(items), n_tokens=ids.numel(), extra={"scored": scored})


def draw_apart(
    generator: Generator,
    seed: int,
    split: str,
    length: int,
    n: int,
    taken: set[tuple[int, ...]],
    shortest: int | None = None,
) -> list[Example]:
    """``n`` examples at ``length`` from the stream (seed, split, length), none of whose tokens are in ``taken``; with
    ``shortest``, each at a length drawn uniformly from ``shortest..length`` (from the stream (seed, split,
    shortest-length))."""
    rng = random.Random(f"{seed}:{split}:{length}" if shortest is None else f"{seed}:{split}:{shortest}-{length}")
    out = []
    for _ in range(n):
        size = length if shortest is None else rng.randint(shortest, length)
        for _ in range(DRAWS):
            example = generator.example(rng, size)
            if tuple(example[0]) not in taken:
                break
        else:
            raise ValueError(
                f"{generator.name}: {DRAWS} draws in a row at length {length} repeated a training sequence: the task's "
                f"space is too small to hold its {split} split apart (raise task.seq_len or lower task.n_train)"
            )
        out.append(example)
    return out


class SequenceDiagnostic:
    """The ``Task`` contract for a diagnostic generator (and ``KeepsPredictions``: one row a scored position).

    Args:
        name, dataset: as recorded.
        generator: the diagnostic (see the module).
        seq_len: the training (and validation) length; the longest training length where ``min_train_len`` is set.
        min_train_len: the shortest training length (None: every training example at ``seq_len``).
        test_lengths: further lengths the test set holds (each longer than ``seq_len``): length extrapolation.
        test_generator: draws the test set where it differs from the training distribution (flip-flop's sparse and
            dense tests); its ids must be the generator's. Validation stays at the training distribution.
        n_train, n_val, n_test: examples a split (``n_test`` at each test length).
        split_seed: generates the splits.
    """

    primary_metric = "accuracy"

    def __init__(
        self,
        name: str,
        dataset: str,
        generator: Generator,
        seq_len: int,
        test_lengths: Sequence[int] = (),
        min_train_len: int | None = None,
        test_generator: Generator | None = None,
        n_train: int = 5000,
        n_val: int = 500,
        n_test: int = 500,
        split_seed: int = 0,
    ) -> None:
        positive_int(seq_len, "task.seq_len", generator.name)
        for value, setting in ((n_train, "n_train"), (n_val, "n_val"), (n_test, "n_test")):
            positive_int(value, f"task.{setting}", generator.name)
        test_lengths = [int(n) for n in test_lengths]
        shorter = [n for n in test_lengths if n <= seq_len]
        if shorter:
            raise ValueError(
                f"{generator.name}: task.test_lengths {shorter} must each be longer than task.seq_len={seq_len} "
                "(an extrapolation test reads further than training did)"
            )
        if min_train_len is not None:
            positive_int(min_train_len, "task.min_train_len", generator.name)
            if min_train_len > seq_len:
                raise ValueError(
                    f"{generator.name}: task.min_train_len={min_train_len} must be at most task.seq_len={seq_len} "
                    "(training lengths run from min_train_len up to seq_len)"
                )
        tester = test_generator or generator
        if tester.vocab != generator.vocab:
            raise ValueError(
                f"{generator.name}: task.test_generator has {tester.vocab} ids and the generator {generator.vocab}: "
                "the test set must speak the training set's vocabulary"
            )
        for n in [seq_len, *test_lengths]:
            generator.check(n)
            tester.check(n)
        for n in range(min_train_len or seq_len, seq_len):  # every training length the generator may be asked for
            generator.check(n)
        self.name, self.dataset, self.generator, self.tester, self.length = name, dataset, generator, tester, seq_len
        self.test_lengths, self.min_train_len = test_lengths, min_train_len
        self.sizes = {"train": n_train, "val": n_val, "test": n_test}
        self.split_seed = split_seed
        self.splits: dict[str, list[Example]] | None = None
        self.latest: list[dict[str, Any]] | None = None

    def setup(self) -> None:
        if self.splits is not None:
            return
        train = draw_apart(
            self.generator, self.split_seed, "train", self.length, self.sizes["train"], set(), self.min_train_len
        )
        taken = {tuple(t) for t, _ in train}
        val = draw_apart(self.generator, self.split_seed, "val", self.length, self.sizes["val"], taken)
        test = [
            example
            for n in [self.length, *self.test_lengths]
            for example in draw_apart(self.tester, self.split_seed, "test", n, self.sizes["test"], taken)
        ]
        self.splits = {"train": train, "val": val, "test": test}

    def split_sizes(self) -> dict[str, int]:
        return {split: n * (1 + len(self.test_lengths)) if split == "test" else n for split, n in self.sizes.items()}

    def seq_len(self) -> int:
        """The training length: what the record, the speed job and the state size are at."""
        return self.length

    def max_len(self) -> int:
        """The longest length the test set holds: what the model is built for."""
        return max([self.length, *self.test_lengths])

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, DataLoader]:
        if self.splits is None:
            raise RuntimeError(f"task {self.name!r} used before setup()")
        gen = torch.Generator().manual_seed(seed)
        loaders = {
            "train": DataLoader(self.splits["train"], batch_size, shuffle=True, generator=gen, collate_fn=collate)
        }
        size = eval_batch_size or batch_size
        loaders["val"] = DataLoader(self.splits["val"], size, collate_fn=collate)
        # the test set in batches of one length each (it holds examples at every test length, in order)
        n = self.sizes["test"]
        batches = [list(range(start, min(start + size, end))) for end in range(n, len(self.splits["test"]) + 1, n)
                   for start in range(end - n, end, size)]  # fmt: skip
        loaders["test"] = DataLoader(self.splits["test"], batch_sampler=batches, collate_fn=collate)
        return loaders

    def build_model(self, model_cfg: Any) -> LanguageModel:
        return build_language_model(model_cfg, self.generator.vocab, self.max_len(), pad_id=0, tie_output=False)

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        return F.cross_entropy(scored_logits(model, batch).float(), batch.targets[batch.extra["scored"]])

    def infer(self, model: nn.Module, batch: Batch) -> Tensor:
        """The inference pass ``job=speed`` times (``suite.types.Infers``): the logits at the scored positions."""
        return scored_logits(model, batch)

    def evaluate(self, model: nn.Module, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
        """Accuracy and loss over the scored positions at the training length, and the accuracy at each longer
        length the split holds (``accuracy_at_<L>``)."""
        rows: list[dict[str, Any]] = []
        right: dict[int, list[int]] = {}
        loss, counted = 0.0, 0
        for batch in batches:
            scored, length = batch.extra["scored"], batch.inputs.shape[1]
            logits = scored_logits(model, batch).float()
            hits = logits.argmax(-1) == batch.targets[scored]
            right.setdefault(length, []).extend(hits.tolist())
            if length == self.length:
                loss += float(F.cross_entropy(logits, batch.targets[scored], reduction="sum"))
                counted += len(hits)
            rows += sequence_rows(scored, hits, len(rows), length=length)
        self.latest = rows
        share = {n: sum(h) / max(1, len(h)) for n, h in right.items()}
        out = {"accuracy": share.get(self.length, 0.0), "loss": loss / max(1, counted)}
        return out | {f"accuracy_at_{n}": a for n, a in share.items() if n != self.length}

    def predictions(self) -> list[dict[str, Any]]:
        """The latest evaluation's test sequences, in order: id, length, its scored positions and how many were right
        (a paired test resamples sequences: their positions are not independent draws)."""
        if self.latest is None:
            raise RuntimeError(f"task {self.name!r}: predictions() before any evaluate()")
        return self.latest


def build(name: str, generator: Generator, dataset: str | None = None, **settings: Any) -> SequenceDiagnostic:
    """A diagnostic task from its config (``conf/task/<name>.yaml``: the generator a Hydra node of its own)."""
    return SequenceDiagnostic(name, dataset or name, generator, **settings)
