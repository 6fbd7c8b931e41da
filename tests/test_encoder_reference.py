"""Our encoder layer against torch.nn.TransformerEncoderLayer, given the same weights."""

import pytest
import torch
from torch import nn

from suite.models.transformer import Encoder, EncoderLayer


def load_from_torch(ours: EncoderLayer, ref: nn.TransformerEncoderLayer) -> None:
    """Copy torch's weights into ours (same fused in-projection layout)."""
    with torch.no_grad():
        ours.self_attn.in_proj.weight.copy_(ref.self_attn.in_proj_weight)
        ours.self_attn.in_proj.bias.copy_(ref.self_attn.in_proj_bias)
        ours.self_attn.out_proj.weight.copy_(ref.self_attn.out_proj.weight)
        ours.self_attn.out_proj.bias.copy_(ref.self_attn.out_proj.bias)
        ours.ff.linear1.load_state_dict(ref.linear1.state_dict())
        ours.ff.linear2.load_state_dict(ref.linear2.state_dict())
        ours.attn_block.norm.load_state_dict(ref.norm1.state_dict())
        ours.ff_block.norm.load_state_dict(ref.norm2.state_dict())


def padded_batch(b=3, l=9, d=32):
    x = torch.randn(b, l, d)
    pad = torch.zeros(b, l, dtype=torch.bool)
    pad[1, 6:] = True
    pad[2, 2:] = True
    return x, pad


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("train_mode", [False, True], ids=["eval", "train"])
def test_layer_matches_torch(norm_first, activation, train_mode):
    d, h, f = 32, 4, 64
    ref = nn.TransformerEncoderLayer(
        d, h, f, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    ours = EncoderLayer(d, h, f, dropout=0.0, activation=activation, norm_first=norm_first)
    load_from_torch(ours, ref)
    ref.train(train_mode), ours.train(train_mode)
    x, pad = padded_batch(d=d)
    with torch.no_grad():
        expected = ref(x, src_key_padding_mask=pad)
        got = ours(x, pad)
    real = ~pad
    # torch's eval fast path zeroes padded rows; compare where the sequence is real.
    assert torch.allclose(got[real], expected[real], atol=1e-5), (got[real] - expected[real]).abs().max()


def test_gradients_match_torch():
    d, h, f = 16, 2, 32
    ref = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True)
    ours = EncoderLayer(d, h, f, dropout=0.0)
    load_from_torch(ours, ref)
    x, pad = padded_batch(d=d)
    real = ~pad
    ref(x, src_key_padding_mask=pad)[real].pow(2).sum().backward()
    ours(x, pad)[real].pow(2).sum().backward()
    assert torch.allclose(ours.self_attn.in_proj.weight.grad, ref.self_attn.in_proj_weight.grad, atol=1e-4)
    assert torch.allclose(ours.ff.linear1.weight.grad, ref.linear1.weight.grad, atol=1e-4)


def test_stack_matches_torch_encoder():
    d, h, f, n = 32, 4, 64, 3
    layer = nn.TransformerEncoderLayer(d, h, f, dropout=0.0, batch_first=True)
    ref = nn.TransformerEncoder(layer, n, enable_nested_tensor=False).eval()
    ours = Encoder(d, n, h, f, dropout=0.0).eval()
    for mine, theirs in zip(ours.layers, ref.layers):
        load_from_torch(mine, theirs)
    x, pad = padded_batch(d=d)
    with torch.no_grad():
        assert torch.allclose(ours(x, pad)[~pad], ref(x, src_key_padding_mask=pad)[~pad], atol=1e-5)


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="divisible"):
        EncoderLayer(30, 4, 64)
