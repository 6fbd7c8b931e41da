"""RWKV-7 computes its own recurrence.

The diagonal-plus-low-rank kernel's chunked form equals the recurrence written plainly (float64), through both of its
score paths (products of decayed rows; the (C, C, K) decays past ``SPAN``), carries a state between calls, and equals
``fla``'s ``dplr_recurrence`` (the ``peers`` extra); the mixer equals RWKV-7's time mixing written a head and a
position at a time from its own weights. ``tests/test_backbone_contract.py`` holds ``model=rwkv7`` to its
declarations (step by step equal to the full pass, the state size, forced fp32 and bf16, a short training run).
Its transitions' eigenvalues lie where its docstring says: negative ones reachable, -1 not.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from suite.models import chunked_dplr
from suite.models.chunked_dplr import chunk_dplr, recurrent_dplr
from suite.models.mixer_stack import split_heads
from suite.models.rwkv7 import FASTEST, RWKV7Mixer

TOL = dict(atol=1e-10, rtol=1e-10)  # float64


def inputs(seed: int, strength: float = 0.5, B: int = 2, H: int = 3, L: int = 37, K: int = 8, V: int = 6):
    gen = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, dtype=torch.float64)

    kk = F.normalize(randn(B, H, L, K), dim=-1)
    a = torch.sigmoid(randn(B, H, L, K))
    g = -torch.exp(randn(B, H, L, K)) * strength
    return randn(B, H, L, K), randn(B, H, L, K) * 0.5, randn(B, H, L, V), -kk, kk * a, g, randn(B, H, K, V)


def dplr_plainly(q, k, v, alpha, beta, g, h0):
    """S_t = (diag(exp g_t) + beta_t^T alpha_t) S_(t-1) + k_t^T v_t, o_t = q_t S_t, a head and a position at a time."""
    B, H, L, K = q.shape
    out = torch.zeros(B, H, L, v.shape[-1], dtype=q.dtype)
    state = h0.clone()
    for b in range(B):
        for h in range(H):
            S = h0[b, h]
            for t in range(L):
                transition = torch.diag(torch.exp(g[b, h, t])) + torch.outer(beta[b, h, t], alpha[b, h, t])
                S = transition @ S + torch.outer(k[b, h, t], v[b, h, t])
                out[b, h, t] = q[b, h, t] @ S
            state[b, h] = S
    return out, state


@pytest.mark.parametrize("strength", [0.5, 30.0], ids=["products", "decays past SPAN"])
@pytest.mark.parametrize("chunk", [1, 5, 16, 64])
def test_chunked_and_recurrent_dplr_equal_the_recurrence_written_plainly(strength, chunk):
    parts = inputs(0, strength)
    if strength > 1:  # the second path is taken only where a chunk decays past SPAN
        assert (-parts[5].cumsum(2)[:, :, : min(chunk, 37)]).amax() > chunked_dplr.SPAN or chunk == 1
    want, state = dplr_plainly(*parts)
    for o, s in (chunk_dplr(*parts, chunk=chunk), recurrent_dplr(*parts)):
        torch.testing.assert_close(o, want, **TOL)
        torch.testing.assert_close(s, state, **TOL)


def test_a_strong_decay_in_float32_overflows_nothing_and_a_state_carries_on():
    q, k, v, alpha, beta, g, h0 = (t.float() for t in inputs(1, strength=200.0))
    o, s = chunk_dplr(q, k, v, alpha, beta, g, h0, chunk=16)
    assert torch.isfinite(o).all() and torch.isfinite(s).all()
    parts = inputs(2)
    first = chunk_dplr(*(t[:, :, :20] for t in parts[:6]), parts[6], chunk=8)
    second = chunk_dplr(*(t[:, :, 20:] for t in parts[:6]), first[1], chunk=8)
    torch.testing.assert_close(torch.cat([first[0], second[0]], dim=2), recurrent_dplr(*parts)[0], **TOL)


def test_dplr_equals_fla_naive_recurrence():
    naive = pytest.importorskip("fla.ops.generalized_delta_rule.dplr.naive", reason="fla-core is in the peers extra")
    q, k, v, alpha, beta, g, h0 = (t.float() for t in inputs(3))
    theirs, their_state = naive.dplr_recurrence(q * q.shape[-1] ** 0.5, k, v, alpha, beta, g, h0)  # q scaled inside
    o, s = chunk_dplr(q, k, v, alpha, beta, g, h0, chunk=16)
    torch.testing.assert_close(o, theirs, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(s, their_state, atol=2e-5, rtol=1e-4)


def gates(m: RWKV7Mixer, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """RWKV-7's r, w (the decay), k, v, a (the in-context rate), the gate, kk (the removal key before it is normalised
    a head) and the key, each (B, L, D), as its paper writes them, from the mixer's weights."""
    shifted = F.pad(x, (0, 0, 1, 0))[:, : x.shape[1]]
    mixed = {n: x + (shifted - x) * m.mu[n] for n in m.mu}
    k = m.k(mixed["k"])
    d_w = m.w0 + m.w_map[1](torch.tanh(m.w_map[0](mixed["w"])))
    a = torch.sigmoid(m.a0 + m.a_map(mixed["a"]))
    return {
        "r": m.r(mixed["r"]),
        "w": torch.exp(-torch.exp(-F.softplus(-d_w) - 0.5)),  # in (e^-0.61, 1)
        "v": m.v(mixed["v"]),
        "a": a,
        "gate": m.g_map[1](torch.sigmoid(m.g_map[0](mixed["g"]))),
        "kk": k * m.k_k,
        "key": k * (1 + (a - 1) * m.k_a),
    }


