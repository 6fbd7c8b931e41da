"""python -m suite.tools.op_profile: one training step's operators, per token, from a composed config."""

import pytest

from suite.tools.op_profile import main, profile_step
from tests.conftest import TINY_ENCODER, TINY_LONG_RANGE

TINY = [*TINY_LONG_RANGE, *TINY_ENCODER]


def test_every_operator_of_the_step_is_timed_per_token_heaviest_first():
    ops, tokens, precision = profile_step(
        ["model=transformer", "model/attention=performer", *TINY], batch_size=2, warmup=1, precision="fp32"
    )
    assert precision == "fp32"
    assert tokens == 2 * 32  # the batch's tokens: 2 sequences of 32
    names = {o.name for o in ops}
    assert {"aten::exp", "aten::bmm"} <= names  # FAVOR+'s features and the kernel sums ran in the profiled step
    assert [o.ms for o in ops] == sorted((o.ms for o in ops), reverse=True)
    for o in ops:
        assert o.us_per_token * tokens == pytest.approx(o.ms * 1e3) and o.calls >= 1


def test_the_command_line_prints_the_top_operators(capsys):
    ops = main(["model=lstm", *[o for o in TINY if "backbone" not in o], "--batch", "2", "--warmup", "0", "--top", "3"])
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert lines[0].startswith("Measured on ") and "one training step in fp32" in lines[0]
    table = [line for line in lines if line.startswith("|")]
    assert table[0].startswith("| operator | ms | share |") and len(table) == 2 + 3  # a markdown table of the top 3
    assert table[2].startswith(f"| {ops[0].name} |")


def test_the_step_runs_in_the_precision_asked_and_with_the_configured_dropout():
    """bf16 shows autocast's casts; the model's dropout (0.1 by default) runs in the step, as in training."""
    casts = {}
    for precision in ("fp32", "bf16"):
        ops, _, used = profile_step(["model=transformer", *TINY], batch_size=2, warmup=0, precision=precision)
        by_name = {o.name: o for o in ops}
        assert used == precision
        casts[precision] = by_name["aten::_to_copy"].calls if "aten::_to_copy" in by_name else 0
        assert "aten::random_" in by_name  # the suite's dropout masks (suite.nn.dropout), not bernoulli_
        assert "aten::bernoulli_" not in by_name
    assert casts["bf16"] > casts["fp32"] + 10  # every weight and activation cast to bf16 and back


def test_by_default_the_runs_precision_is_resolved():
    _, _, used = profile_step(["model=transformer", "trainer.precision=fp32", *TINY], batch_size=2, warmup=0)
    assert used == "fp32"
