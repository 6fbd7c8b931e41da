"""MQAR: every key comes back once and is scored with its own value, the splits are seeded, bad sizes are refused by
name, and the accuracy is the share of right queries (the rows a paired comparison reads)."""

from __future__ import annotations

import random

import pytest
import torch

from suite.run import execute
from suite.runtime.predictions import read_predictions
from tasks.mqar import MqarTask, mqar_example
from tests.conftest import compose_config, shrink


def test_each_key_is_queried_once_and_scored_with_its_value():
    tokens, targets = mqar_example(random.Random(0), seq_len=64, n_pairs=8, n_keys=50, n_values=50, n_filler=16)
    pairs = dict(zip(tokens[0:16:2], tokens[1:16:2]))
    assert len(tokens) == len(targets) == 64 and len(pairs) == 8 and all(1 <= k <= 50 for k in pairs)
    scored = [i for i, y in enumerate(targets) if y >= 0]
    assert len(scored) == 8 and all(i >= 16 for i in scored)
    assert sorted(tokens[i] for i in scored) == sorted(pairs)  # every key once
    assert all(targets[i] == pairs[tokens[i]] and tokens[i + 1] == pairs[tokens[i]] for i in scored)
    rest = [t for i, t in enumerate(tokens[16:], 16) if i not in scored and i - 1 not in scored]
    assert all(t > 100 for t in rest)  # filler only, never a key or a value


def test_the_splits_are_seeded():
    a, b, c = (MqarTask("mqar", "mqar", 32, 4, n_train=20, n_val=5, n_test=5, split_seed=s) for s in (0, 0, 1))
    for task in (a, b, c):
        task.setup()
    assert a.splits == b.splits and a.splits != c.splits


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"seq_len": 31, "n_pairs": 8}, "task.seq_len=31 cannot hold task.n_pairs=8 .* 32 positions"),
        ({"seq_len": 64, "n_pairs": 0}, "task.n_pairs must be a positive integer, got 0"),
        ({"seq_len": 64, "n_pairs": 8, "vocab_size": 10}, "fewer than task.n_pairs=8 keys"),
    ],
)
def test_bad_sizes_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        MqarTask("mqar", "mqar", **settings)


def test_a_run_scores_the_queries_and_keeps_one_row_a_sequence(tmp_path):
    cfg = shrink(compose_config("task=mqar", "model=lstm", "task.seq_len=32", "task.n_pairs=4", "task.n_train=64",
                                "task.n_val=16", "task.n_test=16"))  # fmt: skip
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    rows = read_predictions(tmp_path)
    assert [r["id"] for r in rows] == list(range(16)) and all(r["scored"] == 4 for r in rows)  # four queries each
    assert record.metrics["accuracy"] == pytest.approx(sum(r["correct"] for r in rows) / (16 * 4))


def test_a_bidirectional_model_is_refused():
    """S4D's adapt config (conf/adapt/mqar_s4d.yaml) makes it causal; asked to read both ways, it is refused."""
    cfg = compose_config("task=mqar", "model=s4d", "model.backbone.bidirectional=true")
    task = MqarTask("mqar", "mqar", 32, 4, n_train=4, n_val=2, n_test=2)
    task.setup()
    with pytest.raises(ValueError, match="reads the sequence both ways"):
        task.build_model(cfg.model)
    causal = compose_config("task=mqar", "model=s4d")
    model = task.build_model(causal.model)
    assert model(torch.randint(1, task.vocab, (2, 32))).shape == (2, 32, task.vocab)
