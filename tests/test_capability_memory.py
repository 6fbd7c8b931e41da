"""The memory diagnostics (tasks/capabilities/memory.py): memorization's facts the same in every sequence, split and
example stream, drawn from ``mapping_seed`` alone, never readable from the context; its settings refused by name."""

from __future__ import annotations

import random

import pytest
from hydra.errors import InstantiationException
from hydra.utils import instantiate

from tasks.capabilities.base import SequenceDiagnostic
from tasks.capabilities.memory import Memorization
from tests.conftest import compose_config


def facts_seen(examples: list[tuple[list[int], list[int]]]) -> dict[int, set[int]]:
    """Key -> the values it was scored with, over all examples (one each, if the mapping holds)."""
    seen: dict[int, set[int]] = {}
    for tokens, targets in examples:
        for token, target in zip(tokens, targets):
            if target >= 0:
                seen.setdefault(token, set()).add(target)
    return seen


@pytest.mark.parametrize("length", [1, 2, 7, 32])
def test_each_key_is_followed_by_its_value_and_scored_with_it(length):
    gen = Memorization(n_keys=20, n_values=5, mapping_seed=3)
    rng = random.Random(length)
    for _ in range(50):
        tokens, targets = gen.example(rng, length)
        assert len(tokens) == len(targets) == length
        keys, values = tokens[0::2], tokens[1::2]
        assert all(1 <= k <= 20 for k in keys) and all(21 <= v <= 25 for v in values)
        assert len(set(keys)) == len(keys)  # distinct: no key's value can be read from an earlier occurrence
        assert [i for i, y in enumerate(targets) if y >= 0] == list(range(0, length, 2))  # scored at the keys only
        assert values == [y for y in targets if y >= 0][: len(values)]  # the value shown is the one scored before it


def test_the_mapping_is_one_for_every_sequence_seed_and_split():
    gen = Memorization(n_keys=12, n_values=4, mapping_seed=7)
    examples = [gen.example(random.Random(seed), 9) for seed in range(40) for _ in range(5)]
    seen = facts_seen(examples)
    assert set(seen) == set(range(1, 13))  # every key is asked for
    assert all(len(values) == 1 for values in seen.values())  # and always with the same value
    # the splits of a task (each from its own stream) ask for the same facts
    task = SequenceDiagnostic("m", "m", gen, seq_len=8, n_train=100, n_val=50, n_test=50, split_seed=1)
    task.setup()
    by_split = [facts_seen(task.splits[split]) for split in ("train", "val", "test")]
    merged = facts_seen(task.splits["train"] + task.splits["val"] + task.splits["test"])
    assert all(len(values) == 1 for values in merged.values())
    assert all(split.keys() <= by_split[0].keys() for split in by_split[1:])  # nothing tested that was never trained


def test_the_mapping_comes_from_mapping_seed_alone():
    def facts(mapping_seed: int, stream: int) -> dict[int, int]:
        gen = Memorization(n_keys=16, n_values=16, mapping_seed=mapping_seed)
        rng = random.Random(stream)
        return {k: next(iter(v)) for k, v in facts_seen([gen.example(rng, 16) for _ in range(60)]).items()}

    assert facts(0, 1) == facts(0, 2)  # another example stream (another split seed): the same facts
    assert facts(0, 1) != facts(1, 1)  # another mapping_seed: other facts
    values = facts(0, 1).values()
    assert len(set(values)) > 4  # drawn, not one value for all


