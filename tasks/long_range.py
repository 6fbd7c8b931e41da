"""Synthetic long-range classification: the difficulty is how far information must travel.

``task.seq_len`` sets the distance. Problems (``task.problem``):

- ``recall``: one key token among ``seq_len - 1`` random filler tokens; the label is the key.
  ``key_position`` places it: 0 (the default) is the first token, -1 the last. The distance the
  key must travel is set by where the model reads out: a recurrent reader at the last state is
  ``seq_len - 1 - position`` steps from a key at the start; a [CLS] readout (prepended at the
  front) is ``position + 1`` positions from it, so ``key_position=-1`` puts the key ``seq_len``
  positions away, beyond the reach of a windowed attention after all its layers. A reader that
  cannot bring the key to its readout is at chance (1 / n_classes).
- ``listops``: nested ``[MAX``, ``[MIN``, ``[MED``, ``[SM`` (sum mod 10) expressions over digits, as
  in the Long Range Arena (Nangia & Bowman 2018; Tay et al. 2021); the label is the exact value
  (0-9). Lengths fall between ``seq_len / 2`` and ``seq_len``.

Splits are generated from ``split_seed`` (not the model seed), so every model sees the same
data; test and validation sequences that also occur in training are regenerated.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Callable

from suite.models.embeddings import TokenEmbedding
from tasks.classification import ClassificationData, ClassificationTask, TokenDataset, pad_collate

PAD = 0
Example = tuple[list[int], int]

# --- recall -----------------------------------------------------------------------------------


def recall_example(rng: random.Random, seq_len: int, n_classes: int, n_filler: int, key_position: int = 0) -> Example:
    """Key ids 1..C at ``key_position`` (negative: from the end), filler ids C+1..C+F elsewhere; label = key id - 1."""
    key = rng.randrange(n_classes)
    filler = [1 + n_classes + rng.randrange(n_filler) for _ in range(seq_len - 1)]
    at = key_position % seq_len
    return filler[:at] + [1 + key] + filler[at:], key


# --- ListOps ----------------------------------------------------------------------------------

OPS = ["[MAX", "[MIN", "[MED", "[SM"]
VOCAB = [str(d) for d in range(10)] + OPS + ["]"]
TOKEN_ID = {tok: i + 1 for i, tok in enumerate(VOCAB)}  # 0 is padding


def listops_value(op: str, args: list[int]) -> int:
    """Exact value of one operator over digit arguments."""
    if op == "[MAX":
        return max(args)
    if op == "[MIN":
        return min(args)
    if op == "[MED":
        ordered = sorted(args)
        return ordered[(len(ordered) - 1) // 2]  # lower median: always a digit
    if op == "[SM":
        return sum(args) % 10
    raise ValueError(f"unknown ListOps operator {op!r}")


def listops_tree(rng: random.Random, budget: int, depth: int, max_depth: int, max_args: int) -> tuple[list[str], int]:
    """A random expression of at most ``budget`` tokens -> (tokens, value)."""
    if budget < 6 or depth >= max_depth or (depth > 0 and rng.random() < 0.15):
        digit = rng.randrange(10)
        return [str(digit)], digit
    op = rng.choice(OPS)
    n_args = rng.randint(2, max_args)
    inner = budget - 2  # the operator and the closing bracket
    weights = [rng.random() + 0.05 for _ in range(n_args)]
    tokens, values = [op], []
    for w in weights:
        child, value = listops_tree(rng, max(1, int(inner * w / sum(weights))), depth + 1, max_depth, max_args)
        tokens += child
        values.append(value)
    return tokens + ["]"], listops_value(op, values)


def evaluate_listops(tokens: list[str]) -> int:
    """Value of a token list, by a stack machine (an independent check of the generator)."""
    stack: list[tuple[str, list[int]]] = []
    result = None
    for tok in tokens:
        if tok in OPS:
            stack.append((tok, []))
        elif tok == "]":
            op, args = stack.pop()
            value = listops_value(op, args)
            if stack:
                stack[-1][1].append(value)
            else:
                result = value
        else:
            if stack:
                stack[-1][1].append(int(tok))
            else:
                result = int(tok)
    if stack or result is None:
        raise ValueError(f"unbalanced ListOps expression: {' '.join(tokens)}")
    return result


def listops_example(rng: random.Random, seq_len: int, max_depth: int, max_args: int) -> Example:
    """An expression with seq_len/2 <= length <= seq_len; the budget adapts until one fits."""
    budget = float(seq_len)
    for _ in range(1000):
        tokens, value = listops_tree(rng, int(budget), 0, max_depth, max_args)
        if seq_len // 2 <= len(tokens) <= seq_len:
            return [TOKEN_ID[t] for t in tokens], value
        budget *= 1.1 if len(tokens) < seq_len // 2 else 0.9
    raise RuntimeError(f"could not generate a ListOps expression of length {seq_len // 2}..{seq_len}")


# --- the task ---------------------------------------------------------------------------------


def generate_splits(
    make: Callable[[random.Random], Example], sizes: dict[str, int], split_seed: int
) -> dict[str, list[Example]]:
    """Generate each split from its own seeded stream; val/test never repeat a training sequence."""
    seen: set[tuple[int, ...]] = set()
    out: dict[str, list[Example]] = {}
    for offset, (split, n) in enumerate(sizes.items()):
        rng = random.Random(f"{split_seed}/{split}/{offset}")
        examples: list[Example] = []
        while len(examples) < n:
            seq, label = make(rng)
            if split != "train" and tuple(seq) in seen:
                continue
            examples.append((seq, label))
        if split == "train":
            seen = {tuple(s) for s, _ in examples}
        out[split] = examples
    return out


def load(
    problem: str,
    seq_len: int,
    n_train: int,
    n_val: int,
    n_test: int,
    split_seed: int,
    n_classes: int,
    n_filler: int,
    max_depth: int,
    max_args: int,
    key_position: int = 0,
) -> ClassificationData:
    problems: dict[str, tuple[Callable[[random.Random], Example], int, int]] = {
        "recall": (
            partial(recall_example, seq_len=seq_len, n_classes=n_classes, n_filler=n_filler, key_position=key_position),
            n_classes,
            1 + n_classes + n_filler,
        ),
        "listops": (
            partial(listops_example, seq_len=seq_len, max_depth=max_depth, max_args=max_args),
            10,
            1 + len(VOCAB),
        ),
    }
    if problem not in problems:
        raise ValueError(f"unknown long_range problem {problem!r}; choose one of {sorted(problems)}")
    make, classes, vocab = problems[problem]
    splits = generate_splits(make, {"train": n_train, "val": n_val, "test": n_test}, split_seed)
    return ClassificationData(
        splits={name: TokenDataset([s for s, _ in ex], [y for _, y in ex]) for name, ex in splits.items()},
        collate=pad_collate(PAD, seq_len),
        n_classes=classes,
        class_names=[str(c) for c in range(classes)],
        embedding=partial(TokenEmbedding, vocab, padding_idx=PAD),
        max_len=seq_len,
    )


def build(
    name: str,
    problem: str = "recall",
    dataset: str | None = None,
    seq_len: int = 128,
    n_train: int = 2000,
    n_val: int = 300,
    n_test: int = 500,
    split_seed: int = 0,
    n_classes: int = 8,
    n_filler: int = 32,
    max_depth: int = 10,
    max_args: int = 5,
    key_position: int = 0,
    label_smoothing: float = 0.0,
) -> ClassificationTask:
    """The long-range task (``conf/task/long_range.yaml``); ``dataset`` in records is the problem name."""
    if dataset not in (None, problem):
        raise ValueError(f"long_range dataset {dataset!r} must name its problem {problem!r}")
    if isinstance(key_position, bool) or not isinstance(key_position, int) or not -seq_len <= key_position < seq_len:
        raise ValueError(
            f"long_range key_position must be an integer in [-{seq_len}, {seq_len}) for "
            f"seq_len={seq_len}, got {key_position!r}"
        )
    loader = partial(
        load,
        problem,
        seq_len,
        n_train,
        n_val,
        n_test,
        split_seed,
        n_classes,
        n_filler,
        max_depth,
        max_args,
        key_position,
    )
    return ClassificationTask(name, problem, loader, label_smoothing=label_smoothing, max_len=seq_len)
