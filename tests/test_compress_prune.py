"""Pruning: the stated sparsity, kept through fine-tuning; heads and neurons physically removed.

Removing them does not change what they did not contribute.
"""

import pytest
import torch

from suite.compress.importance import gate_importance
from suite.compress.method import Context
from suite.compress.prune import GradualPruning, MagnitudePruning, pruned_sparsity
from suite.compress.slicing import keep_heads, keep_neurons
from suite.compress.structured import StructuredPruning, heads_to_keep, neurons_to_keep
from suite.jobs.prepare import prepare
from suite.models.transformer import DecoderLayer, Encoder
from suite.training.callbacks import Callback
from suite.training.trainer import limited
from tests.conftest import compose_config, shrink

CPU = torch.device("cpu")


def tiny(model: str = "transformer", *extra: str):
    cfg = shrink(
        compose_config(
            "task=long_range",
            f"model={model}",
            "task.seq_len=16",
            "task.n_train=64",
            "task.n_val=16",
            "task.n_test=16",
            *extra,
        )
    )
    prepared = prepare(cfg, CPU)
    return cfg, prepared.task, prepared.model


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_magnitude_pruning_reaches_its_sparsity_and_fine_tuning_keeps_it(model):
    from hydra.utils import instantiate

    cfg, task, trained = tiny(model)
    method = MagnitudePruning(0.8)
    batch = next(iter(task.loaders(8, 0)["train"]))
    pruned = method.compress(trained, Context(task, CPU, 0, batch, None))
    assert pruned_sparsity(pruned, method.layers) == pytest.approx(0.8, abs=1e-3)
    assert pruned_sparsity(trained, method.layers) < 0.01  # a copy was pruned
    trainer = instantiate(cfg.trainer, max_steps=3, optimizer={"lr": 1e-2})  # large steps: a revived weight would show
    fitted = trainer.fit(pruned, task, CPU, 0).model
    finished = method.finish(fitted)
    assert pruned_sparsity(finished, method.layers) >= 0.8 - 1e-3
    assert not any(
        name.endswith(("_orig", "_mask")) for name in finished.state_dict()
    )  # zeros made permanent: a plain state dict


@pytest.mark.parametrize("sparsity", [-0.1, 1.0, 1.5])
def test_sparsity_outside_0_1_is_refused(sparsity):
    with pytest.raises(ValueError, match=r"compress.sparsity must be in \[0, 1\)"):
        MagnitudePruning(sparsity)


def test_the_gradual_schedule_is_zhu_and_gupta_cubic_ramp():
    ramp = GradualPruning(0.9, ["linear"], ramp=0.5, every=10)
    values = [ramp.sparsity_at(t, 200) for t in range(0, 201, 10)]
    assert (
        values[0] == 0 and values[5] == pytest.approx(0.9 * (1 - 0.5**3)) and values[10:] == [0.9] * 11
    )  # the target from step 100 on
    assert all(a < b for a, b in zip(values[:10], values[1:11]))  # rising, fastest at first


def test_gradual_pruning_ramps_during_fine_tuning_and_only_full_sparsity_epochs_can_be_the_best():
    from hydra.utils import instantiate

    cfg, task, trained = tiny(
        "transformer", "trainer.batch_size=8"
    )  # 64 examples: 8 steps an epoch, a validation after each
    method = MagnitudePruning(0.8, schedule="gradual", ramp=0.5, every=2, fine_tune={})
    batch = next(iter(task.loaders(8, 0)["train"]))
    pruned = method.compress(trained, Context(task, CPU, 0, batch, None))
    assert pruned_sparsity(pruned, method.layers) == 0  # starts dense
    seen = []

    class Watch(
        Callback
    ):  # after the schedule's callback: the sparsity each epoch ends at, and whether it could be the best
        def on_validation_end(self, state):
            seen.append((round(pruned_sparsity(state.model, method.layers), 3), state.best_eligible, state.improved))

    trainer = instantiate(cfg.trainer, max_steps=32, max_epochs=10, patience=1)
    fit = trainer.fit(pruned, task, CPU, 0, callbacks=[*method.callbacks(), Watch()])
    assert (
        [s for s, _, _ in seen] == sorted(s for s, _, _ in seen)
        and seen[0][0] < 0.8
        and seen[-1][0] == pytest.approx(0.8, abs=1e-3)
    )
    assert all(eligible == (s >= 0.8 - 1e-3) for s, eligible, _ in seen) and not any(
        improved for _, eligible, improved in seen if not eligible
    )
    assert sum(not eligible for _, eligible, _ in seen) > 1  # the ramp's epochs did not count against patience 1
    assert pruned_sparsity(fit.model, method.layers) == pytest.approx(
        0.8, abs=1e-3
    )  # the restored best is at the target
    finished = method.finish(fit.model)
    assert method.reached_in_fine_tune and method.describe()["schedule"] == "gradual"
    assert pruned_sparsity(finished, method.layers) == pytest.approx(0.8, abs=1e-3)


