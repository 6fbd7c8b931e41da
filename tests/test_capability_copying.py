"""The copying diagnostics (tasks/capabilities/copying.py): their answers computed a second way, their ids in their
ranges, their settings refused by name, and induction heads run end to end at a longer test length."""

from __future__ import annotations

import random

import pytest
from hydra.errors import InstantiationException
from hydra.utils import instantiate

from suite.run import execute
from suite.runtime.predictions import read_predictions
from tasks.capabilities.copying import InductionHeads, SelectiveCopying
from tests.conftest import compose_config, shrink

BLANK, COPY, SPECIAL = 1, 2, 1


def answers(targets: list[int]) -> list[tuple[int, int]]:
    """(position, target) at each scored position."""
    return [(i, y) for i, y in enumerate(targets) if y >= 0]


@pytest.mark.parametrize("teacher_forcing", [True, False])
@pytest.mark.parametrize(("n_tokens", "length"), [(1, 2), (3, 6), (4, 23), (8, 64)])
def test_selective_copying_asks_for_the_data_tokens_of_the_first_part_in_order(teacher_forcing, n_tokens, length):
    gen = SelectiveCopying(n_tokens, data_vocab=5, teacher_forcing=teacher_forcing)
    rng = random.Random(3)
    for _ in range(50):
        tokens, targets = gen.example(rng, length)
        assert len(tokens) == len(targets) == length
        start = tokens.index(COPY)  # a second way: the answer region begins at the first copy marker
        assert start == length - n_tokens
        data = [t for t in tokens[:start] if t != BLANK]  # the first part's non-blank tokens, in order
        assert len(data) == n_tokens and all(3 <= t < 3 + 5 for t in data)
        assert answers(targets) == list(zip(range(start, length), data))  # every answer position, nothing else
        region = tokens[start:]
        # teacher forcing: the marker, then each answer in the position after the one that asked for it
        assert region == ([COPY, *data[:-1]] if teacher_forcing else [COPY] * n_tokens)


def test_selective_copying_places_the_data_anywhere_in_the_first_part():
    gen = SelectiveCopying(4, data_vocab=3)
    rng = random.Random(0)
    examples = [gen.example(rng, 24)[0] for _ in range(300)]
    where = {i for tokens in examples for i, t in enumerate(tokens[:20]) if t != BLANK}
    assert where == set(range(20))  # no position of the first part is left to blanks alone (or to data alone)
    assert len({tuple(i for i, t in enumerate(tokens[:20]) if t != BLANK) for tokens in examples}) > 250
    assert {t for tokens in examples for t in tokens} == set(range(1, gen.vocab))  # every id used, none past vocab


@pytest.mark.parametrize("length", [3, 4, 64, 1024])
def test_induction_heads_asks_for_the_token_after_the_first_special_token_at_the_end_only(length):
    gen = InductionHeads(data_vocab=6)
    rng = random.Random(length)
    for _ in range(50):
        tokens, targets = gen.example(rng, length)
        assert len(tokens) == len(targets) == length
        assert tokens[-1] == SPECIAL and tokens.count(SPECIAL) == 2  # only the planted one and the query
        first = tokens.index(SPECIAL)  # a second way: the special token's first occurrence
        assert answers(targets) == [(length - 1, tokens[first + 1])]
        assert all(2 <= t < 2 + 6 for i, t in enumerate(tokens) if i not in (first, length - 1))


def test_induction_heads_plants_the_first_special_token_anywhere_it_can_stand():
    gen = InductionHeads(data_vocab=4)
    rng = random.Random(0)
    firsts = [gen.example(rng, 12)[0].index(SPECIAL) for _ in range(400)]
    # positions 0 .. L-3 (its target must stand before the last position): at a test length as far back as it goes
    assert set(firsts) == set(range(10))
    targets = {gen.example(rng, 12)[1][-1] for _ in range(200)}
    assert targets == set(range(2, gen.vocab))  # every random token can be the answer


@pytest.mark.parametrize(
    "gen",
    [SelectiveCopying(3, 4), SelectiveCopying(3, 4, teacher_forcing=False), InductionHeads(4)],
    ids=["copying", "copying_markers", "induction"],
)
def test_the_examples_are_seeded(gen):
    draw = lambda seed: [gen.example(random.Random(seed), 16) for _ in range(3)]  # noqa: E731
    assert draw(1) == draw(1) and draw(1) != draw(2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: SelectiveCopying(0), "selective_copying: task.generator.n_tokens must be a positive integer, got 0"),
        (lambda: SelectiveCopying(2, 1), "selective_copying: task.generator.data_vocab must be an integer >= 2, got 1"),
        (lambda: SelectiveCopying(2, 4, "yes"), "selective_copying: task.generator.teacher_forcing must be true or"),
        (
            lambda: SelectiveCopying(8).check(15),
            "selective_copying: task.generator.n_tokens=8 needs a length of at least 16 .* got 15",
        ),
        (lambda: InductionHeads(1), "induction_heads: task.generator.data_vocab must be an integer >= 2, got 1"),
        (lambda: InductionHeads(2.0), "induction_heads: task.generator.data_vocab must be an integer >= 2, got 2.0"),
        (lambda: InductionHeads().check(2), r"induction_heads: task.seq_len must be at least 3 \(.*\), got 2"),
    ],
)
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_the_lengths_a_generator_can_fill_are_accepted():
    SelectiveCopying(8).check(16)  # the data tokens and the answer region, no blank: plain copying
    InductionHeads().check(3)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["task.test_lengths=[128,64]"], r"induction_heads: task.test_lengths \[64\] must each be longer than"),
        (["task.seq_len=2", "task.test_lengths=[]"], "induction_heads: task.seq_len must be at least 3"),
    ],
)
def test_the_induction_config_refuses_a_test_length_not_longer_than_training_and_a_length_too_short(overrides, message):
    cfg = compose_config("task=capability/induction_heads", *overrides)
    with pytest.raises((ValueError, InstantiationException), match=message):
        instantiate(cfg.task)


@pytest.mark.parametrize("name", ["selective_copying", "induction_heads"])
def test_the_configs_build_their_generator(name):
    task = instantiate(compose_config(f"task=capability/{name}").task)
    assert task.generator.name == task.name == name
    assert task.seq_len() == task.length  # the record's length: the training length
    assert task.max_len() == max([task.length, *task.test_lengths])  # the model's: the longest test


def test_an_induction_run_scores_the_test_length_apart_and_keeps_a_row_a_sequence(tmp_path):
    settings = ["task.seq_len=8", "task.test_lengths=[32]", "task.n_train=64", "task.n_val=16", "task.n_test=16"]
    cfg = shrink(compose_config("task=capability/induction_heads", "model=lstm", *settings, "trainer.max_steps=4"))
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.seq_len == 8  # trained at 8, tested at 8 and 32
    rows = read_predictions(tmp_path)
    assert [r["length"] for r in rows] == [8] * 16 + [32] * 16  # a row a test sequence
    assert all(r["scored"] == 1 for r in rows)  # one answer a sequence, at the last position
    for length, key in ((8, "accuracy"), (32, "accuracy_at_32")):
        at = [r for r in rows if r["length"] == length]
        assert record.metrics[key] == pytest.approx(sum(r["correct"] for r in at) / len(at))
