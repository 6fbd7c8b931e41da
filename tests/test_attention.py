"""Full attention: the textbook example, and the fused kernel against the explicit reference."""

import math

import pytest
import torch

from suite.attention import FullAttention, attention_weights


def test_textbook_example_scaling_and_softmax():
    # d_k = 64: scores 112 and 96 scale by 1/sqrt(64) to 14 and 12; softmax gives ~0.88 / 0.12.
    d = 64
    q = torch.zeros(1, 1, 1, d)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, 2, d)
    k[..., 0, 0], k[..., 1, 0] = 112.0, 96.0
    w = attention_weights(q, k)[0, 0, 0]
    assert torch.allclose(w, torch.tensor([0.8808, 0.1192]), atol=1e-4)
    assert math.isclose(w[0].item(), math.exp(14) / (math.exp(14) + math.exp(12)), rel_tol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_sdpa_matches_reference(causal, padded):
    b, h, l, dh = 3, 2, 7, 8
    q, k, v = (torch.randn(b, h, l, dh) for _ in range(3))
    pad = None
    if padded:
        pad = torch.zeros(b, l, dtype=torch.bool)
        pad[0, 5:] = True
        pad[2, 3:] = True
    core = FullAttention().eval()
    out = core(q, k, v, pad_mask=pad, causal=causal)
    ref, w = core.reference(q, k, v, pad_mask=pad, causal=causal)
    assert torch.allclose(out, ref, atol=1e-5)
    if padded:
        assert torch.all(w[0, :, :, 5:] == 0) and torch.all(w[2, :, :, 3:] == 0)
    if causal:
        assert torch.all(w.triu(diagonal=1) == 0)
    assert torch.allclose(w.sum(-1), torch.ones(b, h, l))


def test_causal_with_shorter_query_aligns_to_the_end():
    # A query block of 2 against 5 keys (as with a cache) sees keys up to its own position.
    w = attention_weights(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 5, 4), causal=True)[0, 0]
    assert torch.all(w[0, 4:] == 0) and torch.all(w[0, :4] > 0) and torch.all(w[1] > 0)


@pytest.mark.parametrize("causal", [False, True])
def test_explicit_attention_equals_the_fused_kernel(causal):
    from suite.attention.explicit import ExplicitAttention

    b, h, l, dh = 2, 2, 6, 8
    q, k, v = (torch.randn(b, h, l, dh) for _ in range(3))
    pad = torch.zeros(b, l, dtype=torch.bool)
    pad[1, 4:] = True
    fused = FullAttention().eval()(q, k, v, pad_mask=pad, causal=causal)
    assert torch.allclose(ExplicitAttention().eval()(q, k, v, pad_mask=pad, causal=causal), fused, atol=1e-5)


def test_explicit_attention_memory_grows_quadratically_where_the_fused_kernel_does_not():
    # Bytes of one forward + backward from the allocator's own events: the explicit path keeps the
    # (B, H, L, L) weights, so doubling L roughly quadruples its peak; the fused kernel's grows ~2x.
    from suite.attention.explicit import ExplicitAttention
    from suite.measure.memory import peak_memory

    def peak(core, length):
        q, k, v = (torch.randn(2, 4, length, 16, requires_grad=True) for _ in range(3))
        return peak_memory(lambda: core(q, k, v).sum().backward(), torch.device("cpu"))

    explicit = [peak(ExplicitAttention(), n) for n in (256, 512)]
    fused = [peak(FullAttention(), n) for n in (256, 512)]
    assert explicit[1] / explicit[0] > 3.0 and fused[1] / fused[0] < 2.5
    assert explicit[1] > 4 * fused[1]
