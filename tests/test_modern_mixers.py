"""The modern baselines' mixers (Mamba-2, GLA, DeltaNet, Gated DeltaNet, RetNet) compute their own recurrences.

``tests/test_backbone_contract.py`` finds their configs and holds each to what it declares (padding, causal, step by
step equal to the full pass, its state size, forced fp32 and bf16, a short training run). Here: each mixer's training
form equals its recurrence written plainly from the mixer's own weights, its output does not depend on the chunk
size, RetNet's three forms agree, ``fla``'s reference functions agree where they import, and bad settings are refused
when the model is built, naming the setting and the model.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from suite.models import chunked
from suite.models.deltanet import DeltaNetMixer
from suite.models.gla import GLAMixer
from suite.models.mamba2 import Mamba2Mixer
from suite.models.mixer_stack import MixerEncoder
from suite.models.retnet import RetentionMixer

TOL = dict(atol=2e-5, rtol=1e-4)


def mamba2_plainly(m: Mamba2Mixer, x: torch.Tensor) -> torch.Tensor:
    """Mamba-2's recurrence as its paper writes it, a head and a position at a time, from the mixer's weights."""
    batch, length, _ = x.shape
    N, P, H = m.d_state, m.head_dim, m.heads
    z, xbc, dt = m.in_proj(x).split([m.inner, m.inner + 2 * N, H], dim=-1)
    xbc = F.silu(F.conv1d(F.pad(xbc.transpose(1, 2), (m.conv.width - 1, 0)), m.conv.conv.weight, m.conv.conv.bias,
                          groups=xbc.shape[-1])).transpose(1, 2)  # fmt: skip
    xs, B, C = xbc.split([m.inner, N, N], dim=-1)
    dt = F.softplus(dt + m.dt_bias)
    A = -torch.exp(m.A_log)
    y = torch.zeros(batch, length, H, P)
    for b in range(batch):
        for h in range(H):
            S = torch.zeros(N, P)
            for t in range(length):
                xt = xs[b, t, h * P : (h + 1) * P]
                S = torch.exp(dt[b, t, h] * A[h]) * S + torch.outer(B[b, t], dt[b, t, h] * xt)
                y[b, t, h] = C[b, t] @ S + m.D[h] * xt
    y = y.reshape(batch, length, m.inner) * F.silu(z)
    return m.out_proj(y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5) * m.norm)


def test_mamba2_is_its_recurrence():
    torch.manual_seed(0)
    m = Mamba2Mixer(16, d_state=8, expand=2, head_dim=8, chunk=8).eval()
    x = torch.randn(2, 21, 16)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], mamba2_plainly(m, x), **TOL)


def delta_plainly(m: DeltaNetMixer, x: torch.Tensor) -> torch.Tensor:
    """The (gated) delta rule a head and a position at a time, from the mixer's weights (its convolutions reused:
    the short convolution's own test is the contract's step-by-step check)."""
    q, k, v = (conv(proj(x))[0] for proj, conv in zip((m.q_proj, m.k_proj, m.v_proj), m.convs))
    H, dk, dv = m.heads, m.key // m.heads, m.value // m.heads
    beta = m.beta_scale * torch.sigmoid(m.b_proj(x))
    decay = torch.exp(-torch.exp(m.A_log) * F.softplus(m.a_proj(x) + m.dt_bias)) if m.gated else torch.ones_like(beta)
    out = torch.zeros(x.shape[0], x.shape[1], m.value)
    for b in range(x.shape[0]):
        for h in range(H):
            S = torch.zeros(dk, dv)
            for t in range(x.shape[1]):
                head = slice(h * dk, (h + 1) * dk)
                qt, kt = F.normalize(q[b, t, head], dim=0), F.normalize(k[b, t, head], dim=0)
                S = decay[b, t, h] * (torch.eye(dk) - beta[b, t, h] * torch.outer(kt, kt)) @ S
                S = S + beta[b, t, h] * torch.outer(kt, v[b, t, h * dv : (h + 1) * dv])
                o = (qt * dk**-0.5) @ S
                out[b, t, h * dv : (h + 1) * dv] = o * torch.rsqrt(o.pow(2).mean() + 1e-5) * m.norm
    if m.gated:
        out = out * F.silu(m.g_proj(x))
    return m.o_proj(out)


@pytest.mark.parametrize(
    "gated, beta_scale",
    [(False, 1.0), (True, 1.0), (False, 2.0)],
    ids=["DeltaNet", "Gated DeltaNet", "DeltaNet [-1, 1]"],
)
def test_deltanet_is_its_recurrence(gated, beta_scale):
    """Also with beta up to 2 (Grazzi et al.'s eigenvalues in (-1, 1]): the WY form's triangular solve is exact for any
    beta, and some of beta here is past 1, where the transition's eigenvalue 1 - beta is negative."""
    torch.manual_seed(1)
    m = DeltaNetMixer(16, heads=2, gated=gated, chunk=8, beta_scale=beta_scale).eval()
    x = torch.randn(2, 19, 16)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], delta_plainly(m, x), **TOL)
        beta = m.beta_scale * torch.sigmoid(m.b_proj(x))
    assert (beta > 1).any() == (beta_scale == 2.0) and (beta < 2).all()


