"""xLSTM's two memories compute their own recurrences.

The mLSTM's chunked and recurrent forms equal its recurrence written plainly (without the stabiliser, in float64,
where nothing overflows), do not depend on the chunk, carry a state between calls, overflow nothing under large gates,
and equal ``xlstm``'s own stabilised parallel form; the sLSTM mixer equals ``xlstm``'s vanilla sLSTM recurrence given
the same weights (the ``peers`` extra installs xlstm). ``tests/test_backbone_contract.py`` holds ``model=xlstm`` to
its declarations (step by step equal to the full pass, the state size, forced fp32 and bf16, a short training run).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from suite.models.chunked_mlstm import EPS, chunk_mlstm, recurrent_mlstm
from suite.models.xlstm import MLSTMMixer, SLSTMMixer

TOL = dict(atol=1e-9, rtol=1e-9)  # float64 throughout


def gates(seed: int, B: int = 2, H: int = 3, L: int = 37, K: int = 8, V: int = 5, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, L, K, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(B, H, L, V, generator=g, dtype=torch.float64)
    i = torch.randn(B, H, L, generator=g, dtype=torch.float64) * scale
    f = torch.randn(B, H, L, generator=g, dtype=torch.float64) * 2 + 2
    return q, k / math.sqrt(K), v, i, F.logsigmoid(f)


def mlstm_plainly(q, k, v, i, log_f):
    """C_t = f C + exp(i) k^T v, n_t = f n + exp(i) k, h = q C / max(|q n|, 1): a position at a time, unstabilised."""
    B, H, L, K = q.shape
    C, n = torch.zeros(B, H, K, v.shape[-1], dtype=q.dtype), torch.zeros(B, H, K, dtype=q.dtype)
    out, m = [], torch.full((B, H), float("-inf"), dtype=q.dtype)
    for t in range(L):
        f, e = torch.exp(log_f[:, :, t]), torch.exp(i[:, :, t])
        C = f[..., None, None] * C + e[..., None, None] * k[:, :, t, :, None] * v[:, :, t, None, :]
        n = f[..., None] * n + e[..., None] * k[:, :, t]
        m = torch.maximum(log_f[:, :, t] + m, i[:, :, t])  # only for the 1e-6 the stabilised forms add
        num = torch.einsum("bhk,bhkv->bhv", q[:, :, t], C)
        den = torch.einsum("bhk,bhk->bh", q[:, :, t], n).abs().clamp(min=1.0) + EPS * torch.exp(m)
        out.append(num / den[..., None])
    return torch.stack(out, dim=2), (C, n)


@pytest.mark.parametrize("chunk", [1, 5, 8, 64])
def test_chunked_and_recurrent_mlstm_equal_the_recurrence_written_plainly(chunk):
    q, k, v, i, log_f = gates(0)
    want, (C, n) = mlstm_plainly(q, k, v, i, log_f)
    for h, (Cs, ns, m) in (chunk_mlstm(q, k, v, i, log_f, chunk=chunk), recurrent_mlstm(q, k, v, i, log_f)):
        torch.testing.assert_close(h, want, **TOL)
        # the state is kept divided by exp(m)
        torch.testing.assert_close(Cs * torch.exp(m)[..., None, None], C, **TOL)
        torch.testing.assert_close(ns * torch.exp(m)[..., None], n, **TOL)


def test_mlstm_goes_on_from_a_state_and_overflows_nothing_under_large_gates():
    q, k, v, i, log_f = gates(1, scale=60.0)  # exp(60 and more) overflows float32; the stabilised forms never take it
    whole = chunk_mlstm(*(t.float() for t in (q, k, v, i, log_f)), chunk=8)[0]
    assert torch.isfinite(whole).all()
    first = chunk_mlstm(*(t[:, :, :20] for t in (q, k, v, i, log_f)), chunk=8)
    second = chunk_mlstm(*(t[:, :, 20:] for t in (q, k, v, i, log_f)), first[1], chunk=8)
    third = recurrent_mlstm(*(t[:, :, 20:] for t in (q, k, v, i, log_f)), first[1])
    want = recurrent_mlstm(q, k, v, i, log_f)[0]
    torch.testing.assert_close(torch.cat([first[0], second[0]], dim=2), want, **TOL)
    torch.testing.assert_close(third[0], want[:, :, 20:], **TOL)
    torch.testing.assert_close(whole, want.float(), atol=1e-4, rtol=1e-4)


def xlstm_peer(module: str):
    return pytest.importorskip(f"xlstm.{module}", reason="xlstm is in the peers extra")


def test_mlstm_equals_xlstm_parallel_stabilized_form():
    backends = xlstm_peer("blocks.mlstm.backends")
    q, k, v, i, log_f = gates(2, V=8)
    f = torch.log(torch.expm1(-log_f)).neg()  # the forget gate's pre-activation: logsigmoid(f) = log_f
    theirs = backends.parallel_stabilized_simple(q, k * math.sqrt(8), v, i[..., None], f[..., None])
    torch.testing.assert_close(chunk_mlstm(q, k, v, i, log_f, chunk=8)[0], theirs, **TOL)


def test_slstm_equals_xlstm_vanilla_recurrence_given_the_same_weights():
    vanilla = xlstm_peer("blocks.slstm.src.vanilla")
    torch.manual_seed(3)
    m = SLSTMMixer(16, heads=2).double().eval()
    with torch.no_grad():
        m.recurrent.normal_(0, 0.3)  # zeros at init would test nothing of the heads' mixing
        m.bias.normal_(0, 1)
    x = torch.randn(3, 13, 16, dtype=torch.float64)  # a batch other than the heads' count: a mix-up of the two fails
    xc, _ = m.conv(x)
    wx = torch.stack([p(s) for p, s in zip(m.inputs, (xc, xc, x, x))], dim=2)  # (B, L, 4, D), gate-major like theirs
    d = 16 // 2
    # theirs: R (heads, 4 d, d) with row g d + out; ours (heads, d_in, 4 d) with column g d + out
    states, _, _ = vanilla.slstm_forward(
        wx.flatten(2).transpose(0, 1),
        torch.zeros(4, 3, 16, dtype=torch.float64),
        m.recurrent.transpose(1, 2).detach(),
        m.bias.flatten().detach(),
        vanilla.slstm_pointwise_function_registry["slstm"],
    )
    h = states[0, 1:].transpose(0, 1)  # (B, L, D)
    want = F.layer_norm(h.unflatten(-1, (2, d)), (d,), eps=1e-5).flatten(-2) * m.norm
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], want, **TOL)


def test_the_mlstm_mixer_does_not_depend_on_the_chunk():
    torch.manual_seed(4)
    small, large = MLSTMMixer(16, heads=2, chunk=4).eval(), MLSTMMixer(16, heads=2, chunk=64).eval()
    large.load_state_dict(small.state_dict())
    x = torch.randn(2, 30, 16)
    with torch.no_grad():
        torch.testing.assert_close(small(x)[0], large(x)[0], atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: MLSTMMixer(32, heads=3), "mLSTM: expand x d_model = 64 must be a whole multiple of heads = 3"),
        (lambda: MLSTMMixer(32, qkv_blocksize=5), "mLSTM: qkv_blocksize 5 must divide the inner width 64"),
        (lambda: MLSTMMixer(32, chunk=0), "mLSTM: chunk"),
        (lambda: MLSTMMixer(32, d_conv=0), "mLSTM: d_conv"),
        (lambda: SLSTMMixer(32, heads=5), "sLSTM: heads = 5 must divide d_model = 32"),
        (lambda: SLSTMMixer(32, d_conv=-1), "sLSTM: d_conv"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(build, message):
    with pytest.raises(ValueError, match=message):
        build()
