"""The chunked forms of the gated and delta-rule recurrences (``suite.models.chunked``) equal the recurrences written
plainly here, position by position, from any start state, at any chunk size that divides the length or not; and
``fla``'s reference (naive) functions where they import (the ``peers`` extra)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from suite.models import chunked

TOL = dict(atol=1e-4, rtol=1e-4)  # float32, sums of a few hundred products


def plain_gated(q, k, v, g, h0):
    """S_t = diag(exp g_t) S_(t-1) + k_t^T v_t, o_t = q_t S_t, in float64, one position and one head at a time."""
    q, k, v, g, h0 = (t.double() for t in (q, k, v, g, h0))
    B, H, L, K = q.shape
    out = torch.zeros(B, H, L, v.shape[-1], dtype=torch.float64)
    state = h0.clone()
    for b in range(B):
        for h in range(H):
            S = h0[b, h].clone()
            for t in range(L):
                S = torch.diag(torch.exp(g[b, h, t].expand(K))) @ S + torch.outer(k[b, h, t], v[b, h, t])
                out[b, h, t] = q[b, h, t] @ S
            state[b, h] = S
    return out, state


def plain_delta(q, k, v, beta, g, h0):
    """S_t = exp(g_t) (I - beta_t k_t^T k_t) S_(t-1) + beta_t k_t^T v_t, o_t = q_t S_t, float64, as written."""
    q, k, v, beta, g, h0 = (t.double() for t in (q, k, v, beta, g, h0))
    B, H, L, K = q.shape
    out = torch.zeros(B, H, L, v.shape[-1], dtype=torch.float64)
    state = h0.clone()
    eye = torch.eye(K, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            S = h0[b, h].clone()
            for t in range(L):
                kt = k[b, h, t]
                S = torch.exp(g[b, h, t]) * (eye - beta[b, h, t] * torch.outer(kt, kt)) @ S
                S = S + beta[b, h, t] * torch.outer(kt, v[b, h, t])
                out[b, h, t] = q[b, h, t] @ S
            state[b, h] = S
    return out, state


def inputs(seed: int, L: int = 37, K: int = 8, V: int = 6, per_key: bool = True):
    torch.manual_seed(seed)
    B, H = 2, 3
    q, k = torch.randn(B, H, L, K), torch.randn(B, H, L, K)
    v = torch.randn(B, H, L, V)
    g = F.logsigmoid(torch.randn(B, H, L, K if per_key else 1) + 2)  # decays in (0, 1), some strong
    h0 = torch.randn(B, H, K, V)
    return q, k, v, g, h0


@pytest.mark.parametrize("per_key", [True, False], ids=["a decay a key dimension", "a decay a head"])
@pytest.mark.parametrize("chunk", [1, 8, 16, 64])
def test_chunked_gated_equals_the_recurrence(per_key, chunk):
    q, k, v, g, h0 = inputs(0, per_key=per_key)
    want, want_state = plain_gated(q, k, v, g, h0)
    for start in (None, h0):
        o, state = chunked.chunk_gated(q, k, v, g, start, chunk=chunk)
        ref, ref_state = (want, want_state) if start is not None else plain_gated(q, k, v, g, torch.zeros_like(h0))
        torch.testing.assert_close(o.double(), ref, **TOL)
        torch.testing.assert_close(state.double(), ref_state, **TOL)
    o, state = chunked.recurrent_gated(q, k, v, g, h0)
    torch.testing.assert_close(o.double(), want, **TOL)
    torch.testing.assert_close(state.double(), want_state, **TOL)


@pytest.mark.parametrize("chunk", [8, 64])
def test_heads_sharing_one_q_and_k_take_their_scores_once_and_equal_the_recurrence(chunk):
    """Mamba-2's one group: q and k expanded over the heads (stride 0) take the chunk's q k^T once for all heads; the
    outputs, the state and every input's gradient equal the recurrence's, in float64."""
    _, _, v, g, h0 = inputs(3, per_key=False)
    torch.manual_seed(3)
    c, b = (torch.randn(2, 1, 37, 8, dtype=torch.float64, requires_grad=True) for _ in range(2))
    v, g, h0 = (t.double().requires_grad_() for t in (v, g, h0))
    q, k = c.expand(2, 3, 37, 8), b.expand(2, 3, 37, 8)
    assert q.stride(1) == 0 and k.stride(1) == 0
    o, state = chunked.chunk_gated(q, k, v, g, h0, chunk=chunk)
    want, want_state = plain_gated(q, k, v, g, h0)
    torch.testing.assert_close(o, want)
    torch.testing.assert_close(state, want_state)
    grads = torch.autograd.grad((o.sum() + state.square().sum()), (c, b, v, g, h0))
    wanted = torch.autograd.grad((want.sum() + want_state.square().sum()), (c, b, v, g, h0))
    for got, ref in zip(grads, wanted):
        torch.testing.assert_close(got, ref)


def test_a_strong_decay_overflows_nothing():
    """Decays of exp(-50) a step over a chunk of 64: the factorised form exp(b_t) exp(-b_s) would overflow float32."""
    q, k, v, g, h0 = inputs(1, L=64)
    g = torch.full_like(g, -50.0)
    o, state = chunked.chunk_gated(q, k, v, g, h0, chunk=64)
    assert torch.isfinite(o).all() and torch.isfinite(state).all()
    torch.testing.assert_close(o, (q[..., None, :] @ (k[..., :, None] * v[..., None, :]))[..., 0, :], **TOL)


def test_parallel_gated_equals_the_recurrence():
    q, k, v, g, h0 = inputs(2, per_key=False)
    want, _ = plain_gated(q, k, v, g, torch.zeros_like(h0))
    torch.testing.assert_close(chunked.parallel_gated(q, k, v, g).double(), want, **TOL)


@pytest.mark.parametrize("gated", [False, True], ids=["DeltaNet", "Gated DeltaNet"])
@pytest.mark.parametrize("chunk", [1, 8, 16, 64])
def test_chunked_delta_rule_equals_the_recurrence(gated, chunk):
    q, k, v, g, h0 = inputs(3, per_key=False)
    k = F.normalize(k, dim=-1)
    beta = torch.sigmoid(torch.randn(q.shape[:3]))
    g = g[..., 0] if gated else None
    want, want_state = plain_delta(q, k, v, beta, torch.zeros_like(beta) if g is None else g, h0)
    o, state = chunked.chunk_delta(q, k, v, beta, g, h0, chunk=chunk)
    torch.testing.assert_close(o.double(), want, **TOL)
    torch.testing.assert_close(state.double(), want_state, **TOL)
    o, state = chunked.recurrent_delta(q, k, v, beta, g, h0)
    torch.testing.assert_close(o.double(), want, **TOL)
    torch.testing.assert_close(state.double(), want_state, **TOL)


def test_gradients_flow_through_the_chunked_forms():
    q, k, v, g, h0 = inputs(4, per_key=False)
    parts = [t.requires_grad_() for t in (q, k, v, g)]
    beta = torch.sigmoid(torch.randn(q.shape[:3])).requires_grad_()
    gated = chunked.chunk_gated(*parts, chunk=8)[0]
    (gated.sum() + chunked.chunk_delta(q, k, v, beta, g[..., 0], chunk=8)[0].sum()).backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (*parts, beta))


def fla(module: str):
    """``fla``'s reference module (the ``peers`` extra installs fla-core; its naive functions need no GPU)."""
    return pytest.importorskip(f"fla.ops.{module}.naive", reason="fla-core is in the peers extra")