def gla_plainly(m: GLAMixer, x: torch.Tensor) -> torch.Tensor:
    """GLA's recurrence a head and a position at a time, from the mixer's weights."""
    H, dk, dv = m.heads, m.key // m.heads, m.value // m.heads
    q, k, v = m.q_proj(x), m.k_proj(x), m.v_proj(x)
    alpha = torch.sigmoid(m.gk_proj(x)) ** (1 / m.normalizer)
    out = torch.zeros(x.shape[0], x.shape[1], m.value)
    for b in range(x.shape[0]):
        for h in range(H):
            S = torch.zeros(dk, dv)
            for t in range(x.shape[1]):
                kh = slice(h * dk, (h + 1) * dk)
                S = torch.diag(alpha[b, t, kh]) @ S + torch.outer(k[b, t, kh], v[b, t, h * dv : (h + 1) * dv])
                o = (q[b, t, kh] * dk**-0.5) @ S
                out[b, t, h * dv : (h + 1) * dv] = o * torch.rsqrt(o.pow(2).mean() + 1e-5) * m.norm
    return m.o_proj(out * F.silu(m.g_proj(x)))


def test_gla_is_its_recurrence():
    torch.manual_seed(2)
    m = GLAMixer(16, heads=2, chunk=8).eval()
    x = torch.randn(2, 19, 16)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], gla_plainly(m, x), **TOL)


def test_retnet_forms_agree():
    """Parallel, chunkwise and recurrent retention give the same outputs from the same weights."""
    torch.manual_seed(3)
    x = torch.randn(2, 45, 16)
    chunkwise = RetentionMixer(16, heads=2, chunk=8).eval()
    parallel = RetentionMixer(16, heads=2, form="parallel").eval()
    parallel.load_state_dict(chunkwise.state_dict())
    with torch.no_grad():
        want = parallel(x)[0]
        torch.testing.assert_close(chunkwise(x)[0], want, **TOL)
        torch.testing.assert_close(chunkwise(x, None, step=True)[0], want, **TOL)


@pytest.mark.parametrize("mixer", [Mamba2Mixer, GLAMixer, DeltaNetMixer, RetentionMixer])
def test_the_output_does_not_depend_on_the_chunk(mixer):
    torch.manual_seed(4)
    kw = dict(head_dim=8) if mixer is Mamba2Mixer else dict(heads=2)
    small, large = mixer(16, chunk=4, **kw).eval(), mixer(16, chunk=64, **kw).eval()
    large.load_state_dict(small.state_dict())
    x = torch.randn(2, 30, 16)
    with torch.no_grad():
        torch.testing.assert_close(small(x)[0], large(x)[0], **TOL)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Mamba2Mixer(32, head_dim=48), "Mamba-2: head_dim 48 must divide"),
        (lambda: Mamba2Mixer(32, chunk=0), "Mamba-2: chunk"),
        (lambda: Mamba2Mixer(32, d_state=-1), "Mamba-2: d_state"),
        (lambda: GLAMixer(32, heads=3), "GLA: expand_k x d_model = 16 must be a whole multiple of heads = 3"),
        (lambda: GLAMixer(32, heads=0), "GLA: heads"),
        (lambda: DeltaNetMixer(32, expand_v=0.3), "DeltaNet: expand_v"),
        (lambda: DeltaNetMixer(32, gated=True, d_conv=0), "Gated DeltaNet: d_conv"),
        (lambda: DeltaNetMixer(32, beta_scale=2.5), r"DeltaNet: beta_scale = 2.5 must be in \(0, 2\]"),
        (lambda: RetentionMixer(32, form="recurrent"), "RetNet: form"),
        (lambda: MixerEncoder(32, lambda d: GLAMixer(d), causal=False), "GLA reads one way only"),
        (lambda: MixerEncoder(32, lambda d: GLAMixer(d), n_layers=0), "n_layers"),
    ],
)
def test_bad_settings_are_refused_at_build_naming_the_setting_and_the_model(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def fla(module: str):
    """``fla``'s reference module (the ``peers`` extra installs fla-core; its naive functions need no GPU)."""
    return pytest.importorskip(f"fla.ops.{module}.naive", reason="fla-core is in the peers extra")


def test_retention_equals_fla_naive_retention():
    naive = fla("retention")
    torch.manual_seed(5)
    q, k, v = torch.randn(2, 4, 50, 8), torch.randn(2, 4, 50, 8), torch.randn(2, 4, 50, 6)
    decay = torch.log(1 - 2.0 ** (-5 - torch.arange(4.0)))[:, None, None].expand(2, 4, 50, 1)
    o, _ = chunked.chunk_gated(q * 8**-0.5, k, v, decay, chunk=16)
    torch.testing.assert_close(o, naive.naive_retention(q, k, v), **TOL)


def test_delta_rule_equals_fla_delta_rule_recurrence():
    naive = fla("delta_rule")
    torch.manual_seed(6)
    q, k, v = torch.randn(2, 3, 40, 8), F.normalize(torch.randn(2, 3, 40, 8), dim=-1), torch.randn(2, 3, 40, 8)
    beta = torch.sigmoid(torch.randn(2, 3, 40))
    theirs, their_state = naive.delta_rule_recurrence(q, k, v, beta)  # (B, H, L, *); q scaled by d_k^-0.5 inside
    o, state = chunked.chunk_delta(q * 8**-0.5, k, v, beta, chunk=16)
    torch.testing.assert_close(o, theirs, **TOL)
    torch.testing.assert_close(state, their_state, **TOL)
