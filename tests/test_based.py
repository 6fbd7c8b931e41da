"""Based's two mixers (``suite.models.based``) compute what the paper writes.

``tests/test_backbone_contract.py`` finds conf/model/based.yaml and holds the hybrid stack to its declaration
(padding, causal, step by step with its state size, fp32 and bf16, a short training run). Here: the Taylor feature
map's dot product is 1 + s + s^2 / 2; each mixer equals its attention written plainly as an (L, L) product from the
mixer's own weights, and the linear attention equals ``fla``'s reference; each goes on step by step past its window
and chunks exactly as the full pass does, with the state it declares; neither reads ahead; the config builds the two
in turn; bad settings are refused when the model is built, naming the setting and the model.
"""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from suite.attention.linear import causal_sums, with_ones
from suite.models.based import (
    BasedLinearAttention,
    SlidingWindowMixer,
    one_chunk_up_to,
    taylor_causal_sums,
    taylor_feature,
)
from suite.models.mixer_stack import MixerEncoder, merge_heads, split_heads
from suite.runtime.precision_policy import ATTENTION
from tests.conftest import compose_config, shrink

EXACT = dict(atol=1e-10, rtol=1e-10)  # float64: the chunked sums against the (L, L) product, rounding only
D, H, F, WINDOW = 16, 2, 4, 5


def linear(seed: int = 0) -> BasedLinearAttention:
    torch.manual_seed(seed)
    return BasedLinearAttention(D, heads=H, feature_dim=F, chunk=8).double().eval()  # chunks of 8 beyond 37 positions


def sliding(seed: int = 0) -> SlidingWindowMixer:
    torch.manual_seed(seed)
    return SlidingWindowMixer(D, heads=H, window=WINDOW).double().eval()


def test_taylor_features_dot_to_the_second_order_taylor_series_of_exp():
    torch.manual_seed(0)
    a, b = torch.randn(50, 16, dtype=torch.float64), torch.randn(50, 16, dtype=torch.float64)
    s = (a * b).sum(-1)
    fa, fb = taylor_feature(a), taylor_feature(b)
    assert fa.shape[-1] == 1 + 16 + 16**2
    torch.testing.assert_close((fa * fb).sum(-1), 1 + s + s**2 / 2, atol=1e-12, rtol=1e-12)


def based_plainly(m: BasedLinearAttention, x: torch.Tensor) -> torch.Tensor:
    """y_i = sum_(j <= i) K_ij v_j / sum_(j <= i) K_ij, K = 1 + s + s^2 / 2, s = q.k / sqrt(f): one masked (L, L)
    product a head, from the mixer's projections."""
    q, k, v = (split_heads(p(x), m.heads) for p in (m.q_proj, m.k_proj, m.v_proj))
    s = q @ k.transpose(-2, -1) / m.feature_dim**0.5
    kernel = (1 + s + s**2 / 2).tril()
    return m.out_proj(merge_heads(kernel @ v / kernel.sum(-1, keepdim=True)))


def test_the_linear_attention_is_the_normalised_taylor_kernel_attention():
    m, x = linear(), torch.randn(2, 29, D, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], based_plainly(m, x), **EXACT)


@pytest.mark.parametrize("chunk", [1, 5, 8, 29])
def test_the_kernel_inside_a_chunk_is_the_features_dot_product_values_and_gradients(chunk):
    """Inside a chunk the sums take 1 + s + s^2 / 2 from s = q.k; the linear core's sums take the features' dot
    product everywhere: the same sums, and the same gradients."""
    gen = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, H, 29, w, generator=gen, dtype=torch.float64) for w in (F, F, 3))
    inputs = [t.requires_grad_() for t in (q, k, v)]
    ours, state = taylor_causal_sums(q, k, with_ones(v), chunk)
    theirs = causal_sums(taylor_feature(q), taylor_feature(k), with_ones(v), chunk)
    torch.testing.assert_close(ours, theirs, **EXACT)
    torch.testing.assert_close(state, taylor_feature(k).transpose(-2, -1) @ with_ones(v), **EXACT)  # the whole sum
    weights = torch.randn(ours.shape, generator=gen, dtype=torch.float64)
    mine = torch.autograd.grad((ours * weights).sum(), inputs)
    expected = torch.autograd.grad((theirs * weights).sum(), inputs)
    for a, b in zip(mine, expected):
        torch.testing.assert_close(a, b, **EXACT)


def test_a_sequence_longer_than_one_chunk_is_worth_is_taken_in_chunks_with_the_same_result():
    m = linear()
    limit = one_chunk_up_to(m.chunk, m.feature_dim, m.value)
    assert m.chunk < limit < 80  # the test's lengths: one chunk below, several chunks (and a remainder) above
    assert one_chunk_up_to(32, 16, 20) == 341  # the capability map's (width 80, 4 heads), as docs/baselines.md says
    for length in (limit, 83):
        x = torch.randn(2, length, D, dtype=torch.float64)
        with torch.no_grad():
            torch.testing.assert_close(m(x)[0], based_plainly(m, x), **EXACT)
            _, prompt = m(x[:, :10])  # then the rest, in chunks at 83, after a carried state
            torch.testing.assert_close(m(x[:, 10:], prompt, step=True)[0], based_plainly(m, x)[:, 10:], **EXACT)