def test_gla_equals_fla_naive_recurrent_gla():
    naive = fla("gla")
    q, k, v, g, h0 = inputs(5)
    theirs, their_state = naive.naive_recurrent_gla(
        *(t.transpose(1, 2) for t in (q, k, v, g)), initial_state=h0, output_final_state=True
    )  # (B, L, H, *) in and out; q scaled by K^-0.5 inside
    o, state = chunked.chunk_gated(q * q.shape[-1] ** -0.5, k, v, g, h0, chunk=16)
    torch.testing.assert_close(o, theirs.transpose(1, 2).float(), **TOL)
    torch.testing.assert_close(state, their_state.float(), **TOL)


def test_gated_delta_rule_equals_fla_naive():
    naive = fla("gated_delta_rule")
    q, k, v, g, h0 = inputs(6, per_key=False)
    k = F.normalize(k, dim=-1)
    beta = torch.sigmoid(torch.randn(q.shape[:3]))
    theirs, their_state = naive.naive_recurrent_gated_delta_rule(
        *(t.transpose(1, 2) for t in (q, k, v, beta, g[..., 0])), scale=1.0, initial_state=h0, output_final_state=True
    )
    o, state = chunked.chunk_delta(q, k, v, beta, g[..., 0], h0, chunk=16)
    torch.testing.assert_close(o, theirs.transpose(1, 2).float(), **TOL)
    torch.testing.assert_close(state, their_state.float(), **TOL)
