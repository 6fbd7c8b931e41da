"""Pictures of attention: each variant's key pattern, probed from the variant; trained models' maps on test inputs."""

import json

import pytest
import torch
from omegaconf import open_dict

from suite.attention import FullAttention, implied_weights
from suite.attention.catalog import key_pattern
from suite.report.attention_patterns import main as patterns_main
from suite.run import execute
from tests.conftest import TINY_TASK, compose_config, need_data, shrink
from tests.test_attention_variants import SMALL, VARIANTS, make_core, padding, qkv

SOFTMAX = {
    "full",
    "explicit",
    "local",
    "longformer",
    "bigbird",
    "reformer",
    "linear",
    "performer",
}  # rows are distributions (linformer, nystrom: not)


@pytest.mark.parametrize("name", VARIANTS)
def test_implied_weights_reproduce_every_variant_and_are_distributions_where_softmax(name):
    core = make_core(name, **SMALL.get(name, {}))
    q, k, v = qkv()
    pad = padding()
    weights = implied_weights(core, q, k, pad)  # (B, H, L, L)
    real = ~pad[:, None, :, None].expand_as(v)
    assert torch.allclose((weights @ v)[real], core(q, k, v, pad)[real], atol=1e-5)  # core(q, k, v) = W v
    real_query_padded_key = (~pad[:, None, :, None] & pad[:, None, None, :]).expand_as(weights)
    assert torch.all(weights[real_query_padded_key] == 0)  # no real query puts weight on a padded key
    if name in SOFTMAX:
        rows = weights.sum(-1)[~pad[:, None, :].expand(-1, weights.size(1), -1)]
        assert torch.allclose(rows, torch.ones_like(rows), atol=1e-5)


def test_full_attentions_implied_weights_are_its_softmax():
    q, k, v = qkv()
    _, reference = FullAttention().reference(q, k, v, causal=True)
    assert torch.allclose(implied_weights(FullAttention(), q, k, causal=True), reference, atol=1e-6)


def test_the_probed_pattern_is_each_variants_own():
    from suite.attention.catalog import build

    i = torch.arange(32)
    band = (i[:, None] - i[None]).abs() <= 8
    assert torch.equal(key_pattern(build("local", 32), 32), band)
    assert torch.equal(key_pattern(build("local", 32), 32, causal=True), band & (i[:, None] >= i[None]))
    assert torch.equal(key_pattern(build("longformer", 32), 32), band | (i[:, None] < 4) | (i[None] < 4))
    assert key_pattern(build("linear", 32), 32).all() and key_pattern(build("full", 32), 32).all()
    core = build("bigbird", 64)  # 8 blocks of 8: the window's, the global one and 2 random ones a query block
    blocks = torch.arange(64) // 8
    assert torch.equal(key_pattern(core, 64), core.block_pattern(8)[blocks[:, None], blocks[None]])
    assert not key_pattern(core, 64).all()


def test_a_pattern_png_for_every_variant(tmp_path):
    assert patterns_main(["--length", "64", "--out", str(tmp_path)]) == 0
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == VARIANTS  # one per config in conf/model/attention/
    assert all(p.stat().st_size > 1000 for p in tmp_path.glob("*.png"))


def rows_are_distributions(maps: dict) -> bool:
    return all(
        torch.allclose(torch.tensor(m["weights"]).sum(-1), torch.ones(len(m["queries"])), atol=1e-5)
        for m in maps.values()
    )


def two_layers(*overrides: str):
    cfg = shrink(compose_config(*overrides))
    cfg.model.backbone.n_layers = 2
    return cfg