def test_the_keys_and_their_order_change_from_sequence_to_sequence():
    gen = Memorization(n_keys=64, n_values=8)
    rng = random.Random(0)
    orders = {tuple(gen.example(rng, 16)[0][0::2]) for _ in range(100)}
    assert len(orders) == 100
    assert gen.example(random.Random(5), 16) == gen.example(random.Random(5), 16)
    assert gen.example(random.Random(5), 16) != gen.example(random.Random(6), 16)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Memorization(0), "memorization: task.generator.n_keys must be a positive integer, got 0"),
        (lambda: Memorization(8, 1), "memorization: task.generator.n_values must be an integer >= 2, got 1"),
        (lambda: Memorization(8, 4, "a"), "memorization: task.generator.mapping_seed must be an integer, got 'a'"),
        (
            lambda: Memorization(8, 4).check(17),
            r"memorization: task.generator.n_keys=8 spells 8 facts with key_tokens=1, too few for a length of 17: a "
            r"sequence holds 9 distinct facts",
        ),
        (
            lambda: Memorization(8, 4, key_tokens=0),
            "memorization: task.generator.key_tokens must be a positive integer",
        ),
        (
            lambda: Memorization(64, 4, key_tokens=4),
            "memorization: n_keys=64 with key_tokens=4 spells 16,777,216 facts",
        ),
        (
            lambda: Memorization(2, 4, key_tokens=2).check(13),
            r"memorization: task.generator.n_keys=2 spells 4 facts with key_tokens=2, too few for a length of 13: a "
            r"sequence holds 5 distinct facts",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def pair_facts(examples: list[tuple[list[int], list[int]]]) -> dict[tuple[int, int], set[int]]:
    """(first key token, second key token) -> the values scored after them, read back from the tokens alone."""
    seen: dict[tuple[int, int], set[int]] = {}
    for tokens, targets in examples:
        for i in range(1, len(tokens)):
            if targets[i] >= 0:
                seen.setdefault((tokens[i - 1], tokens[i]), set()).add(targets[i])
    return seen


@pytest.mark.parametrize("length", [2, 5, 6, 7, 30])
def test_two_token_keys_are_spelt_then_answered_at_their_last_token(length):
    gen = Memorization(n_keys=6, n_values=5, mapping_seed=2, key_tokens=2)
    assert gen.n_facts == 36
    for seed in range(30):
        tokens, targets = gen.example(random.Random(seed), length)
        assert len(tokens) == len(targets) == length
        # the period is three: key, key, value; the value is scored at the second key token and shown after it
        assert all(1 <= t <= 6 for i, t in enumerate(tokens) if i % 3 < 2)
        assert all(7 <= t <= 11 for i, t in enumerate(tokens) if i % 3 == 2)
        assert [i for i, y in enumerate(targets) if y >= 0] == list(range(1, length, 3))
        assert all(targets[i] == tokens[i + 1] for i in range(1, length - 1, 3))
        pairs = [tuple(tokens[i : i + 2]) for i in range(0, length - 1, 3)]
        assert len(set(pairs)) == len(pairs)  # distinct facts: no value readable from the context


def test_two_token_keys_make_every_pair_a_fact_of_its_own():
    gen = Memorization(n_keys=5, n_values=7, mapping_seed=4, key_tokens=2)
    seen = pair_facts([gen.example(random.Random(seed), 24) for seed in range(200)])
    assert set(seen) == {(a, b) for a in range(1, 6) for b in range(1, 6)}  # all 25 pairs are asked for
    assert all(len(values) == 1 for values in seen.values())  # each always with one value
    # the value depends on both tokens: neither alone determines it (as it could if the pair were one key in disguise)
    by_first = {a: {next(iter(seen[(a, b)])) for b in range(1, 6)} for a in range(1, 6)}
    by_second = {b: {next(iter(seen[(a, b)])) for a in range(1, 6)} for b in range(1, 6)}
    assert any(len(v) > 1 for v in by_first.values()) and any(len(v) > 1 for v in by_second.values())


def test_one_token_keys_are_the_same_task_as_before_key_tokens():
    # k = 1 keeps the streams: the committed runs at 256 single-token facts stay the same task
    # (the keys drawn as before: ceil(L / 2) distinct ids from the example's stream, in its order)
    # and the mapping as before: key k's value the k-th draw of the mapping's own stream
    gen = Memorization(n_keys=9, n_values=4, mapping_seed=1, key_tokens=1)
    tokens, targets = gen.example(random.Random(3), 11)
    keys = [1 + k for k in random.Random(3).sample(range(9), 6)]
    facts = random.Random("memorization:1")
    values = {1 + k: 1 + 9 + facts.randrange(4) for k in range(9)}
    assert tokens[0::2] == keys and tokens[1::2] == [values[k] for k in keys[:5]]
    assert targets == [t for k in keys for t in (values[k], -1)][:11]
    assert [gen.spell(f) for f in range(9)] == [[1 + f] for f in range(9)]


def test_the_config_builds_the_generator_and_refuses_a_length_its_keys_cannot_fill():
    task = instantiate(compose_config("task=capability/memorization").task)
    assert task.name == task.generator.name == "memorization" and task.generator.vocab == 1 + 256 + 256
    Memorization(8, 4).check(16)  # 8 keys fill a length of 16 (and 15) exactly
    cfg = compose_config("task=capability/memorization", "task.seq_len=600")
    with pytest.raises((ValueError, InstantiationException), match="memorization: task.generator.n_keys=256"):
        instantiate(cfg.task)
