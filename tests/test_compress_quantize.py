"""Quantization and export: outputs close to fp32 on a tiny model, weights counted in the form they are stored."""

import pytest
import torch
from torch import nn

from suite.compress.footprint import count_weights, linear_bytes, serialized_bytes
from suite.compress.method import Context
from suite.compress.onnx_export import OnnxModel, OnnxRuntime
from suite.compress.quantize import Bf16Weights, DynamicInt8
from suite.jobs.prepare import prepare
from suite.runtime import numerics
from tests.conftest import compose_config, shrink

CPU = torch.device("cpu")


def tiny(model: str = "transformer"):
    """A tiny classifier on generated data, and a padded batch of its test split."""
    cfg = shrink(
        compose_config(
            "task=long_range", f"model={model}", "task.seq_len=16", "task.n_train=32", "task.n_val=8", "task.n_test=8"
        )
    )
    prepared = prepare(cfg, CPU)
    batch = next(iter(prepared.task.loaders(8, 0)["test"]))
    batch.pad_mask = torch.zeros_like(batch.inputs, dtype=torch.bool)
    batch.pad_mask[0, -5:] = batch.pad_mask[1, -2:] = True  # real padding: masked keys must stay masked
    return prepared.task, prepared.model.eval(), batch


def context(task, batch, tmp_path) -> Context:
    return Context(task, CPU, 0, batch, tmp_path)


def logits(model, batch):
    with torch.inference_mode():
        return model(batch.inputs, batch.pad_mask).float()


@pytest.mark.parametrize(
    "method",
    [
        DynamicInt8("torch"),
        DynamicInt8("torch", layers=["linear", "lstm", "embedding"]),
        DynamicInt8("torchao", layers=["linear"]),
        Bf16Weights(),
    ],
    ids=["torch_int8", "torch_int8_embedding", "torchao_int8", "bf16"],
)
@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_quantized_outputs_stay_close_to_fp32_and_the_original_is_untouched(method, model, tmp_path):
    task, fp32, batch = tiny(model)
    if isinstance(method, Bf16Weights) and model == "lstm" and not numerics.cpu_bf16_lstm():
        with pytest.raises(
            ValueError, match="no bf16 LSTM kernel"
        ):  # this CPU kind (AVX2 only) cannot run it: refused by name
            method.check(fp32)
        return
    method.check(fp32)
    before = {k: v.clone() for k, v in fp32.state_dict().items()}
    quantized = method.compress(fp32, context(task, batch, tmp_path))
    reference, out = logits(fp32, batch), logits(quantized, batch)
    assert out.shape == reference.shape
    assert (out - reference).abs().max() <= 0.05 * reference.abs().max() + 1e-3
    assert all(torch.equal(before[k], v) for k, v in fp32.state_dict().items())  # compressed a copy


def test_torch_dynamic_int8_swaps_linear_and_lstm_layers():
    _, model, _ = tiny("lstm")
    quantized = DynamicInt8("torch").compress(model, Context(None, CPU, 0, None, None))
    kinds = {type(m).__module__ + "." + type(m).__name__ for m in quantized.modules()}
    assert "torch.ao.nn.quantized.dynamic.modules.rnn.LSTM" in kinds
    assert "torch.ao.nn.quantized.dynamic.modules.linear.Linear" in kinds and not any(
        type(m) is nn.Linear for m in quantized.modules()
    )


def test_an_int8_embedding_table_is_about_a_quarter_of_its_bytes_and_counted_whole():
    model = nn.Sequential(nn.Embedding(2000, 64), nn.Linear(64, 4))
    quantized = DynamicInt8("torch", layers=["embedding"]).compress(model, Context(None, CPU, 0, None, None))
    assert count_weights(quantized)[0] == count_weights(model)[0]
    table = 2000 * 64 * 4
    saved = serialized_bytes(model.state_dict()) - serialized_bytes(quantized.state_dict())
    assert 0.65 * table < saved < 0.75 * table  # uint8 codes, and a float scale and offset per row
    ids = torch.randint(0, 2000, (3, 7))
    assert (quantized(ids) - model(ids)).abs().max() < 0.05


def test_weights_are_counted_in_their_stored_form():
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 4))
    with torch.no_grad():
        model[0].weight[:128] = 0.0
    total = sum(p.numel() for p in model.parameters())
    assert count_weights(model) == (total, total - 128 * 256)
    quantized = DynamicInt8("torch", layers=["linear"]).compress(model, Context(None, CPU, 0, None, None))
    held, nonzero = count_weights(quantized)
    assert (
        held == total and 0.95 * (total - 128 * 256) < nonzero <= total - 128 * 256
    )  # zeros stay zero; tiny weights may round to it
    # int8 codes and one scale per tensor: about a quarter of the float bytes
    assert 3.5 < linear_bytes(model)[0] / linear_bytes(quantized)[0] < 4.2 and linear_bytes(quantized)[1] == 2
    assert linear_bytes(model)[0] == pytest.approx(
        serialized_bytes({"0": model[0].state_dict(), "2": model[2].state_dict()})
    )


def test_every_unpacked_weight_is_counted_once():
    # Packed int8 weights are unpacked into temporaries; a count keyed on their ids once lost whole layers.
    model = nn.Sequential(*[nn.Linear(32, 32) for _ in range(40)])
    quantized = DynamicInt8("torch", layers=["linear"]).compress(model, Context(None, CPU, 0, None, None))
    assert count_weights(quantized)[0] == sum(p.numel() for p in model.parameters())


def test_onnx_runtime_fp32_equals_pytorch_within_1e_4(tmp_path):
    task, model, batch = tiny("transformer")
    exported = OnnxRuntime("fp32").compress(model, context(task, batch, tmp_path))
    assert isinstance(exported, OnnxModel) and exported.path == tmp_path / "model.onnx"
    assert [p.name for p in tmp_path.iterdir()] == [
        "model.onnx"
    ]  # one file, weights inside: its size is the artefact's
    assert (logits(exported, batch) - logits(model, batch)).abs().max() < 1e-4
    # the batch and the length are dynamic: one short unpadded sequence runs too
    one = batch.inputs[:1, :5]
    assert (exported(one, None) - model(one, None).detach()).abs().max() < 1e-4
    assert (
        count_weights(exported)[0] >= count_weights(model)[0] - 1
    )  # the graph holds every weight (and the position table)


def test_onnx_runtime_int8_stays_close(tmp_path):
    task, model, batch = tiny("transformer")
    quantized = OnnxRuntime("int8").compress(model, context(task, batch, tmp_path))
    assert quantized.path.name == "model.int8.onnx" and not (tmp_path / "model.onnx").exists()
    reference = logits(model, batch)
    assert (logits(quantized, batch) - reference).abs().max() <= 0.05 * reference.abs().max() + 1e-3


def test_onnx_refuses_a_recurrent_model_before_any_work():
    _, model, _ = tiny("lstm")
    with pytest.raises(ValueError, match="compress=onnx.*packed sequences"):
        OnnxRuntime("int8").check(model)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: DynamicInt8("tensorrt"), "compress.backend"),
        (lambda: DynamicInt8("torchao", layers=["linear", "lstm"]), "torchao quantizes Linear layers only"),
        (lambda: DynamicInt8("torch", layers=["conv"]), "compress.layers"),
        (lambda: OnnxRuntime("int4"), "compress.precision"),
    ],
)
def test_bad_settings_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()