def test_sentiment_self_attention_per_layer_with_the_tokens_on_the_axes(tmp_path):
    # A sparse variant, so the maps are the variant's own: weights inside the window only.
    need_data("sentiment", "rt_polarity")
    common = [
        "task=sentiment",
        "task.dataset=rt_polarity",
        "task.vocab_size=500",
        "model=transformer",
        "model/attention=local",
        "model.attention.window=2",
    ]
    trained = execute(two_layers(*common), tmp_path / "train", attention="local")
    assert trained.status == "ok", trained.error
    record = execute(
        two_layers(
            *common,
            "job=attention_maps",
            f"job.checkpoint={tmp_path / 'train' / 'checkpoints' / 'best.pt'}",
            "job.example=3",
        ),
        tmp_path / "maps",
    )
    assert record.status == "ok", record.error
    assert (
        record.artifacts == ["attention_self.png", "attention_maps.json"]
        and (tmp_path / "maps" / "attention_self.png").stat().st_size > 1000
    )
    maps = json.loads((tmp_path / "maps" / "attention_maps.json").read_text())
    assert sorted(maps) == ["backbone.layers.0.self_attn", "backbone.layers.1.self_attn"]  # a map per layer
    first = maps["backbone.layers.0.self_attn"]
    assert first["queries"] == first["keys"] and first["queries"][0] == "[CLS]" and len(first["queries"]) > 3
    assert all(isinstance(t, str) and t for t in first["queries"])
    assert rows_are_distributions(maps)
    w = torch.tensor(first["weights"])
    i = torch.arange(w.size(0))
    assert torch.all(w[(i[:, None] - i[None]).abs() > 2] == 0)  # nothing beyond the window


def test_translation_cross_attention_aligns_the_output_with_the_source(tmp_path, subset_data):
    common = [
        "task=translation",
        "model=transformer",
        *TINY_TASK["translation"],
        f"data_dir={subset_data}",
        "trainer.max_steps=3",
    ]
    trained = execute(shrink(compose_config(*common)), tmp_path / "train")
    assert trained.status == "ok", trained.error
    record = execute(
        shrink(
            compose_config(
                *common, "job=attention_maps", f"job.checkpoint={tmp_path / 'train' / 'checkpoints' / 'best.pt'}"
            )
        ),
        tmp_path / "maps",
    )
    assert record.status == "ok", record.error
    assert set(record.artifacts) == {
        "attention_self.png",
        "attention_decoder_self.png",
        "attention_cross.png",
        "attention_maps.json",
    }
    maps = json.loads((tmp_path / "maps" / "attention_maps.json").read_text())
    cross = maps["decoder.layers.0.cross_attn"]
    assert cross["queries"][0] == "[BOS]" and cross["keys"] == maps["encoder.layers.0.self_attn"]["keys"]
    assert rows_are_distributions(maps)
    decoder = torch.tensor(maps["decoder.layers.0.self_attn"]["weights"])
    assert torch.all(decoder.triu(1) == 0)  # the decoder reads no future token


def test_a_task_without_tokens_is_refused_with_a_reason(tmp_path):
    trained = execute(shrink(compose_config("task=image", "model=vit")), tmp_path / "train")
    record = execute(
        shrink(
            compose_config(
                "task=image",
                "model=vit",
                "job=attention_maps",
                f"job.checkpoint={tmp_path / 'train' / 'checkpoints' / 'best.pt'}",
            )
        ),
        tmp_path / "maps",
    )
    assert trained.status == "ok" and record.status == "failed" and "no tokens to show" in record.error


def test_a_model_without_attention_is_refused_before_its_weights_are_read(tmp_path):
    record = execute(
        shrink(
            compose_config(
                "task=sentiment", "model=lstm", "job=attention_maps", f"job.checkpoint={tmp_path / 'absent.pt'}"
            )
        ),
        tmp_path / "maps",
    )
    assert record.status == "failed" and "has no attention layers to draw" in record.error  # not the missing checkpoint


def test_a_task_that_cannot_show_its_examples_is_refused_before_its_data_is_read(tmp_path):
    cfg = shrink(compose_config("task=language_model", "model=transformer", "job=attention_maps"))
    with open_dict(cfg):
        cfg.data_dir = str(tmp_path / "no data here")  # reading it would fail with DatasetMissing
        cfg.job.checkpoint = str(tmp_path / "absent.pt")
    record = execute(cfg, tmp_path / "maps")
    assert record.status == "failed" and "cannot show its examples" in record.error, record.error
