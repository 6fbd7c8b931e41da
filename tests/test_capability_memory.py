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
            r"memorization: task.generator.n_keys=8 is too few for a length of 17: a sequence holds 9 distinct keys",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_the_config_builds_the_generator_and_refuses_a_length_its_keys_cannot_fill():
    task = instantiate(compose_config("task=capability/memorization").task)
    assert task.name == task.generator.name == "memorization" and task.generator.vocab == 1 + 256 + 256
    Memorization(8, 4).check(16)  # 8 keys fill a length of 16 (and 15) exactly
    cfg = compose_config("task=capability/memorization", "task.seq_len=600")
    with pytest.raises((ValueError, InstantiationException), match="memorization: task.generator.n_keys=256"):
        instantiate(cfg.task)
