"""python -m suite.tools.step_options: one training step run each way torch offers, the same step every way."""

import torch

from suite.tools.step_options import BUILT_IN, main, parse_variant, variant_steps
from tests.conftest import TINY_ENCODER, TINY_LONG_RANGE

TINY = [*TINY_LONG_RANGE, "model=transformer", *TINY_ENCODER]
NO_DROPOUT = ["model.embed_dropout=0", "model.head.dropout=0", "model.backbone.dropout=0"]  # the same step every way


def test_every_way_takes_the_same_step():
    """Three AdamW implementations and two attention kernels: after two steps from the same weights, the same
    weights (float rounding apart), so the timings compare ways of doing one thing."""
    steps, precision, tokens = variant_steps([*TINY, *NO_DROPOUT], BUILT_IN, batch_size=4, precision="fp32")
    assert precision == "fp32" and tokens == 4 * 32 and set(steps) == set(BUILT_IN)
    before = {k: v.clone() for k, v in steps["as configured"].model.state_dict().items()}
    for way in steps.values():
        way.step()
        way.step()
    reference = steps["as configured"].model.state_dict()
    assert any(not torch.equal(before[k], v) for k, v in reference.items())  # the steps did train
    for name, way in steps.items():
        for key, value in way.model.state_dict().items():
            torch.testing.assert_close(value, reference[key], rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {key}: {m}")


def test_each_variant_gets_the_optimizer_it_names():
    steps, _, _ = variant_steps(TINY, BUILT_IN, batch_size=2, precision="fp32")
    optimizers = {name: way.optimizer for name, way in steps.items()}
    assert optimizers["AdamW fused"].defaults["fused"] is True
    assert optimizers["AdamW foreach"].defaults["foreach"] is True
    assert optimizers["AdamW for-loop"].defaults["foreach"] is False


def test_the_command_line_prints_a_markdown_table_with_a_named_variant(capsys):
    times = main(
        [
            *TINY,
            "--batch",
            "2",
            "--warmup",
            "0",
            "--repeats",
            "2",
            "--only",
            "AdamW fused",
            "--variant",
            "lr 1e-4=trainer.optimizer.lr=1e-4",
            "--precision",
            "bf16",
        ]
    )
    assert set(times) == {"as configured", "AdamW fused", "lr 1e-4"}
    out = capsys.readouterr().out
    assert out.startswith("Measured on ") and "one training step in bf16" in out
    assert "| as configured |" in out and "| lr 1e-4 |" in out and "| variant | median (IQR) |" in out
    assert parse_variant("x=a=1,b=2")[0] == "x" and parse_variant("x=a=1,b=2")[1][0] == ["a=1", "b=2"]
