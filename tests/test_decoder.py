"""Decoders: causality, the cached step equals the full pass, and the Transformer layer equals torch's."""

import pytest
import torch
from torch import nn

from suite.models.rnn import RecurrentDecoder
from suite.models.seq2seq import build_seq2seq
from suite.models.transformer import Decoder, DecoderLayer
from suite.types import Decoder as DecoderContract
from tests.conftest import CONF, compose_config, shrink

# Discovered: every model config with a decoder (tests/test_backbone_contract.py checks the others are refused by name).
SEQ2SEQ_MODELS = sorted(
    p.stem for p in (CONF / "model").glob("*.yaml") if "decoder" in compose_config(f"model={p.stem}").model
)
VOCAB = 50


def decoders() -> dict[str, nn.Module]:
    return {
        "transformer-post-norm": Decoder(32, 2, 4, 64, dropout=0.0, norm_first=False),
        "transformer-pre-norm": Decoder(32, 2, 4, 64, dropout=0.0, norm_first=True),
        "lstm": RecurrentDecoder(32, "lstm", 24, n_layers=2),
        "gru": RecurrentDecoder(32, "gru", 24),
        "rnn": RecurrentDecoder(32, "rnn", 24),
    }


def source(b=3, l=7, d=32):
    memory = torch.randn(b, l, d)
    mask = torch.zeros(b, l, dtype=torch.bool)
    mask[1, 4:] = True
    mask[2, 1:] = True
    return memory, mask


@pytest.mark.parametrize("name", list(decoders()))
def test_decoder_is_causal(name):
    dec = decoders()[name].eval()
    assert isinstance(dec, DecoderContract)
    memory, mask = source()
    tgt = torch.randn(3, 8, 32)
    changed = tgt.clone()
    changed[:, 5:] = torch.randn(3, 3, 32)  # targets after position 4 change
    with torch.no_grad():
        a, b = dec(tgt, memory, mask), dec(changed, memory, mask)
    assert torch.allclose(a[:, :5], b[:, :5], atol=1e-6)
    assert not torch.allclose(a[:, 5:], b[:, 5:], atol=1e-3)


@pytest.mark.parametrize("name", list(decoders()))
def test_memory_padding_is_ignored(name):
    dec = decoders()[name].eval()
    memory, mask = source()
    garbage = memory.clone()
    garbage[mask] = 1e3  # padded memory positions hold anything
    tgt = torch.randn(3, 5, 32)
    with torch.no_grad():
        assert torch.allclose(dec(tgt, memory, mask), dec(tgt, garbage, mask), atol=1e-5)


@pytest.mark.parametrize("model", SEQ2SEQ_MODELS)
def test_cached_steps_equal_full_decoding_at_every_step(model):
    cfg = shrink(compose_config(f"model={model}"))
    net = build_seq2seq(cfg.model, VOCAB, VOCAB, max_len=32, shared_vocab=True).eval()
    src = torch.randint(4, VOCAB, (3, 7))
    src_mask = torch.zeros(3, 7, dtype=torch.bool)
    src_mask[1, 5:] = True
    src = src.masked_fill(src_mask, 0)
    tgt = torch.randint(4, VOCAB, (3, 10))
    with torch.no_grad():
        memory = net.encode(src, src_mask)
        full = net.decode(tgt, memory, src_mask)  # (B, T, V)
        state = net.start(memory, src_mask)
        for t in range(tgt.size(1)):
            logits, state = net.step(tgt[:, t : t + 1], t, state)
            assert torch.allclose(logits, full[:, t], atol=1e-5), (t, (logits - full[:, t]).abs().max())


def load_from_torch(ours: DecoderLayer, ref: nn.TransformerDecoderLayer) -> None:
    """Copy torch's weights into ours: torch's fused in-projection layout, split by the cross-attention's load hook."""
    with torch.no_grad():
        for mine, theirs in ((ours.self_attn, ref.self_attn), (ours.cross_attn, ref.multihead_attn)):
            mine.load_state_dict(
                {
                    "in_proj.weight": theirs.in_proj_weight,
                    "in_proj.bias": theirs.in_proj_bias,
                    **{f"out_proj.{k}": v for k, v in theirs.out_proj.state_dict().items()},
                }
            )
        ours.ff.linear1.load_state_dict(ref.linear1.state_dict())
        ours.ff.linear2.load_state_dict(ref.linear2.state_dict())
        for block, norm in ((ours.self_block, ref.norm1), (ours.cross_block, ref.norm2), (ours.ff_block, ref.norm3)):
            block.norm.load_state_dict(norm.state_dict())


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_matches_torch(norm_first):
    d, h, f = 32, 4, 64
    ref = nn.TransformerDecoderLayer(d, h, f, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    ours = DecoderLayer(d, h, f, dropout=0.0, norm_first=norm_first).eval()
    load_from_torch(ours, ref)
    memory, mask = source(d=d)
    tgt = torch.randn(3, 6, d)
    causal = nn.Transformer.generate_square_subsequent_mask(6)
    with torch.no_grad():
        expected = ref(tgt, memory, tgt_mask=causal, memory_key_padding_mask=mask, tgt_is_causal=True)
        got = ours(tgt, memory, mask)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
