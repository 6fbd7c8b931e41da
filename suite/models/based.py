"""Based (Arora et al. 2024, "Simple linear attention language models balance the recall-throughput tradeoff";
github.com/HazyResearch/based, zoology's ``mixers/based.py``): a hybrid of two mixers, taken in turn by
``suite.models.mixer_stack.MixerEncoder`` (its ``mixer`` a list of partials, conf/model/based.yaml).

* ``BasedLinearAttention``: linear attention with the 2nd-order Taylor feature map of exp. q, k are projected to
  f = ``feature_dim`` a head (small: the feature is 1 + f + f^2 wide), v to D / H, and with
  phi(x) = [1, x, vec(x x^T) / sqrt(2)] taken of q f^-1/4 and k f^-1/4, so that phi(q).phi(k) = 1 + s + s^2 / 2 with
  s = q.k / sqrt(f),

      y_i = sum_(j <= i) phi(q_i).phi(k_j) v_j  /  sum_(j <= i) phi(q_i).phi(k_j)

  computed in chunks (``taylor_causal_sums``: inside a chunk from s itself, between chunks through the features;
  a sequence short enough in one chunk, where that costs less) and decoded from its state
  [S, z] = sum phi(k) [v, 1]^T, (1 + f + f^2, D / H + 1) a head, whatever the length.
* ``SlidingWindowMixer``: softmax attention over the last ``window`` positions, the suite's ``LocalAttention`` core
  in causal mode (blocks of ``window``); decoding keeps the last ``window`` keys and values.

Not here: the gated short-convolution (BaseConv) layers that make up most of the published model's layers (this
stack is the two attentions alone); rotary positions on the sliding window (the suite has no rotary helper, and
the linear attention and causal masks are the only order cues: the config uses NoPositions); key/value head
sharing; the fused CUDA kernels (a CPU bench). The Taylor kernel is >= 1/2, so the normaliser of position i is
>= (i + 1) / 2 and needs no epsilon (``divided``'s zero guard never fires).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.attention.linear import divided, with_ones
from suite.attention.local import LocalAttention
from suite.models.chunked import in_float32
from suite.models.mixer_stack import merge_heads, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import ATTENTION
from suite.types import State


def head_dim(d_model: int, heads: int, owner: str) -> int:
    """D / H, refused unless ``heads`` is a positive divisor of D."""
    positive_int(heads, "model.backbone.mixer.heads", owner)
    if d_model % heads:
        raise ValueError(f"{owner}: model.backbone.mixer.heads = {heads} must divide model.d_model = {d_model}")
    return d_model // heads


def taylor_feature(x: Tensor) -> Tensor:
    """phi(x) = [1, x, vec(x x^T) / sqrt(2)]: x (..., f) -> (..., 1 + f + f^2), phi(a).phi(b) = 1 + a.b + (a.b)^2/2."""
    square = ((x * 0.5**0.5)[..., :, None] * x[..., None, :]).flatten(-2)  # scaled before: f, not f^2, multiplies
    return torch.cat([torch.ones_like(x[..., :1]), x, square], dim=-1)


def taylor_causal_sums(q: Tensor, k: Tensor, v1: Tensor, chunk: int) -> tuple[Tensor, Tensor]:
    """q, k (B, H, L, f), scaled so that s = q.k, values with ones v1 (B, H, L, V + 1) -> (the causal sums
    sum_(j <= i) (1 + s_ij + s_ij^2 / 2) [v_j, 1] (B, H, L, V + 1), the state after the last position, sum phi(k)
    [v, 1]^T (B, H, F, V + 1)), ``chunk`` positions at a time.

    Inside a chunk the kernel is taken from s itself, a (c, c) product over f numbers; only the sums carried from
    chunk to chunk go through the (1 + f + f^2)-wide features (``suite.attention.linear.causal_sums`` takes the
    features for both), and with one chunk only the state does."""
    length = q.size(2)
    c = min(chunk, length)
    extra = -length % c  # padded keys sit after every real query: the mask hides them, and their v1 rows are zero
    q, k, v1 = (F.pad(x, (0, 0, 0, extra)).unflatten(2, (-1, c)) for x in (q, k, v1))  # (B, H, n, c, .)
    s = q @ k.transpose(-2, -1)  # (B, H, n, c, c)
    inside = (1 + s * (1 + 0.5 * s)).tril() @ v1
    kv = taylor_feature(k).transpose(-2, -1) @ v1  # (B, H, n, F, V + 1): each chunk's sum of phi(k) [v, 1]^T
    if q.size(2) > 1:
        before = F.pad(kv.cumsum(2)[:, :, :-1], (0, 0, 0, 0, 1, 0))  # the sums over earlier chunks
        inside = inside + taylor_feature(q) @ before
    return inside.flatten(2, 3)[:, :, :length], kv.sum(2)


def one_chunk_up_to(chunk: int, feature_dim: int, value: int) -> int:
    """The longest sequence that costs less in one chunk: a position costs about L (f + V + 1) multiply-adds in one
    chunk, c (f + V + 1) + 2 F (V + 1) in chunks of c (F = 1 + f + f^2, the sums carried between chunks)."""
    width = value + 1
    return chunk + 2 * (1 + feature_dim + feature_dim**2) * width // (feature_dim + width)


@in_float32  # the sums run over every position: bf16 would round them away
def taylor_attention(q: Tensor, k: Tensor, v: Tensor, before: Tensor | None, chunk: int) -> tuple[Tensor, Tensor]:
    """q, k (B, H, t, f), v (B, H, t, V) after the state ``before`` (B, H, F, V + 1) or None -> (y (B, H, t, V),
    the state after them): Based's normalised causal linear attention, F = 1 + f + f^2. A sequence up to
    ``one_chunk_up_to`` long is taken in one chunk, a longer one in chunks of ``chunk`` (the same sums)."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    scale = q.shape[-1] ** -0.25  # on both sides: phi(q).phi(k) then holds s = q.k / sqrt(f)
    q, k = q.to(dtype) * scale, k.to(dtype) * scale
    v1 = with_ones(v.to(dtype))  # numerator and normaliser in one product
    length = q.shape[2]
    whole = length <= one_chunk_up_to(chunk, q.shape[-1], v.shape[-1])
    sums, state = taylor_causal_sums(q, k, v1, length if whole else chunk)  # state: forward only in training
    if before is not None:
        sums, state = sums + taylor_feature(q) @ before.to(dtype), state + before.to(dtype)
    return divided(sums), state