def rwkv7_plainly(m: RWKV7Mixer, x: torch.Tensor) -> torch.Tensor:
    """RWKV-7's time mixing as its paper writes it, a head and a position at a time, from the mixer's weights."""
    B, L, D = x.shape
    H, d = m.heads, D // m.heads
    r, w, v, a, gate, kk, key = (gates(m, x)[n] for n in ("r", "w", "v", "a", "gate", "kk", "key"))
    out = torch.zeros(B, L, D, dtype=x.dtype)
    for b in range(B):
        for h in range(H):
            c = slice(h * d, (h + 1) * d)
            S = torch.zeros(d, d, dtype=x.dtype)  # (value, key), as the paper writes it
            for t in range(L):
                kh = F.normalize(kk[b, t, c], dim=0)
                S = S @ (torch.diag(w[b, t, c]) - torch.outer(kh, a[b, t, c] * kh)) + torch.outer(
                    v[b, t, c], key[b, t, c]
                )
                o = S @ r[b, t, c]
                o = F.layer_norm(o, (d,), eps=64e-5) * m.norm_weight[c] + m.norm_bias[c]
                out[b, t, c] = o + (r[b, t, c] * key[b, t, c] * m.r_k[h]).sum() * v[b, t, c]
    return m.out(out * gate)


def test_rwkv7_is_its_recurrence():
    torch.manual_seed(4)
    m = RWKV7Mixer(16, heads=2, rank=4, chunk=8).double().eval()
    with torch.no_grad():  # RWKV-7 starts several maps at zero: move them, or half of the block is untested
        for p in (m.out.weight, m.r_k, m.w_map[0].weight, m.a_map[0].weight, m.g_map[0].weight, m.a0):
            p.normal_(0, 0.5)
    x = torch.randn(2, 21, 16, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], rwkv7_plainly(m, x), atol=1e-9, rtol=1e-9)


def transitions(m: RWKV7Mixer, x: torch.Tensor) -> torch.Tensor:
    """The mixer's transitions diag(w_t) - k^_t^T (a_t * k^_t) a head, (B, L, H, d, d), from its own gates."""
    g = gates(m, x)
    w, a = (split_heads(g[n], m.heads) for n in ("w", "a"))  # (B, H, L, d)
    kk = F.normalize(split_heads(g["kk"], m.heads), dim=-1)
    return (torch.diag_embed(w) - kk[..., :, None] * (a * kk)[..., None, :]).transpose(1, 2)


def test_rwkv7_transitions_take_negative_eigenvalues_but_never_minus_one():
    """Grazzi et al. 2024: a linear RNN tracks parity only with a negative eigenvalue in its transitions, and their
    construction flips the state with one at -1. RWKV-7's transition is similar to diag(w) - z z^T with
    z = sqrt(a) * k^ (a > 0), so its eigenvalues are real and in [min w - |z|^2, max w], inside (FASTEST - 1, 1) since
    |k^| = 1 and a < 1: negative ones are reachable, -1 is not. The fastest decay and the full rate reach the bound."""
    torch.manual_seed(5)
    x = torch.randn(3, 11, 16, dtype=torch.float64)
    m = RWKV7Mixer(16, heads=2, rank=4).double()
    with torch.no_grad():
        lowest_at_init = torch.linalg.eigvals(transitions(m, x)).real.min()
        for p in m.parameters():  # anywhere training might take them
            p.normal_(0, 3)
        eig = torch.linalg.eigvals(transitions(m, x))
        m.w0.fill_(40.0)  # softplus(-w0) -> 0: every key dimension at the fastest decay, e^(-e^-0.5)
        m.a0.fill_(40.0)  # a -> 1: the whole of the state along k^ removed
        m.w_map[1].weight.zero_()
        m.a_map[1].weight.zero_()
        extreme = torch.linalg.eigvals(transitions(m, x))
    assert lowest_at_init > 0  # RWKV-LM's initialisation starts with none negative
    for e in (eig, extreme):
        assert e.imag.abs().max() < 1e-9
        assert e.real.min() >= FASTEST - 1 - 1e-9 and e.real.max() < 1
    assert eig.real.min() < 0
    torch.testing.assert_close(extreme.real.min(), torch.tensor(FASTEST - 1, dtype=torch.float64), atol=1e-9, rtol=0)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: RWKV7Mixer(32, heads=3), "RWKV-7: heads = 3 must divide d_model = 32"),
        (lambda: RWKV7Mixer(32, heads=0), "RWKV-7: heads"),
        (lambda: RWKV7Mixer(32, rank=0), "RWKV-7: rank"),
        (lambda: RWKV7Mixer(32, chunk=-4), "RWKV-7: chunk"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(build, message):
    with pytest.raises(ValueError, match=message):
        build()
