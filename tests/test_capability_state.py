"""The state-tracking diagnostics' answers, computed a second way, and the diagnostic task contract they run under
(tasks/capabilities/base.py): splits held apart, test lengths scored apart, bad settings refused by name."""

from __future__ import annotations

import random

import pytest

from suite.run import execute
from suite.runtime.predictions import read_predictions
from tasks.capabilities.base import SequenceDiagnostic
from tasks.capabilities.state import ModularSum
from tasks.capabilities.tracking import FlipFlop
from tests.conftest import compose_config, shrink


@pytest.mark.parametrize("modulus", [2, 5])
@pytest.mark.parametrize("scored", ["last", "every"])
def test_the_modular_sum_is_the_sum_of_the_digits(modulus, scored):
    gen = ModularSum(modulus, scored)
    tokens, targets = gen.example(random.Random(1), 23)
    digits = [t - 1 for t in tokens]
    assert all(0 <= d < modulus for d in digits)
    answers = [(i, y - 1 - modulus) for i, y in enumerate(targets) if y >= 0]
    expected = [(i, sum(digits[: i + 1]) % modulus) for i in range(23)]  # a second way: the prefix summed afresh
    assert answers == (expected if scored == "every" else expected[-1:])


def test_the_splits_are_seeded_held_apart_and_the_test_set_holds_each_length():
    make = lambda seed: SequenceDiagnostic(  # noqa: E731
        "p", "p", ModularSum(2), seq_len=8, test_lengths=[16, 32], n_train=100, n_val=20, n_test=10, split_seed=seed
    )
    a, b, c = make(0), make(0), make(1)
    for task in (a, b, c):
        task.setup()
    assert a.splits == b.splits and a.splits != c.splits
    train = {tuple(t) for t, _ in a.splits["train"]}
    assert not train & {tuple(t) for t, _ in a.splits["val"] + a.splits["test"]}
    assert [len(t) for t, _ in a.splits["test"]] == [8] * 10 + [16] * 10 + [32] * 10
    assert a.split_sizes() == {"train": 100, "val": 20, "test": 30}
    lengths = [batch.inputs.shape[1] for batch in a.loaders(4, 0)["test"]]
    assert lengths == [8] * 3 + [16] * 3 + [32] * 3  # batches of one length each


def test_training_lengths_run_from_min_train_len_up_to_seq_len_and_pad_after_each_end():
    task = SequenceDiagnostic("p", "p", ModularSum(2), seq_len=12, min_train_len=2, test_lengths=[24], n_train=400,
                              n_val=20, n_test=10)  # fmt: skip
    task.setup()
    lengths = [len(t) for t, _ in task.splits["train"]]
    assert min(lengths) == 2 and max(lengths) == 12 and len(set(lengths)) == 11  # every length drawn (400 draws)
    assert {len(t) for t, _ in task.splits["val"]} == {12}  # validation at the longest training length
    for tokens, targets in task.splits["train"]:  # the answer of each example at its own end
        assert [i for i, y in enumerate(targets) if y >= 0] == [len(tokens) - 1]
        assert targets[-1] - 3 == sum(t - 1 for t in tokens) % 2
    batch = next(iter(task.loaders(400, 0)["train"]))
    assert batch.inputs.shape == (400, 12)
    for ids, scored in zip(batch.inputs.tolist(), batch.extra["scored"].tolist()):
        end = next((i for i, t in enumerate(ids) if t == 0), len(ids))  # padding (id 0) only after the end
        assert all(t == 0 for t in ids[end:]) and all(t != 0 for t in ids[:end])
        assert [i for i, s in enumerate(scored) if s] == [end - 1]  # scored at the example's last token alone
    same = SequenceDiagnostic("p", "p", ModularSum(2), seq_len=12, min_train_len=2, test_lengths=[24], n_train=400,
                              n_val=20, n_test=10)  # fmt: skip
    same.setup()
    assert same.splits == task.splits  # seeded


def test_a_space_too_small_to_hold_the_splits_apart_is_refused():
    task = SequenceDiagnostic("p", "p", ModularSum(2), seq_len=3, n_train=200, n_val=5, n_test=5)  # 8 strings exist
    with pytest.raises(ValueError, match="parity: 20 draws in a row at length 3 repeated a training sequence"):
        task.setup()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ModularSum(1), "modular_sum: task.generator.modulus must be an integer >= 2, got 1"),
        (lambda: ModularSum(3, "first"), "modular_sum: task.generator.scored must be one of"),
        (
            lambda: SequenceDiagnostic("p", "p", ModularSum(), 16, test_lengths=[32, 8]),
            r"parity: task.test_lengths \[8\] must each be longer than task.seq_len=16",
        ),  # fmt: skip
        (lambda: SequenceDiagnostic("p", "p", ModularSum(), 0), "parity: task.seq_len must be a positive integer"),
        (
            lambda: SequenceDiagnostic("p", "p", ModularSum(), 16, min_train_len=17),
            "parity: task.min_train_len=17 must be at most task.seq_len=16",
        ),
        (
            lambda: SequenceDiagnostic("p", "p", ModularSum(), 16, min_train_len=0),
            "parity: task.min_train_len must be a positive integer",
        ),
        (  # every training length is checked: flip-flop's lengths are even
            lambda: SequenceDiagnostic("f", "f", FlipFlop(), 8, min_train_len=4),
            "flip_flop: a length .* must be even and >= 4 .* got 5",
        ),  # fmt: skip
    ],
)
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_run_scores_every_test_length_apart_and_keeps_a_row_a_sequence(tmp_path):
    settings = ["task.seq_len=8", "task.test_lengths=[16]", "task.n_train=64", "task.n_val=16", "task.n_test=16"]
    cfg = shrink(compose_config("task=capability/sum_mod_5", "model=lstm", *settings, "trainer.max_steps=4"))
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    rows = read_predictions(tmp_path)
    assert [r["length"] for r in rows] == [8] * 16 + [16] * 16
    assert all(r["scored"] == 1 for r in rows)  # one answer a sequence, at the last position
    for length, key in ((8, "accuracy"), (16, "accuracy_at_16")):
        at = [r for r in rows if r["length"] == length]
        assert record.metrics[key] == pytest.approx(sum(r["correct"] for r in at) / len(at))


def test_a_test_generator_draws_the_test_set_alone_and_must_share_the_vocabulary():
    task = SequenceDiagnostic("f", "f", FlipFlop(0.8), 64, test_generator=FlipFlop(0.98), n_train=50, n_val=20,
                              n_test=40)  # fmt: skip
    task.setup()

    def ignores(split: str) -> float:  # the share of ignore instructions (id 2) among the instructions
        instructions = [t for tokens, _ in task.splits[split] for t in tokens[0::2]]
        return sum(t == 2 for t in instructions) / len(instructions)

    assert ignores("train") < 0.9 and ignores("val") < 0.9 and ignores("test") > 0.9
    with pytest.raises(ValueError, match="flip_flop: task.test_generator has 5 ids and the generator 8"):
        SequenceDiagnostic("f", "f", FlipFlop(), 64, test_generator=ModularSum(2))
