"""python -m suite.tools.op_profile: one training step's operators, per token, from a composed config."""

import pytest

from suite.tools.op_profile import main, profile_step

TINY = [
    "task=long_range",
    "task.seq_len=32",
    "task.n_train=16",
    "task.n_val=8",
    "task.n_test=8",
    "model.d_model=16",
    "model.backbone.n_layers=1",
    "model.backbone.n_heads=2",
    "model.backbone.d_ff=32",
]


def test_every_operator_of_the_step_is_timed_per_token_heaviest_first():
    ops, tokens = profile_step(["model=transformer", "model/attention=performer", *TINY], batch_size=2, warmup=1)
    assert tokens == 2 * 32  # the batch's tokens: 2 sequences of 32
    names = {o.name for o in ops}
    assert {"aten::exp", "aten::bmm"} <= names  # FAVOR+'s features and the kernel sums ran in the profiled step
    assert [o.ms for o in ops] == sorted((o.ms for o in ops), reverse=True)
    for o in ops:
        assert o.us_per_token * tokens == pytest.approx(o.ms * 1e3) and o.calls >= 1


def test_the_command_line_prints_the_top_operators(capsys):
    ops = main(["model=lstm", *[o for o in TINY if "backbone" not in o], "--batch", "2", "--warmup", "0", "--top", "3"])
    out = capsys.readouterr().out
    assert out.startswith("one training step,") and len(out.strip().splitlines()) == 4
    assert ops[0].name in out.splitlines()[1]
