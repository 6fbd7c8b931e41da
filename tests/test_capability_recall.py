"""The recall diagnostics (tasks/capabilities/recall.py): their answers rebuilt a second way from the tokens alone,
their ids in range, their noise at its rate and never scored, their splits from the seed, bad settings refused by
name, and one run whose record's accuracy is the share of its kept predictions."""

from __future__ import annotations

import random
from collections import Counter
from typing import Callable

import pytest
from hydra.utils import instantiate

from suite.run import execute
from suite.runtime.predictions import read_predictions
from tasks.capabilities.base import Example, SequenceDiagnostic
from tasks.capabilities.recall import FuzzyRecall, InContextRecall, NoisyRecall
from tests.conftest import compose_config, shrink

LENGTHS = [3, 4, 11, 64, 65]  # the shortest a plain task takes, even and odd (an odd one ends on a key)


def draws(generator: object, length: int, n: int = 300, seed: int = 1) -> list[Example]:
    rng = random.Random(seed)
    return [generator.example(rng, length) for _ in range(n)]  # type: ignore[attr-defined]


def plain_answers(tokens: list[int], n_keys: int, n_values: int) -> tuple[list[int], list[int]]:
    """The targets of a (noisy) in-context recall sequence rebuilt from its tokens: read two at a time (a pair or a
    noise chunk), each key's value from its first pair, a key scored where it stands again. And the noise positions."""
    values = range(n_keys + 1, n_keys + n_values + 1)
    expected, noise, first = [-1] * len(tokens), [], {}
    stream = tokens + [None]  # an odd length ends on a key whose value is not shown
    for i in range(0, len(tokens), 2):
        a, b = stream[i], stream[i + 1]
        if a > n_keys + n_values:  # noise comes two at a time, both of the noise vocabulary
            assert b is None or b > n_keys + n_values
            noise += [j for j in (i, i + 1) if j < len(tokens)]
            continue
        assert 1 <= a <= n_keys and (b is None or b in values)
        if a in first:
            expected[i] = first[a]
            assert b is None or b == first[a]  # the mapping holds within the sequence
        elif b is not None:
            first[a] = b
    return expected, noise


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize(
    "generator", [InContextRecall(), InContextRecall(3, 5), NoisyRecall(), NoisyRecall(4, 6, 3, 0.6)]
)
def test_every_recurring_key_and_nothing_else_is_scored_on_its_first_value(generator, length):
    noise_seen = 0
    for tokens, targets in draws(generator, length):
        assert len(tokens) == len(targets) == length
        assert all(1 <= t < generator.vocab for t in tokens)  # 0 pads: a plain task never needs it
        expected, noise = plain_answers(tokens, generator.n_keys, generator.n_values)
        assert targets == expected
        assert all(targets[i] == -1 for i in noise)
        assert targets[-1 - (length % 2 == 0)] >= 0  # the last pair is a probe: a key seen before
        noise_seen += len(noise)
    assert (noise_seen > 0) == (generator.noise > 0 and length > 4)  # at 3 and 4 the one slot before the probe is kept


def test_the_mapping_is_drawn_afresh_each_sequence_and_every_key_and_value_occurs():
    generator = InContextRecall(4, 6)
    seen: Counter[tuple[int, int]] = Counter()
    for tokens, _ in draws(generator, 16):
        seen.update(zip(tokens[::2], tokens[1::2]))
    assert {k for k, _ in seen} == set(range(1, 5))
    assert {v for _, v in seen} == set(range(5, 11))
    assert len(seen) == 4 * 6  # each key with each value, in some sequence


@pytest.mark.parametrize("noise", [0.0, 0.2, 0.6])
def test_noise_comes_at_its_rate_a_chunk_of_two_in_place_of_a_pair(noise):
    generator = NoisyRecall(n_keys=8, n_values=8, n_noise=16, noise=noise)
    length, slots, chunks, ids = 64, 32, 0, Counter()
    for tokens, _ in draws(generator, length, n=2000):
        _, positions = plain_answers(tokens, 8, 8)
        chunks += len(positions) // 2
        ids.update(tokens[i] for i in positions)
    # each slot but the probe is noise at the rate, save one kept a pair so that the probe has a key to recall
    assert chunks / (2000 * (slots - 1)) == pytest.approx(noise * (slots - 2) / (slots - 1), abs=0.01)
    assert set(ids) == (set(range(17, 33)) if noise else set())


