"""Seeded, stratified, de-duplicated splits, made once so every model sees the same split."""
from __future__ import annotations

from typing import Hashable, Sequence

from sklearn.model_selection import train_test_split


def dedupe(keys: Sequence[Hashable]) -> list[int]:
    """Indices of the first occurrence of each key, in order."""
    seen: set[Hashable] = set()
    keep = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return keep


def stratified_split(labels: Sequence[int], fractions: dict[str, float], seed: int) -> dict[str, list[int]]:
    """Split indices 0..N-1 into named parts with the given fractions (summing to 1), stratified by label.

    Args:
        labels: one label per item.
        fractions: e.g. {'train': 0.8, 'val': 0.1, 'test': 0.1}; order is kept.
        seed: the split's own seed (independent of the model seed).
    """
    if abs(sum(fractions.values()) - 1.0) > 1e-6:
        raise ValueError(f"split fractions must sum to 1, got {fractions}")
    remaining = list(range(len(labels)))
    parts: dict[str, list[int]] = {}
    left = 1.0
    names = list(fractions)
    for name in names[:-1]:
        share = fractions[name] / left
        rest_labels = [labels[i] for i in remaining]
        take, remaining = train_test_split(remaining, train_size=share, stratify=rest_labels, random_state=seed)
        parts[name], left = sorted(take), left - fractions[name]
    parts[names[-1]] = sorted(remaining)
    return parts


def consistent_unique(keys: Sequence[Hashable], labels: Sequence[Hashable]) -> list[int]:
    """Indices of the first occurrence of each key, leaving out keys that occur with more than one label.

    A repeated item with one label is kept once (so it cannot straddle train and test); an item
    whose copies disagree is label noise with no right answer, and is dropped altogether.
    """
    seen: dict[Hashable, set[Hashable]] = {}
    for key, label in zip(keys, labels):
        seen.setdefault(key, set()).add(label)
    return [i for i in dedupe(keys) if len(seen[keys[i]]) == 1]