def test_a_gradual_schedule_cut_short_is_finished_at_its_target_and_says_so():
    _, task, trained = tiny("transformer")
    method = MagnitudePruning(0.5, schedule="gradual", fine_tune={})
    dense = method.compress(trained, Context(task, CPU, 0, None, None))  # no fine-tuning ran: the ramp never started
    finished = method.finish(dense)
    assert method.reached_in_fine_tune is False and method.describe()["reached_in_fine_tune"] is False
    assert pruned_sparsity(finished, method.layers) == pytest.approx(0.5, abs=1e-3)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"schedule": "cubic"}, "compress.schedule must be one of"),
        ({"schedule": "gradual", "fine_tune": None}, "needs compress.fine_tune"),
        ({"schedule": "gradual", "ramp": 0.0}, r"compress.ramp must be in \(0, 1\]"),
        ({"every": 0}, "compress.every must be"),
    ],
)
def test_bad_schedule_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        MagnitudePruning(0.5, **{"fine_tune": {}} | settings)


def redundant_encoder() -> Encoder:
    torch.manual_seed(0)
    encoder = Encoder(d_model=16, n_layers=2, n_heads=4, d_ff=32, dropout=0.0, norm_first=True).eval()
    with torch.no_grad():
        encoder.layers[0].self_attn.out_proj.weight[:, 8:12] = 0.0  # head 2 of layer 0 contributes nothing
        encoder.layers[1].ff.linear2.weight[:, [3, 17]] = 0.0  # nor do neurons 3 and 17 of layer 1
    return encoder


def test_removing_a_head_whose_output_projection_is_zero_leaves_outputs_equal():
    encoder = redundant_encoder()
    x, pad = torch.randn(3, 7, 16), torch.zeros(3, 7, dtype=torch.bool)
    pad[0, -2:] = True
    before = encoder(x, pad)
    attention = encoder.layers[0].self_attn
    keep_heads(attention, torch.tensor([0, 1, 3]))
    assert (
        attention.n_heads == 3
        and attention.in_proj.weight.shape == (36, 16)
        and attention.out_proj.weight.shape == (16, 12)
    )
    torch.testing.assert_close(encoder(x, pad), before)
    keep_neurons(encoder.layers[1].ff, torch.tensor([i for i in range(32) if i not in (3, 17)]))
    assert encoder.layers[1].ff.linear1.out_features == 30
    torch.testing.assert_close(encoder(x, pad), before)


def test_removing_a_dead_cross_attention_head_leaves_the_decoder_layer_equal():
    torch.manual_seed(0)
    layer = DecoderLayer(16, 4, 32, dropout=0.0).eval()
    with torch.no_grad():
        layer.cross_attn.out_proj.weight[:, 4:8] = 0.0  # head 1 of the cross-attention contributes nothing
    x, memory, pad = torch.randn(2, 5, 16), torch.randn(2, 7, 16), torch.zeros(2, 7, dtype=torch.bool)
    pad[1, -3:] = True
    before = layer(x, memory, pad)
    keep_heads(layer.cross_attn, torch.tensor([0, 2, 3]))
    assert layer.cross_attn.q_proj.weight.shape == (12, 16) and layer.cross_attn.kv_proj.weight.shape == (24, 16)
    torch.testing.assert_close(layer(x, memory, pad), before)


def test_a_head_that_contributes_nothing_has_zero_importance_and_goes_first():
    _, task, model = tiny("transformer", "model.backbone.n_layers=2")
    layer = [m for m in model.modules() if hasattr(m, "self_attn")][0]
    with torch.no_grad():
        layer.self_attn.out_proj.weight[:, 8:16] = 0.0  # head 1 of 4 (head width 8)
    sites = {"heads": (layer.self_attn.out_proj, 4), "neurons": (layer.ff.linear2, layer.ff.linear2.in_features)}
    scores = gate_importance(model, task, limited(task.loaders(16, 0)["train"], 2), sites, CPU)
    assert scores["heads"][1] == 0 and (scores["heads"][[0, 2, 3]] > 0).all()
    assert all(p.grad is None for p in model.parameters())  # the model's own gradients untouched
    assert heads_to_keep([scores["heads"]], 0.25)[0].tolist() == [0, 2, 3]
    assert neurons_to_keep(torch.tensor([3.0, 1.0, 2.0, 0.5]), 0.5).tolist() == [0, 2]


