"""Weight decay only on weight matrices; the Transformer's initialisations do what they say."""

import math

import pytest
import torch

from suite.training.optim import decay_groups
from suite.training.trainer import Trainer
from tasks.long_range import build
from tests.conftest import compose_config, shrink


def model(*overrides: str) -> torch.nn.Module:
    task = build("long_range", problem="recall", seq_len=8, n_train=32, n_val=16, n_test=16)
    task.setup()
    torch.manual_seed(0)
    return task.build_model(shrink(compose_config("model=transformer", *overrides)).model)


def test_decay_reaches_matrices_only_and_every_parameter_once():
    m = model()
    decayed, rest = decay_groups(m)
    names = {id(p): n for n, p in m.named_parameters()}
    assert {names[id(p)] for p in decayed["params"]} == {
        n for n, p in m.named_parameters() if n.endswith("weight") and p.ndim == 2 and "embed" not in n
    }
    assert (
        rest["weight_decay"] == 0.0 and "weight_decay" not in decayed
    )  # the optimizer's own setting applies to the matrices
    assert {"content.embed.weight", "pooler.cls", "backbone.norm.weight"} <= {names[id(p)] for p in rest["params"]}
    assert len(decayed["params"]) + len(rest["params"]) == len(list(m.parameters()))


def test_the_trainer_leaves_biases_and_norms_undecayed():
    m = model()
    trainer = Trainer(
        name="t",
        optimizer=lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.1),
        scheduler=lambda o, total_steps: None,
        decay="matrices",
    )
    optimizer = trainer.make_optimizer(params=trainer.parameter_groups(m))
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    with pytest.raises(ValueError, match="trainer.decay"):
        Trainer(name="t", optimizer=None, scheduler=None, decay="some")


def test_gpt2_initialisation_scales_the_residual_projections():
    layers = model("model/init=gpt2").backbone.layers  # one layer: an attention and a feed-forward output projection
    assert layers[0].ff.linear1.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert layers[0].ff.linear2.weight.std().item() == pytest.approx(0.02 / math.sqrt(2), rel=0.1)
    assert torch.count_nonzero(layers[0].ff.linear2.bias) == 0


def test_the_default_initialisation_is_torchs_own():
    assert torch.equal(
        model().backbone.layers[0].ff.linear1.weight, model("model/init=torch").backbone.layers[0].ff.linear1.weight
    )
    xavier = model("model/init=xavier").backbone.layers[0].ff.linear1.weight
    bound = math.sqrt(6 / sum(xavier.shape))
    assert xavier.abs().max() <= bound and xavier.abs().max() > 0.9 * bound


def test_xavier_draws_the_cross_attention_projections_as_torch_draws_its_fused_in_projection():
    from suite.models.init import xavier
    from suite.models.transformer import Decoder

    d = 64
    decoder = Decoder(d, n_layers=1, n_heads=4, d_ff=128)
    torch.manual_seed(0)
    xavier(decoder)
    cross = decoder.layers[0].cross_attn
    bound = math.sqrt(6 / (d + 3 * d))  # xavier-uniform of one (3D, D) matrix, as torch.nn.Transformer's in_proj_weight
    for linear in (cross.q_proj, cross.kv_proj):
        assert (
            linear.weight.abs().max() <= bound and linear.weight.abs().max() > 0.95 * bound and (linear.bias == 0).all()
        )
    assert (
        decoder.layers[0].ff.linear1.weight.abs().max() > bound
    )  # the others as they are: (128, 64) has the wider range