def fuzzy_answers(tokens: list[int], n_keys: int) -> tuple[list[int], list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """The targets of a fuzzy recall sequence rebuilt from its tokens: past the padding, maximal runs of key tokens
    and of value tokens alternate (a key, its value); each key's value from its first pair; a recurring key's value
    scored token by token, at the position before each. And the pairs as read (the last value may be cut short)."""
    start = next(i for i, t in enumerate(tokens) if t)
    runs: list[list[int]] = []
    for t in tokens[start:]:
        if runs and (t <= n_keys) == (runs[-1][0] <= n_keys):
            runs[-1].append(t)
        else:
            runs.append([t])
    if len(runs) % 2:  # the sequence ends on a key: its one-token value is the last position's target
        runs.append([])
    pairs = [(tuple(k), tuple(v)) for k, v in zip(runs[::2], runs[1::2])]
    first: dict[tuple[int, ...], tuple[int, ...]] = {}
    expected, i = [-1] * len(tokens), start
    for n, (key, value) in enumerate(pairs):
        assert all(t <= n_keys for t in key) and all(t > n_keys for t in value)
        i += len(key)
        if key in first:
            answer = first[key]
            assert value == answer[: len(value)] and (n == len(pairs) - 1 or value == answer)
            for j, token in enumerate(answer):  # value[j] is the answer at the position before it
                if i - 1 + j < len(tokens):
                    expected[i - 1 + j] = token
        else:
            first[key] = value
        i += len(value)
    return expected, pairs


@pytest.mark.parametrize(
    ("generator", "length"),
    [
        (FuzzyRecall(), 64),
        (FuzzyRecall(), 11),
        (FuzzyRecall(), 128),
        (FuzzyRecall(5, 4, 2, 4), 31),
        (FuzzyRecall(3, 2, 1, 1), 3),
    ],  # fmt: skip
)
def test_every_value_token_of_a_recurring_key_and_nothing_else_is_scored(generator, length):
    key_lengths, value_lengths = Counter(), Counter()
    for tokens, targets in draws(generator, length):
        assert len(tokens) == len(targets) == length
        assert all(0 <= t < generator.vocab for t in tokens)
        pad = next(i for i, t in enumerate(tokens) if t)
        assert set(tokens[pad:]) <= set(range(1, generator.vocab))  # padding only at the start ...
        assert pad <= 2 * (generator.max_key_len + generator.max_value_len) - 3  # ... less than two longest pairs
        expected, pairs = fuzzy_answers(tokens, generator.n_keys)
        assert targets == expected
        keys = {key for key, _ in pairs}
        assert pairs[-1][0] in {key for key, _ in pairs[:-1]}  # the last pair is a probe: a key seen before
        assert not any(a != b and b[: len(a)] == a for a in keys for b in keys)  # no key a prefix of another
        for key, value in pairs[:-1]:
            assert len(set(key)) == len(key) and len(set(value)) == len(value)  # a span's tokens are distinct
            key_lengths[len(key)] += 1
            value_lengths[len(value)] += 1
    assert set(key_lengths) == set(range(1, generator.max_key_len + 1))
    assert set(value_lengths) == set(range(1, generator.max_value_len + 1))


GENERATORS = [InContextRecall(), NoisyRecall(), FuzzyRecall()]


@pytest.mark.parametrize("generator", GENERATORS, ids=lambda g: g.name)
def test_the_splits_come_from_the_seed_and_are_held_apart(generator):
    make = lambda seed: SequenceDiagnostic(  # noqa: E731
        "r", "r", generator, seq_len=24, n_train=200, n_val=20, n_test=20, split_seed=seed
    )
    a, b, c = make(0), make(0), make(1)
    for task in (a, b, c):
        task.setup()
    assert a.splits == b.splits and a.splits != c.splits
    train = {tuple(t) for t, _ in a.splits["train"]}
    assert not train & {tuple(t) for t, _ in a.splits["val"] + a.splits["test"]}
    assert max(max(t) for split in a.splits.values() for t, _ in split) < generator.vocab


@pytest.mark.parametrize(
    ("generator", "vocab"),
    [
        (InContextRecall(), 17),
        (InContextRecall(5, 7), 13),
        (NoisyRecall(), 33),
        (NoisyRecall(2, 3, 4), 10),
        (FuzzyRecall(), 17),
        (FuzzyRecall(4, 3, 2, 3), 8),
    ],  # fmt: skip
)
def test_the_vocabulary_holds_padding_keys_values_and_noise(generator, vocab):
    assert generator.vocab == vocab


BAD: list[tuple[Callable[[], object], str]] = [
    (lambda: InContextRecall(n_keys=0), "in_context_recall: task.generator.n_keys must be an integer >= 1, got 0"),
    (lambda: InContextRecall(n_values=1), "in_context_recall: task.generator.n_values must be an integer >= 2, got 1"),
    (lambda: InContextRecall(n_keys=2.5), "in_context_recall: task.generator.n_keys must be an integer >= 1, got 2.5"),
    (
        lambda: InContextRecall().check(2),
        r"in_context_recall: task.seq_len=2 cannot hold a pair and its recall \(at least 3\)",
    ),
    (
        lambda: SequenceDiagnostic("r", "r", InContextRecall(), 2),
        r"in_context_recall: task.seq_len=2 cannot hold a pair and its recall \(at least 3\)",
    ),
    (lambda: NoisyRecall(noise=1.0), r"noisy_recall: task.generator.noise must be in \[0, 1\) .*, got 1.0"),
    (lambda: NoisyRecall(noise=-0.1), r"noisy_recall: task.generator.noise must be in \[0, 1\)"),
    (lambda: NoisyRecall(noise=True), r"noisy_recall: task.generator.noise must be in \[0, 1\)"),
    (lambda: NoisyRecall(n_noise=0), "noisy_recall: task.generator.n_noise must be an integer >= 1, got 0"),
    (lambda: NoisyRecall(n_keys=0), "noisy_recall: task.generator.n_keys must be an integer >= 1"),
    (lambda: NoisyRecall().check(2), r"noisy_recall: task.seq_len=2 cannot hold a pair and its recall \(at least 3\)"),
    (
        lambda: FuzzyRecall(n_keys=2, max_key_len=3),
        "fuzzy_recall: task.generator.n_keys=2 is fewer than task.generator.max_key_len=3",
    ),
    (
        lambda: FuzzyRecall(n_values=2, max_value_len=3),
        "fuzzy_recall: task.generator.n_values=2 is fewer than task.generator.max_value_len=3",
    ),
    (lambda: FuzzyRecall(max_key_len=0), "fuzzy_recall: task.generator.max_key_len must be an integer >= 1, got 0"),
    (lambda: FuzzyRecall(max_value_len=0), "fuzzy_recall: task.generator.max_value_len must be an integer >= 1"),
    (lambda: FuzzyRecall(n_values=1, max_value_len=1), "fuzzy_recall: task.generator.n_values must be an integer >= 2"),
    (lambda: FuzzyRecall().check(10), r"fuzzy_recall: task.seq_len=10 cannot hold a pair .*\(at least 11\)"),
    (
        lambda: SequenceDiagnostic("r", "r", FuzzyRecall(max_key_len=2, max_value_len=1), 4),
        r"fuzzy_recall: task.seq_len=4 cannot hold a pair and its recall at task.generator.max_key_len=2 and "
        r"task.generator.max_value_len=1 \(at least 5\)",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("build", "message"), BAD, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD)])
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(
    ("config", "kind", "vocab"),
    [("in_context_recall", InContextRecall, 17), ("noisy_recall", NoisyRecall, 33), ("fuzzy_recall", FuzzyRecall, 17)],
)
def test_each_config_builds_its_generator_at_the_sizes_its_comments_give(config, kind, vocab):
    task = instantiate(compose_config(f"task=capability/{config}").task)
    assert type(task.generator) is kind and task.name == task.generator.name == config
    assert task.generator.vocab == vocab  # MAD's vocabularies: 8 keys, 8 values (and 16 noise)
    assert task.seq_len() == 64 and task.split_sizes() == {"train": 12800, "val": 500, "test": 1280}


def test_a_run_keeps_a_row_a_sequence_and_its_accuracy_is_their_share(tmp_path):
    settings = ["task.seq_len=24", "task.n_train=64", "task.n_val=16", "task.n_test=16"]
    cfg = shrink(compose_config("task=capability/fuzzy_recall", "model=lstm", *settings, "trainer.max_steps=4"))
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    rows = read_predictions(tmp_path)
    # one row a test sequence, in order: the split rebuilt from the seed gives each one's scored positions
    task = SequenceDiagnostic("r", "r", FuzzyRecall(), seq_len=24, n_train=64, n_val=16, n_test=16)
    task.setup()
    assert [r["scored"] for r in rows] == [sum(y >= 0 for y in targets) for _, targets in task.splits["test"]]
    assert all(0 <= r["correct"] <= r["scored"] for r in rows)
    share = sum(r["correct"] for r in rows) / sum(r["scored"] for r in rows)
    assert record.metrics["accuracy"] == pytest.approx(share)