def test_the_linear_attention_equals_fla_naive_parallel_based():
    naive = pytest.importorskip("fla.ops.based.naive", reason="fla-core is in the peers extra")
    torch.manual_seed(1)
    m = BasedLinearAttention(32, heads=4, feature_dim=16, chunk=16).eval()
    x = torch.randn(2, 40, 32)
    with torch.no_grad():
        q, k, v = (split_heads(p(x), m.heads) for p in (m.q_proj, m.k_proj, m.v_proj))
        expected = m.out_proj(merge_heads(naive.naive_parallel_based(q, k, v)))  # its eps 1e-6: below rtol here
        torch.testing.assert_close(m(x)[0], expected, atol=2e-5, rtol=1e-4)


def window_plainly(m: SlidingWindowMixer, x: torch.Tensor) -> torch.Tensor:
    """Softmax of q.k / sqrt(d) over keys i - window .. i: one masked (L, L) product a head, from the mixer's
    projections."""
    q, k, v = (split_heads(t, m.heads) for t in m.qkv_proj(x).chunk(3, dim=-1))
    i = torch.arange(x.shape[1])
    near = (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] <= m.window)
    scores = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(~near, float("-inf"))
    return m.out_proj(merge_heads(scores.softmax(-1) @ v))


def test_the_sliding_window_is_softmax_attention_over_the_last_window_positions():
    m, x = sliding(), torch.randn(2, 23, D, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], window_plainly(m, x), **EXACT)


MIXERS = {"linear": linear, "sliding": sliding}


@pytest.mark.parametrize("name", MIXERS)
def test_step_by_step_past_the_window_and_chunks_equals_the_full_pass_with_the_declared_state(name):
    m, x = MIXERS[name](), torch.randn(2, 30, D, dtype=torch.float64)  # 30: past the window (5) and a chunk (8)
    with torch.no_grad():
        full, _ = m(x)
        outs, state, start = [], {}, 0
        for size in (1, 3, 7, 19):
            out, state = m(x[:, start : start + size], state, step=True)
            outs.append(out)
            start += size
        torch.testing.assert_close(torch.cat(outs, dim=1), full, **EXACT)
        _, after_20 = m(x[:, :20])  # the training form's state too: a prompt read at once, then decoding
        torch.testing.assert_close(m(x[:, 20:], after_20, step=True)[0], full[:, 20:], **EXACT)
        _, one = m(x[:1], None, step=True)
    assert sum(t.numel() for t in one.values()) == m.state_size(30)
    assert m.state_size(30) == m.state_size(1000), "a state that grows with the text"


@pytest.mark.parametrize("name", MIXERS)
def test_no_position_reads_a_later_one(name):
    m, x = MIXERS[name](), torch.randn(2, 30, D, dtype=torch.float64)
    changed = x.clone()
    changed[:, 17:] = torch.randn(2, 13, D, dtype=torch.float64)
    with torch.no_grad():
        a, b = m(x)[0], m(changed)[0]
    torch.testing.assert_close(a[:, :17], b[:, :17], **EXACT)
    assert not torch.allclose(a[:, 17:], b[:, 17:], atol=1e-3), "the later outputs ignore their inputs"


def test_the_config_builds_the_two_mixers_in_turn_as_one_attention_family():
    cfg = shrink(compose_config("model=based"))
    stack = instantiate(cfg.model.backbone, n_layers=4)
    assert isinstance(stack, MixerEncoder) and stack.precision_family == ATTENTION
    assert [type(m) for m in stack.mixers] == [BasedLinearAttention, SlidingWindowMixer] * 2


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: BasedLinearAttention(32, heads=3), "Based: model.backbone.mixer.heads = 3 must divide model.d_model"),
        (lambda: BasedLinearAttention(32, heads=0), "Based: model.backbone.mixer.heads must be a positive integer"),
        (lambda: BasedLinearAttention(32, feature_dim=0), "Based: model.backbone.mixer.feature_dim must be a posi"),
        (lambda: BasedLinearAttention(32, feature_dim=-4), "Based: model.backbone.mixer.feature_dim must be a posi"),
        (lambda: BasedLinearAttention(32, chunk=0), "Based: model.backbone.mixer.chunk must be a positive"),
        (lambda: SlidingWindowMixer(32, heads=5), "Based sliding window: model.backbone.mixer.heads = 5 must div"),
        (lambda: SlidingWindowMixer(32, window=0), "Based sliding window: model.backbone.mixer.window must be a"),
        (lambda: SlidingWindowMixer(32, window=2.5), "Based sliding window: model.backbone.mixer.window must be a"),
    ],
)
def test_bad_settings_are_refused_at_build_naming_the_setting_and_the_model(build, message):
    with pytest.raises(ValueError, match=message):
        build()