class BasedLinearAttention(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract): Taylor-kernel linear attention.

    Args:
        d_model: D.
        heads: H (D / H the value width a head).
        feature_dim: f, the query/key width a head (the feature and the state grow as f^2).
        chunk: positions the causal sums take at once beyond ``one_chunk_up_to`` (same result; memory
            O(L (c + F) + L / c F V)); up to it one chunk, (B, H, L, L) scores.
    """

    name = "Based"
    precision_family = ATTENTION

    def __init__(self, d_model: int, heads: int = 4, feature_dim: int = 16, chunk: int = 32) -> None:
        super().__init__()
        self.value = head_dim(d_model, heads, self.name)
        self.feature_dim = positive_int(feature_dim, "model.backbone.mixer.feature_dim", self.name)
        self.chunk = positive_int(chunk, "model.backbone.mixer.chunk", self.name)
        self.heads = heads
        self.q_proj = nn.Linear(d_model, heads * feature_dim, bias=False)
        self.k_proj = nn.Linear(d_model, heads * feature_dim, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def state_size(self, length: int) -> int:
        """[S, z]: (1 + f + f^2, D / H + 1) a head, at any length."""
        return self.heads * (1 + self.feature_dim + self.feature_dim**2) * (self.value + 1)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'s': (B, H, F, D / H + 1)} or None) -> (y, state). The training form and
        the decoding form are one computation here: chunked causal sums, plus the carried state when there is one."""
        q, k, v = (split_heads(p(x), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        y, s = taylor_attention(q, k, v, state["s"] if step and state else None, self.chunk)
        return self.out_proj(merge_heads(y).to(x.dtype)), {"s": s}


class SlidingWindowMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract): causal softmax attention, query i reading keys
    i - window .. i, through ``LocalAttention``.

    Args:
        d_model: D.
        heads: H.
        window: past positions a query reads besides its own (the paper's best trade-off: 64 - 128).
    """

    name = "Based sliding window"
    precision_family = ATTENTION

    def __init__(self, d_model: int, heads: int = 4, window: int = 64) -> None:
        super().__init__()
        dim = head_dim(d_model, heads, self.name)
        positive_int(window, "model.backbone.mixer.window", self.name)
        self.heads, self.window = heads, window
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)
        # no max_len: a window past a short input is clipped to it, not refused as full attention
        self.core = LocalAttention(window=window, n_heads=heads, head_dim=dim)

    def state_size(self, length: int) -> int:
        """The last min(window, length) keys and values (the core's decoding state)."""
        return self.core.state_size(length)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'k', 'v': (B, H, <= window, D / H)} or None) -> (y, state)."""
        q, k, v = (split_heads(t, self.heads) for t in self.qkv_proj(x).chunk(3, dim=-1))
        if step:
            y, kept = self.core.decode_step(q, k, v, state or {})
        else:
            y, kept = self.core(q, k, v, causal=True), {"k": k[:, :, -self.window :], "v": v[:, :, -self.window :]}
        return self.out_proj(merge_heads(y)), kept
