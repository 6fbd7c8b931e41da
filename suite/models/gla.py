"""Gated linear attention (Yang et al. 2024, "Gated Linear Attention Transformers with Hardware-Efficient Training"):
linear attention whose state decays by a data-dependent gate on every key dimension.

A mixer, laid out as ``fla``'s ``GatedLinearAttention`` with its defaults: q, k (keys of width expand_k x D), v and
an output gate (values of width expand_v x D), in heads; the key-wise gate alpha_t = sigmoid(W2 W1 x_t + b)^(1/16)
through a rank-16 map (log alpha = logsigmoid(.) / ``gate_normalizer``);

    S_t = diag(alpha_t) S_(t-1) + k_t^T v_t,   o_t = (q_t / sqrt(d_k)) S_t       (S: (d_k, d_v) a head)

then an RMSNorm a head, times SiLU of the output gate, and o_proj. Training runs the chunked form (the decays differ
by key dimension: ``suite.models.chunked.chunk_gated``), decoding the recurrence.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked import chunk_gated, recurrent_gated
from suite.models.mixer_stack import head_rms_norm, head_widths, merge_heads, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State

CHUNK = 8  # the fastest of 4-64 in suite.tools.chunked_bench's kernel timing here: a chunk's scores cost C^2 K


class GLAMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        heads: H.
        expand_k, expand_v: key and value widths over D (each a whole multiple of H).
        gate_rank: the rank of the gate's map.
        gate_normalizer: log alpha = logsigmoid(.) / this (16: decays near 1, a long memory at the start).
        chunk: positions the chunked form takes at once (small: a chunk's scores cost C^2 K with a decay a key
            dimension; 8 was the fastest of 4-64 in ``suite.tools.chunked_bench``'s kernel timing here).
    """

    name = "GLA"
    precision_family = SCAN

    def __init__(
        self,
        d_model: int,
        heads: int = 4,
        expand_k: float = 0.5,
        expand_v: float = 1.0,
        gate_rank: int = 16,
        gate_normalizer: float = 16.0,
        chunk: int = CHUNK,
    ) -> None:
        super().__init__()
        widths = head_widths(d_model, heads, {"expand_k": expand_k, "expand_v": expand_v}, self.name)
        positive_int(gate_rank, "gate_rank (model.backbone.mixer)", self.name)
        self.chunk = positive_int(chunk, "chunk (model.backbone.mixer)", self.name)
        if gate_normalizer <= 0:
            raise ValueError(f"GLA: gate_normalizer must be positive, got {gate_normalizer}")
        self.heads, self.normalizer = heads, gate_normalizer
        key, value = widths["expand_k"], widths["expand_v"]
        self.key, self.value = key, value
        self.q_proj, self.k_proj = nn.Linear(d_model, key, bias=False), nn.Linear(d_model, key, bias=False)
        self.v_proj, self.g_proj = nn.Linear(d_model, value, bias=False), nn.Linear(d_model, value, bias=False)
        self.gk_proj = nn.Sequential(nn.Linear(d_model, gate_rank, bias=False), nn.Linear(gate_rank, key))
        self.norm = nn.Parameter(torch.ones(value // heads))
        self.o_proj = nn.Linear(value, d_model, bias=False)

    def state_size(self, length: int) -> int:
        """(d_k, d_v) a head."""
        return self.key * self.value // self.heads

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'S': (B, H, d_k, d_v)} or None) -> (y, state)."""
        q, k, v = (split_heads(p(x), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        g = split_heads(F.logsigmoid(self.gk_proj(x).float()) / self.normalizer, self.heads)
        kernel = recurrent_gated if step else partial(chunk_gated, chunk=self.chunk)
        o, s = kernel(q * q.shape[-1] ** -0.5, k, v, g, state["S"] if state else None)
        o = merge_heads(head_rms_norm(o, self.norm.float())) * F.silu(self.g_proj(x).float())
        return self.o_proj(o.to(x.dtype)), {"S": s}
