"""The state-tracking diagnostics of tasks/capabilities/tracking.py (the S5 word problem, flip-flop, bounded Dyck-2):
their answers computed a second way, their ids in range, their settings refused by name, and one run through the
diagnostic contract with a test length scored apart."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hydra.utils import instantiate

from suite.run import execute
from suite.runtime.predictions import read_predictions
from tasks.capabilities.base import SequenceDiagnostic
from tasks.capabilities.tracking import Dyck, FlipFlop, WordProblem
from tests.conftest import compose_config, shrink


def matrix(p: tuple[int, ...]) -> np.ndarray:
    """The permutation matrix sending basis vector x to p[x]: matrix(q o p) = matrix(q) @ matrix(p)."""
    m = np.zeros((len(p), len(p)), dtype=np.int64)
    m[list(p), range(len(p))] = 1
    return m


@pytest.mark.parametrize(("group", "size"), [("s5", 120), ("a5", 60), ("z60", 60), ("s3", 6)])
def test_the_word_problem_answers_are_the_prefix_products_as_matrices(group, size):
    gen = WordProblem(group)
    assert len(gen.elements) == len(set(gen.elements)) == size and gen.vocab == 1 + 2 * size
    assert gen.elements[0] == tuple(range(len(gen.elements[0])))  # the identity first
    tokens, targets = gen.example(random.Random(3), 40)
    assert len(tokens) == len(targets) == 40
    assert all(1 <= t <= size for t in tokens) and all(size < y <= 2 * size for y in targets)
    state = np.eye(len(gen.elements[0]), dtype=np.int64)
    for token, target in zip(tokens, targets):  # a second way: the product of permutation matrices, newest on the left
        state = matrix(gen.elements[token - 1]) @ state
        assert np.array_equal(matrix(gen.elements[target - 1 - size]), state)


@pytest.mark.parametrize(("group", "parities"), [("s5", {1, -1}), ("a5", {1})])
def test_the_symmetric_and_alternating_groups_hold_every_and_the_even_permutations(group, parities):
    elements = WordProblem(group).elements
    assert set(elements) <= set(itertools.permutations(range(5)))
    assert {round(np.linalg.det(matrix(p))) for p in elements} == parities  # the sign, computed as a determinant
    assert len(elements) == 60 * len(parities)


class Scripted(random.Random):
    """A random source that returns the given draws: ``randrange`` from one list, ``random`` from another."""

    def __init__(self, ranges: list[int], uniforms: list[float] = ()) -> None:
        super().__init__(0)
        self.ranges, self.uniforms = iter(ranges), iter(uniforms)

    def randrange(self, n: int) -> int:  # type: ignore[override]
        return next(self.ranges)

    def random(self) -> float:
        return next(self.uniforms)


def test_the_cyclic_group_is_a_running_sum():
    gen = WordProblem("z60")
    tokens, targets = gen.example(random.Random(5), 50)
    rotation = [e[0] for e in gen.elements]  # element k moves 0 to k
    assert rotation == list(range(60))
    sums = itertools.accumulate(rotation[t - 1] for t in tokens)
    assert [rotation[y - 61] for y in targets] == [s % 60 for s in sums]


def test_the_first_permutation_acts_first():
    """(0 1) then (1 2): 0 -> 1 -> 2, 1 -> 0, 2 -> 1, i.e. (2, 0, 1); the other order would give (1, 2, 0)."""
    gen = WordProblem("s3")
    swap01, swap12 = gen.elements.index((1, 0, 2)), gen.elements.index((0, 2, 1))
    tokens, targets = gen.example(Scripted([swap01, swap12]), 2)
    assert tokens == [1 + swap01, 1 + swap12]
    assert gen.elements[targets[-1] - 7] == (2, 0, 1)


def last_writes(tokens: list[int]) -> list[tuple[int, int]]:
    """(position, bit) of each read instruction, the bit the last write before it wrote (a plain scan)."""
    out, written = [], None
    for i in range(0, len(tokens), 2):
        op, bit = tokens[i], tokens[i + 1] - 4
        if op == 1:
            written = bit
        elif op == 3:
            out.append((i, written))
    return out


@pytest.mark.parametrize("p_ignore", [0.0, 0.1, 0.8, 0.98, 1.0])
def test_each_flip_flop_read_is_scored_with_the_last_written_bit(p_ignore):
    gen = FlipFlop(p_ignore)
    rng = random.Random(7)
    for length in (4, 10, 64):
        tokens, targets = gen.example(rng, length)
        assert len(tokens) == len(targets) == length
        assert set(tokens[0::2]) <= {1, 2, 3} and set(tokens[1::2]) <= {4, 5}
        assert tokens[0] == 1 and tokens[-2] == 3  # a write first, a read last
        scored = [(i, y - 6) for i, y in enumerate(targets) if y != -1]
        assert scored == last_writes(tokens)
        assert all(tokens[i + 1] - 4 == bit for i, bit in scored)  # the read's own bit is the answer (next token)


@pytest.mark.parametrize("p_ignore", [0.1, 0.8, 0.98])
def test_the_flip_flop_instructions_follow_p_ignore(p_ignore):
    gen, rng = FlipFlop(p_ignore), random.Random(11)
    middle = [op for _ in range(300) for op in gen.example(rng, 64)[0][2:-2:2]]  # 30 free instructions a sequence
    share = {op: middle.count(op) / len(middle) for op in (1, 2, 3)}
    assert share[2] == pytest.approx(p_ignore, abs=0.02)
    assert share[1] == pytest.approx((1 - p_ignore) / 2, abs=0.02) == pytest.approx(share[3], abs=0.03)


def stack_states(tokens: list[int], max_depth: int) -> list[tuple[int, str]]:
    """(depth, innermost bracket) after each token, by a stack of characters; asserts a valid, bounded prefix."""
    text = "".join("_()[]"[t] for t in tokens)
    stack: list[str] = []
    out = []
    for c in text:
        if c in "([":
            stack.append(c)
        else:
            assert stack and stack.pop() + c in ("()", "[]"), f"{text}: {c} closes nothing open"
        assert len(stack) <= max_depth, f"{text}: deeper than {max_depth}"
        out.append((len(stack), stack[-1] if stack else ""))
    return out


@pytest.mark.parametrize(("max_depth", "p_open"), [(1, 0.5), (4, 0.5), (4, 0.9), (6, 0.3)])
def test_the_dyck_answers_are_the_depth_and_innermost_bracket_of_a_valid_bounded_prefix(max_depth, p_open):
    gen = Dyck(max_depth, p_open)
    assert gen.vocab == 6 + 2 * max_depth
    rng, deepest = random.Random(13), 0
    for length in (max_depth, 17, 64):
        for _ in range(20):
            tokens, targets = gen.example(rng, length)
            assert len(tokens) == len(targets) == length and all(1 <= t <= 4 for t in tokens)
            answers = [(0, "") if y == 5 else (1 + (y - 6) // 2, "(["[(y - 6) % 2]) for y in targets]
            assert all(5 <= y < gen.vocab for y in targets)
            assert answers == stack_states(tokens, max_depth)
            deepest = max(deepest, max(d for d, _ in answers))
    assert deepest == max_depth  # the bound is reached, not just respected


@pytest.mark.parametrize("p_open", [0.3, 0.7])
def test_the_dyck_opens_with_p_open_where_both_moves_are_legal(p_open):
    gen, rng, moves = Dyck(6, p_open), random.Random(17), []
    for _ in range(200):
        tokens, _ = gen.example(rng, 64)
        depths = [d for d, _ in stack_states(tokens, 6)]
        moves += [t in (1, 3) for t, before in zip(tokens[1:], depths) if 0 < before < 6]
    assert sum(moves) / len(moves) == pytest.approx(p_open, abs=0.02)


def test_the_dyck_innermost_type_needs_the_stack_after_a_close():
    """'[(' + ')' and '((' + ')': the depth agrees (a counter cannot tell them apart), the innermost one does not."""
    gen = Dyck(3)
    square = gen.example(Scripted([1, 0], [0.0, 0.99]), 3)  # open '[', open '(', close
    round_ = gen.example(Scripted([0, 0], [0.0, 0.99]), 3)  # open '(', open '(', close
    assert square[0] == [3, 1, 2] and round_[0] == [1, 1, 2]
    assert square[1] == [7, 8, 7] and round_[1] == [6, 8, 6]  # depth 1 with '[' (6 + 1), with '(' (6 + 0)


def test_the_splits_are_seeded_and_every_config_builds_at_its_defaults():
    for name in ("s5", "a4", "flip_flop", "dyck"):
        cfg = compose_config(f"task=capability/{name}", "model=lstm")
        task = instantiate(cfg.task)
        assert isinstance(task, SequenceDiagnostic) and task.name == name
        assert task.test_lengths == [2 * task.length, 4 * task.length]
    a4 = instantiate(compose_config("task=capability/a4").task).generator
    assert a4.group == "a4" and len(a4.elements) == 12  # the map's word problem: S5's config with the group A4
    make = lambda gen, seed: SequenceDiagnostic(  # noqa: E731
        "t", "t", gen, seq_len=16, test_lengths=[32], n_train=50, n_val=10, n_test=10, split_seed=seed
    )
    for gen in (WordProblem("s5"), FlipFlop(), Dyck(3)):
        a, b, c = make(gen, 0), make(gen, 0), make(gen, 1)
        for task in (a, b, c):
            task.setup()
        assert a.splits == b.splits and a.splits != c.splits
        assert [len(t) for t, _ in a.splits["test"]] == [16] * 10 + [32] * 10


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: WordProblem("s7"), r"word_problem: task.generator.group must be one of s<n> \(2 <= n <= 6\), a<n>"),
        (lambda: WordProblem("a2"), r"word_problem: task.generator.group must be one of .*, got 'a2'"),
        (lambda: WordProblem("z1"), r"word_problem: task.generator.group must be one of .*, got 'z1'"),
        (lambda: WordProblem("S5"), r"word_problem: task.generator.group must be one of .*, got 'S5'"),
        (lambda: WordProblem("s5").check(0), "s5: task.seq_len must be >= 1, got 0"),
        (lambda: FlipFlop(1.5), r"flip_flop: task.generator.p_ignore must be a probability in \[0, 1\], got 1.5"),
        (lambda: FlipFlop(-0.1), r"flip_flop: task.generator.p_ignore must be a probability in \[0, 1\]"),
        (lambda: FlipFlop().check(2), r"flip_flop: a length \(task.seq_len, task.test_lengths\) must be even and >= 4"),
        (
            lambda: SequenceDiagnostic("f", "f", FlipFlop(), 16, test_lengths=[33]),
            "flip_flop: a length .* must be even and >= 4 .*, got 33",
        ),
        (lambda: Dyck(0), "dyck: task.generator.max_depth must be an integer >= 1, got 0"),
        (lambda: Dyck(2.5), "dyck: task.generator.max_depth must be an integer >= 1, got 2.5"),
        (lambda: Dyck(3, 1.0), r"dyck: task.generator.p_open must be a probability in \(0, 1\), got 1.0"),
        (lambda: Dyck(3, 0), r"dyck: task.generator.p_open must be a probability in \(0, 1\), got 0"),
        (
            lambda: SequenceDiagnostic("d", "d", Dyck(9), 8, test_lengths=[16]),
            "dyck: task.generator.max_depth=9 is beyond the length 8",
        ),
    ],
)
def test_bad_settings_are_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_run_scores_every_test_length_apart_and_keeps_a_row_a_sequence(tmp_path):
    settings = ["task.seq_len=8", "task.test_lengths=[16]", "task.n_train=64", "task.n_val=16", "task.n_test=16"]
    cfg = shrink(compose_config("task=capability/s5", "model=lstm", *settings, "trainer.max_steps=4"))
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    rows = read_predictions(tmp_path)
    assert [r["length"] for r in rows] == [8] * 16 + [16] * 16  # a row a test sequence
    assert all(r["scored"] == r["length"] for r in rows)  # every position scored
    for length, key in ((8, "accuracy"), (16, "accuracy_at_16")):
        at = [r for r in rows if r["length"] == length]
        assert record.metrics[key] == pytest.approx(sum(r["correct"] for r in at) / (16 * length))
