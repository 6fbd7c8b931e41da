"""Every model config builds, trains a step on a padded batch; RNNs ignore extra padding."""

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate

from suite.models.classifier import build_classifier
from suite.models.embeddings import TokenEmbedding
from suite.models.rnn import RecurrentEncoder
from tests.conftest import CONF, compose_config, shrink

# Every model config with a backbone classifies; a model of strings (Lead-k) serves summarization only.
MODEL_CONFIGS = sorted(
    p.stem for p in (CONF / "model").glob("*.yaml") if "backbone" in compose_config(f"model={p.stem}").model
)


def padded_ids(b=4, l=12, vocab=50):
    ids = torch.randint(1, vocab, (b, l))
    pad = torch.zeros(b, l, dtype=torch.bool)
    pad[1, 7:] = True
    pad[3, 1:] = True
    return ids.masked_fill(pad, 0), pad


@pytest.mark.parametrize("name", MODEL_CONFIGS)
def test_every_model_config_builds_and_trains_a_step(name):
    cfg = shrink(compose_config(f"model={name}"))
    model = build_classifier(cfg.model, TokenEmbedding(50, cfg.model.d_model), n_classes=3, max_len=12)
    ids, pad = padded_ids()
    logits = model(ids, pad)
    assert logits.shape == (4, 3) and torch.isfinite(logits).all()
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2, 0])).backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None for g in grads) and all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("name", MODEL_CONFIGS)
def test_padding_does_not_change_predictions(name):
    cfg = shrink(compose_config(f"model={name}"))
    model = build_classifier(cfg.model, TokenEmbedding(50, cfg.model.d_model), n_classes=3, max_len=20).eval()
    ids, pad = padded_ids()
    more_ids = torch.cat([ids, torch.zeros(4, 5, dtype=torch.long)], dim=1)
    more_pad = torch.cat([pad, torch.ones(4, 5, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        assert torch.allclose(model(ids, pad), model(more_ids, more_pad), atol=1e-5)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_rnn_outputs_unchanged_by_extra_padding(cell, bidirectional):
    rnn = RecurrentEncoder(16, cell=cell, hidden_size=8, n_layers=2, bidirectional=bidirectional).eval()
    x = torch.randn(3, 6, 16)
    pad = torch.zeros(3, 6, dtype=torch.bool)
    pad[0, 4:] = True
    x_more = torch.cat([x, torch.randn(3, 4, 16)], dim=1)  # garbage, not zeros, in the new padding
    pad_more = torch.cat([pad, torch.ones(3, 4, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        out, out_more = rnn(x, pad), rnn(x_more, pad_more)
    assert torch.allclose(out, out_more[:, :6], atol=1e-6)
    assert torch.all(out_more[pad_more] == 0)
    # The real part of sequence 0 equals running it alone, unpadded.
    with torch.no_grad():
        alone = rnn(x[:1, :4], None)
    assert torch.allclose(out[:1, :4], alone, atol=1e-6)


def test_transformer_base_preset_has_paper_dimensions():
    cfg = compose_config("model=transformer_base")
    bb = cfg.model.backbone
    assert (bb.n_layers, cfg.model.d_model, bb.d_ff, bb.n_heads, bb.dropout, bb.norm_first) == (
        6,
        512,
        2048,
        8,
        0.1,
        False,
    )
    encoder = instantiate(bb)
    # 6 layers x (4 D^2 + 4 D attention, 2 D F + F + D feed-forward, 4 D layer norms)
    d, f = 512, 2048
    assert sum(p.numel() for p in encoder.parameters()) == 6 * (4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d)


def test_every_config_group_entry_has_its_module_and_back():
    """A task config names an importable module; every task module (but shared helpers) has a config."""
    import importlib

    root = Path(__file__).resolve().parents[1]
    targeted = set()  # modules some task config builds from (tasks.sequences serves protein and dna)
    for path in sorted((CONF / "task").glob("*.yaml")):
        cfg = compose_config(f"task={path.stem}")
        module, _, fn = cfg.task._target_.rpartition(".")
        assert hasattr(importlib.import_module(module), fn), path
        targeted.add(module.rpartition(".")[2])
    helpers = {"__init__", "classification", "seq2seq", "next_token"}  # task kinds shared by domains
    # A task's own report sections (tasks/<name>_report.py, suite.report.section) are its analysis, not a task.
    modules = {p.stem for p in (root / "tasks").glob("*.py") if not p.stem.endswith("_report")} - helpers
    assert modules <= targeted, "a task module lacks a conf/task/*.yaml that builds it"
    attention = {p.stem for p in (root / "suite" / "attention").glob("*.py")} - {
        "__init__",
        "core",
        "catalog",
    }  # core: the contract; catalog: builds them from their configs
    assert attention <= {p.stem for p in (CONF / "model" / "attention").glob("*.yaml")}, (
        "an attention module lacks its config"
    )


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_a_batch_without_padding_runs_unpacked_and_equals_the_packed_recurrence(cell):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from suite.models.rnn import RecurrentEncoder

    enc = RecurrentEncoder(16, cell, n_layers=2).eval()
    x = torch.randn(3, 9, 16)
    no_pads = torch.zeros(3, 9, dtype=torch.bool)
    packed, _ = enc.rnn(pack_padded_sequence(x, torch.full((3,), 9), batch_first=True))  # what the padded path computes
    reference = enc.proj(pad_packed_sequence(packed, batch_first=True)[0])
    with torch.no_grad():
        assert torch.allclose(enc(x, no_pads), reference, atol=1e-6)
        assert torch.equal(enc(x, no_pads), enc(x, None))  # the same call


def packed_reference(enc, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """What the packed path computes: the recurrence over each row's real positions only."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    lengths = (~pad).sum(dim=1)
    packed, _ = enc.rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    return enc.proj(pad_packed_sequence(packed, batch_first=True, total_length=x.size(1))[0]) * (~pad)[..., None]


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_right_padding_runs_the_fused_kernel_and_equals_the_packed_recurrence(cell, monkeypatch):
    import suite.models.rnn as rnn_module

    enc = rnn_module.RecurrentEncoder(16, cell, n_layers=2).eval()
    x = torch.randn(4, 9, 16)
    pad = torch.arange(9)[None] >= torch.tensor([9, 5, 1, 7])[:, None]  # right padding, as the collators make it
    calls = []
    monkeypatch.setattr(rnn_module, "pack_padded_sequence", lambda *a, **k: calls.append(1))  # fails if reached
    with torch.no_grad():
        out = enc(x, pad)
    monkeypatch.undo()
    assert calls == []
    with torch.no_grad():
        assert torch.allclose(out, packed_reference(enc, x, pad), atol=1e-6)
    assert torch.all(out[pad] == 0)


def test_a_two_way_recurrence_goes_through_packing(monkeypatch):
    """Read backwards, the padding would come first: the two-way encoder must pack (an unpacked run gives
    other outputs, which the comparison with the packed reference would see)."""
    import suite.models.rnn as rnn_module

    enc = rnn_module.RecurrentEncoder(16, "lstm", hidden_size=8, bidirectional=True).eval()
    x = torch.randn(3, 8, 16)
    pad = torch.arange(8)[None] >= torch.tensor([8, 3, 6])[:, None]
    packs = []
    real = rnn_module.pack_padded_sequence
    monkeypatch.setattr(rnn_module, "pack_padded_sequence", lambda *a, **k: packs.append(1) or real(*a, **k))
    with torch.no_grad():
        out = enc(x, pad)
    assert packs == [1]
    with torch.no_grad():
        assert torch.allclose(out, packed_reference(enc, x, pad), atol=1e-6)


def test_padding_before_real_positions_is_refused():
    enc = RecurrentEncoder(16, "gru", hidden_size=8)
    pad = (torch.arange(8)[None] >= torch.tensor([8, 3])[:, None]).flip(1)
    with pytest.raises(ValueError, match="right padding"):
        enc(torch.randn(2, 8, 16), pad)


def test_the_padding_benchmark_compares_equal_outputs():
    from suite.tools.rnn_padding import main

    rows = main(["--batch", "3", "--length", "10", "--width", "8", "--layers", "1", "--repeats", "1"])
    assert [r["cell"] for r in rows] == ["lstm", "gru", "rnn"]
    assert all(r["max_difference"] < 1e-5 and r["packed_ms"] > 0 and r["fused_ms"] > 0 for r in rows)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_right_padding_under_forced_bf16_keeps_the_padding_out(cell):
    """The fused path under bf16 autocast (what precision=auto picks for attention models on AMX, forced here on any
    CPU): finite, padded outputs zero, extra padding changes nothing, and close to fp32."""
    enc = RecurrentEncoder(16, cell, n_layers=2).eval()
    x = torch.randn(3, 9, 16)
    pad = torch.arange(9)[None] >= torch.tensor([9, 4, 6])[:, None]
    more_x, more_pad = torch.cat([x, torch.randn(3, 3, 16)], 1), torch.cat([pad, torch.ones(3, 3, dtype=torch.bool)], 1)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        out, more = enc(x, pad).float(), enc(more_x, more_pad).float()
    with torch.no_grad():
        fp32 = enc(x, pad)
    assert torch.isfinite(out).all() and torch.all(out[pad] == 0) and torch.all(more[more_pad] == 0)
    assert torch.equal(out, more[:, :9])
    assert torch.allclose(out, fp32, atol=0.05)
