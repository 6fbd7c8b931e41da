"""The modern recurrences and the field's baselines train and score in both precisions, forced: the AMX kind's
default (bf16) runs on the AMD kind too, and fp32 on the AMX kind. Their scans run in float32 whatever the autocast:
the loss stays finite."""

from __future__ import annotations

import math

import pytest

from suite.run import execute
from tests.conftest import TINY_LONG_RANGE, compose_config

SMALL = {"mamba2": ["model.backbone.mixer.head_dim=8"]}  # the reference's 64 does not divide 2 x 16


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize(
    "model",
    [
        "mingru",
        "minlstm",
        "mamba",
        "s4d",
        "mamba2",
        "gla",
        "deltanet",
        "gated_deltanet",
        "retnet",
        "xlstm",
        "rwkv7",
        "hyena",
        "based",
    ],
)
def test_a_classifier_trains_in_each_precision(tmp_path, model, precision):
    cfg = compose_config(
        *TINY_LONG_RANGE, f"model={model}", "model.d_model=16", f"trainer.precision={precision}", *SMALL.get(model, [])
    )
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == precision and math.isfinite(record.metrics["loss"])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_mqar_with_a_causal_s4d_trains_in_each_precision(tmp_path, precision):
    cfg = compose_config(
        "task=mqar", "task.seq_len=32", "task.n_pairs=4", "task.n_train=32", "task.n_val=8", "task.n_test=8",
        "model=s4d", "model.d_model=16", "model.backbone.bidirectional=false", f"trainer.precision={precision}",
    )  # fmt: skip
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == precision and 0 <= record.metrics["accuracy"] <= 1