def test_heads_are_ranked_across_layers_and_each_layer_keeps_one():
    scores = [torch.tensor([0.1, 0.2, 5.0, 6.0]), torch.tensor([1.0, 1.0, 1.0, 1.0])]  # normalised per layer first
    kept = heads_to_keep(scores, 0.5)
    assert [k.tolist() for k in kept] == [[2, 3], [0, 1]] or sum(len(k) for k in kept) == 4
    assert all(len(k) >= 1 for k in heads_to_keep([torch.ones(2), torch.ones(2)], 0.99))


def test_structured_pruning_makes_the_model_smaller_and_runs(tmp_path):
    _, task, model = tiny("transformer")
    batch = next(iter(task.loaders(8, 0)["test"]))
    method = StructuredPruning(heads=0.5, neurons=0.5, importance_batches=2)
    pruned = method.compress(model, Context(task, CPU, 0, batch, tmp_path))
    assert method.kept == {"heads": [2], "neurons": [32]}
    assert sum(p.numel() for p in pruned.parameters()) < sum(p.numel() for p in model.parameters())
    assert pruned(batch.inputs, batch.pad_mask).shape == model(batch.inputs, batch.pad_mask).shape


def test_head_pruning_on_an_lstm_is_refused_naming_the_setting():
    _, _, model = tiny("lstm")
    with pytest.raises(ValueError, match="compress=structured_pruning .*applies to Transformer encoders"):
        StructuredPruning(heads=0.5).check(model)
    with pytest.raises(ValueError, match=r"compress.heads must be in \[0, 1\)"):
        StructuredPruning(heads=1.0)


def test_head_removal_refuses_an_attention_variant_with_its_own_state():
    _, _, model = tiny("transformer", "model/attention=linformer")
    with pytest.raises(ValueError, match="compress.heads=0.5: attention variant"):
        StructuredPruning(heads=0.5).check(model)
    StructuredPruning(neurons=0.5).check(model)  # neurons alone do not touch attention


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_removing_a_dead_hidden_unit_leaves_outputs_equal(cell):
    from suite.compress.slicing import keep_units
    from suite.models.rnn import RecurrentEncoder

    torch.manual_seed(0)
    encoder = RecurrentEncoder(d_model=8, cell=cell, hidden_size=8).eval()
    rnn, gates = encoder.rnn, encoder.rnn.weight_ih_l0.size(0) // 8
    dead = [2 + g * 8 for g in range(gates)]  # unit 2 in every gate block: its state stays 0
    with torch.no_grad():
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(rnn, name)[dead] = 0.0
        rnn.weight_hh_l0[:, 2] = 0.0
    x, pad = torch.randn(3, 6, 8), torch.zeros(3, 6, dtype=torch.bool)
    pad[1, -3:] = True
    before = encoder(x, pad)
    if cell == "gru":  # a GRU's dead unit keeps h = (1 - z) * n + z * h = 0.5 * tanh(0) + 0.5 * 0 = 0 as well
        assert before[..., 2].abs().max() == 0
    keep_units(encoder, torch.tensor([0, 1, 3, 4, 5, 6, 7]))
    assert encoder.rnn.hidden_size == 7 and encoder.proj.weight.shape == (8, 7)
    torch.testing.assert_close(encoder(x, pad), before)


def test_hidden_unit_pruning_shrinks_an_lstm_and_refuses_a_transformer(tmp_path):
    from suite.compress.units import HiddenUnitPruning

    _, task, model = tiny("lstm")
    method = HiddenUnitPruning(units=0.5, importance_batches=2)
    method.check(model)
    batch = next(iter(task.loaders(8, 0)["test"]))
    pruned = method.compress(model, Context(task, CPU, 0, batch, tmp_path))
    assert method.kept == 16 and pruned(batch.inputs, batch.pad_mask).shape == model(batch.inputs, batch.pad_mask).shape
    with pytest.raises(ValueError, match="compress=hidden_unit_pruning .*applies to recurrent encoders"):
        HiddenUnitPruning().check(tiny("transformer")[2])
    with pytest.raises(ValueError, match=r"compress.units must be in \[0, 1\)"):
        HiddenUnitPruning(units=1.0)
