"""The capability map's sizes: each model at the width whose backbone parameters come within 10 % of a target, the
widths a config refuses skipped, and a model no width brings within reach refused before any run, by name."""

from __future__ import annotations

import pytest

from suite.attention.performer import PerformerAttention
from suite.models.classifier import build_sized, count_parameters
from suite.runtime.compose import composed
from suite.runtime.names import model_id, model_overrides
from tasks.capabilities import sizing


def test_a_model_is_matched_at_the_width_nearest_the_target_and_the_count_is_its_backbones():
    sized = sizing.match("lstm", 100_000)
    assert abs(sized.off) <= 0.10 and sized.d_model % sizing.STEP == 0
    node = composed(["model=lstm", f"model.d_model={sized.d_model}"]).model.backbone
    assert count_parameters(build_sized(node, 64)) == sized.parameters  # counted a second way
    for neighbour in (sized.d_model - sizing.STEP, sized.d_model + sizing.STEP):  # no width nearer the target
        assert abs(sizing.backbone_parameters("lstm", neighbour) - 100_000) >= abs(sized.parameters - 100_000)


def test_widths_a_config_refuses_are_skipped_and_an_unreachable_target_is_refused_by_name():
    assert sizing.backbone_parameters("mamba2", 80) is None  # heads of 64 do not divide 2 x 80
    message = r"model 'mamba2' cannot be matched within 10% of 100,000 parameters: the nearest is d_model=64"
    with pytest.raises(ValueError, match=message):
        sizing.plan(["mamba2"], [100_000])
    assert abs(sizing.plan(["mamba2"], [100_000], {"mamba2": ["model.backbone.mixer.head_dim=16"]})[0].off) <= 0.10


def test_a_row_naming_an_attention_core_is_built_and_sized_with_that_core():
    assert model_overrides("transformer-local") == ["model=transformer", "model/attention=local"]
    assert model_overrides("lstm") == ["model=lstm"]
    assert model_id("transformer", "local") == "transformer-local" and model_id("transformer", "full") == "transformer"
    node = composed([*model_overrides("transformer-performer"), "model.d_model=64"]).model.backbone
    core = build_sized(node, 64, causal=True).layers[0].self_attn.core
    assert isinstance(core, PerformerAttention)
    # Linear attention holds no parameters of its own, so its row is matched at full attention's count and width
    assert sizing.backbone_parameters("transformer-linear", 64) == sizing.backbone_parameters("transformer", 64)
