"""The synthetic long-range problems: exact labels, lengths, fixed and disjoint splits."""

import random

import pytest

from tasks.long_range import TOKEN_ID, build, evaluate_listops, listops_example, listops_value, recall_example

ID_TOKEN = {i: t for t, i in TOKEN_ID.items()}


def test_listops_operators():
    assert listops_value("[MAX", [3, 9, 1]) == 9
    assert listops_value("[MIN", [3, 9, 1]) == 1
    assert listops_value("[MED", [3, 9, 1, 7]) == 3  # lower median of 1 3 7 9
    assert listops_value("[SM", [3, 9, 1]) == 3  # 13 mod 10
    assert evaluate_listops("[MAX 2 9 [MIN 4 7 ] 0 ]".split()) == 9
    assert evaluate_listops("[SM [MED 1 5 3 ] [MAX 8 2 ] ]".split()) == 1  # (3 + 8) mod 10


@pytest.mark.parametrize("seq_len", [32, 128, 512])
def test_listops_labels_are_exact_and_lengths_in_range(seq_len):
    rng = random.Random(seq_len)
    for _ in range(50):
        ids, label = listops_example(rng, seq_len, max_depth=10, max_args=5)
        assert seq_len // 2 <= len(ids) <= seq_len
        assert evaluate_listops([ID_TOKEN[i] for i in ids]) == label


def test_recall_label_is_the_first_token_and_only_there():
    rng = random.Random(0)
    ids, label = recall_example(rng, seq_len=100, n_classes=8, n_filler=32)
    assert len(ids) == 100 and ids[0] == label + 1
    assert all(t > 8 for t in ids[1:])  # filler never looks like a key


@pytest.mark.parametrize("position, index", [(0, 0), (37, 37), (-1, 99), (-10, 90)])
def test_recall_puts_the_key_where_it_is_asked_and_nowhere_else(position, index):
    rng = random.Random(1)
    ids, label = recall_example(rng, seq_len=100, n_classes=8, n_filler=32, key_position=position)
    assert len(ids) == 100 and ids[index] == label + 1
    assert all(t > 8 for i, t in enumerate(ids) if i != index)


def test_recall_with_the_key_first_is_the_data_it_always_was():
    # key_position=0 draws in the same order as before the setting: the benchmark's figures stay comparable.
    first = recall_example(random.Random(3), seq_len=50, n_classes=8, n_filler=32, key_position=0)
    # drawn by tasks/long_range.py as it was before key_position (commit 4d0877b), same seed and sizes
    before = (
        [
            4,
            17,
            32,
            39,
            13,
            9,
            39,
            25,
            23,
            21,
            39,
            39,
            34,
            18,
            23,
            18,
            33,
            9,
            13,
            19,
            11,
            28,
            10,
            26,
            39,
            33,
            36,
            34,
            37,
            17,
            32,
            15,
            11,
            17,
            40,
            22,
            25,
            36,
            28,
            35,
            33,
            31,
            35,
            23,
            30,
            10,
            26,
            19,
            29,
            15,
        ],
        3,
    )
    assert (
        first == before and recall_example(random.Random(3), seq_len=50, n_classes=8, n_filler=32) == before
    )  # 0 is the default
    moved, label = recall_example(random.Random(3), seq_len=50, n_classes=8, n_filler=32, key_position=-1)
    assert label == first[1] and moved[-1] == first[0][0] and moved[:-1] == first[0][1:]


@pytest.mark.parametrize("position", [100, -101, 1.5, True])
def test_a_key_position_outside_the_sequence_is_refused_at_build(position):
    with pytest.raises(ValueError, match="key_position must be an integer in"):
        build("long_range", problem="recall", seq_len=100, key_position=position)


@pytest.mark.parametrize("problem", ["recall", "listops"])
def test_splits_are_fixed_by_split_seed_and_disjoint(problem):
    make = lambda seed: build(
        "long_range", problem=problem, seq_len=24, n_train=300, n_val=50, n_test=80, split_seed=seed
    )  # noqa: E731
    a, b, c = make(0), make(0), make(1)
    for t in (a, b, c):
        t.setup()
    seqs = lambda t, s: [tuple(x.tolist()) for x in t.data.splits[s].sequences]  # noqa: E731
    assert seqs(a, "train") == seqs(b, "train") and seqs(a, "test") == seqs(b, "test")
    assert seqs(a, "train") != seqs(c, "train")
    assert not set(seqs(a, "test")) & set(seqs(a, "train"))
    assert not set(seqs(a, "val")) & set(seqs(a, "train"))
    assert a.split_sizes() == {"train": 300, "val": 50, "test": 80}


def test_unknown_problem_lists_choices():
    task = build("long_range", problem="parity")
    with pytest.raises(ValueError, match=r"\['listops', 'recall'\]"):
        task.setup()
