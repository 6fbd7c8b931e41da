"""The mLSTM's recurrence (Beck et al. 2024, "xLSTM: Extended Long Short-Term Memory") in a chunked form for
training and a recurrent form for decoding.

A matrix memory with an exponential input gate and a sigmoid forget gate, a head at a time, with q, k (K,) (k
already scaled by 1 / sqrt(K)), v (V,), the input gate's pre-activation i_t and the forget gate's log f_t <= 0:

    C_t = f_t C_(t-1) + exp(i_t) k_t^T v_t,   n_t = f_t n_(t-1) + exp(i_t) k_t,
    h_t = q_t C_t / max(|q_t . n_t|, 1)

exp(i_t) overflows, so the state is kept divided by exp(m_t), m_t = max(log f_t + m_(t-1), i_t) (m_0 = -inf: no
memory before the start), and the floor 1 becomes exp(-m_t), as in ``xlstm``'s stabilised forms; the 1e-6 added to
the denominator is theirs too. The normaliser n rides along as one more value column (v with a 1 appended), so one
product gives both.

The chunked form: inside every chunk at once, each position's masked (C, C) product with the log weights
``b_t - b_s + i_s`` (b: the chunk's cumulative log f), stabilised by their row maximum a_t; between chunks one step a
chunk carries (C, n, m) on. A position's own stabiliser is then max(b_t + m_entering, a_t), and both parts are
rescaled to it: every exponent taken is <= 0.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.models.chunked import _chunks, _float, in_float32, positions

EPS = 1e-6  # xlstm's, added to the normaliser
MLSTMState = tuple[Tensor, Tensor, Tensor]  # C (B, H, K, V), n (B, H, K), m (B, H)


def _start(state: MLSTMState | None, like: Tensor, K: int, V: int) -> tuple[Tensor, Tensor]:
    """(C | n) as one (B, H, K, V + 1) tensor and m (B, H): zeros and -inf at the start."""
    if state is None:
        return like.new_zeros(*like.shape[:2], K, V + 1), like.new_full(like.shape[:2], float("-inf"))
    C, n, m = (s.to(like.dtype) for s in state)
    return torch.cat([C, n[..., None]], dim=-1), m


def _read(num: Tensor, m: Tensor) -> Tensor:
    """num (..., V + 1) (q C | q n, divided by exp(m)), m (...) -> h (..., V)."""
    return num[..., :-1] / (torch.maximum(num[..., -1:].abs(), torch.exp(-m)[..., None]) + EPS)


@in_float32
def chunk_mlstm(
    q: Tensor, k: Tensor, v: Tensor, i: Tensor, log_f: Tensor, state: MLSTMState | None = None, chunk: int = 64
) -> tuple[Tensor, MLSTMState]:
    """q, k (B, H, L, K), v (B, H, L, V), i and log_f (B, H, L), the state before or None -> (h (B, H, L, V), the
    state after the last position), float32."""
    q, k, v, i, log_f = _float(q, k, v, i, log_f)
    batch, heads, length, K = q.shape
    V = v.shape[-1]
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    # a padded position adds nothing: its input gate is exp(-inf), its forget gate 1
    size, n, (q, k, v1, log_f) = _chunks(chunk, length, q, k, v1, log_f[..., None])
    i = F.pad(i, (0, n * size - length), value=float("-inf")).view(batch, heads, n, size)
    b = log_f[..., 0].cumsum(dim=-1)  # (B, H, n, C)
    mask = torch.ones(size, size, dtype=torch.bool, device=q.device).tril()
    log_w = (b[..., :, None] - b[..., None, :] + i[..., None, :]).masked_fill(~mask, float("-inf"))  # (.., C, C)
    a = log_w.amax(dim=-1)  # (B, H, n, C): finite, a chunk's first position is always real
    inside = ((q @ k.transpose(-1, -2)) * torch.exp(log_w - a[..., None])) @ v1  # (B, H, n, C, V + 1), over exp(a)
    last, a_last = b[..., -1], a[..., -1]  # (B, H, n)
    added = (k * torch.exp(last[..., None] - b + i - a_last[..., None])[..., None]).transpose(-1, -2) @ v1
    S, m = _start(state, q, K, V)
    starts, ms = [], []
    for chunk_last, chunk_a, chunk_added in zip(last.unbind(2), a_last.unbind(2), added.unbind(2)):
        starts.append(S)
        ms.append(m)
        m_new = torch.maximum(chunk_last + m, chunk_a)
        S = torch.exp(chunk_last + m - m_new)[..., None, None] * S + torch.exp(chunk_a - m_new)[..., None, None] * (
            chunk_added
        )
        m = m_new
    m_in = torch.stack(ms, dim=2)[..., None]  # (B, H, n, 1): the stabiliser entering each chunk
    m_t = torch.maximum(b + m_in, a)  # (B, H, n, C)
    num = torch.exp(a - m_t)[..., None] * inside + torch.exp(b + m_in - m_t)[..., None] * (q @ torch.stack(starts, 2))
    h = _read(num, m_t).reshape(batch, heads, n * size, V)[:, :, :length]
    return h, (S[..., :-1], S[..., -1], m)


@in_float32
def recurrent_mlstm(
    q: Tensor, k: Tensor, v: Tensor, i: Tensor, log_f: Tensor, state: MLSTMState | None = None
) -> tuple[Tensor, MLSTMState]:
    """The mLSTM one position at a time (decoding): the inputs and outputs of ``chunk_mlstm``."""
    q, k, v, i, log_f = _float(q, k, v, i, log_f)
    S, m = _start(state, q, q.shape[-1], v.shape[-1])
    v1 = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)
    out = []
    for qt, kt, vt, it, ft in positions(q, k, v1, i, log_f):
        m_new = torch.maximum(ft + m, it)
        kept, taken = torch.exp(ft + m - m_new), torch.exp(it - m_new)
        S = kept[..., None, None] * S + taken[..., None, None] * (kt[..., :, None] * vt[..., None, :])
        m = m_new
        out.append(_read((qt[..., None, :] @ S)[..., 0, :], m))
    return torch.stack(out, dim=2), (S[..., :-1], S[..., -1], m)
