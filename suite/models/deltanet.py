"""DeltaNet (Yang et al. 2024, "Parallelizing Linear Transformers with the Delta Rule over Sequence Length") and Gated
DeltaNet (Yang, Kautz and Hatamizadeh 2025, "Gated Delta Networks"): linear attention whose state is corrected
towards each new value at its key (the delta rule), not only added to; the gated form also decays it.

A mixer, laid out as ``fla``'s ``DeltaNet`` and ``GatedDeltaNet`` with their defaults: q, k, v each through a short
causal convolution and SiLU, q and k of unit length a head, beta_t = c sigmoid(W_beta x_t) a head;

    S_t = alpha_t (I - beta_t k_t^T k_t) S_(t-1) + beta_t k_t^T v_t,   o_t = (q_t / sqrt(d_k)) S_t

with alpha_t = 1 (DeltaNet) or, gated, alpha_t = exp(-exp(A_log) softplus(W_a x_t + dt_bias)) a head (Mamba-2's
decay); then an RMSNorm a head (times SiLU of an output gate when gated), and o_proj. Training runs the chunked WY
form (``suite.models.chunked.chunk_delta``), decoding the recurrence.

The transition I - beta_t k_t^T k_t (|k_t| = 1) has the eigenvalue 1 - beta_t along k_t and 1 elsewhere. ``fla``'s
DeltaNet takes c = 1, so its eigenvalues are in (0, 1]; c = 2 (``beta_scale``) gives Grazzi et al. 2024's extended
range (-1, 1], a reflection at beta_t = 2, which their paper finds needed for parity (``conf/model/deltanet_negative``).
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked import chunk_delta, recurrent_delta
from suite.models.mamba2 import initial_steps
from suite.models.mixer_stack import ShortConv, head_rms_norm, head_widths, merge_heads, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State

CHUNK = 32  # faster than 64 and 128 at every length timed here (suite.tools.chunked_bench)


class DeltaNetMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        heads: H.
        expand_k, expand_v: key and value widths over D (each a whole multiple of H).
        d_conv: the short convolutions' width (1: no mixing over time).
        gated: Gated DeltaNet (a decay a head and an output gate) or DeltaNet.
        beta_scale: c, beta's largest value: 1 (fla's; eigenvalues in (0, 1]) up to 2 (in (-1, 1]).
        chunk: positions the chunked form takes at once (32 was faster than 64 and 128 here, at every length).
    """

    precision_family = SCAN

    def __init__(
        self,
        d_model: int,
        heads: int = 4,
        expand_k: float = 1.0,
        expand_v: float = 1.0,
        d_conv: int = 4,
        gated: bool = False,
        chunk: int = CHUNK,
        beta_scale: float = 1.0,
    ) -> None:
        super().__init__()
        self.name = "Gated DeltaNet" if gated else "DeltaNet"
        if not 0 < beta_scale <= 2:  # past 2 an eigenvalue falls below -1 and the state can grow without bound
            raise ValueError(
                f"{self.name}: beta_scale = {beta_scale} must be in (0, 2] (model.backbone.mixer.beta_scale: 1 keeps "
                "the transition's eigenvalues in (0, 1], 2 in (-1, 1])"
            )
        self.beta_scale = beta_scale
        widths = head_widths(d_model, heads, {"expand_k": expand_k, "expand_v": expand_v}, self.name)
        positive_int(d_conv, "d_conv (model.backbone.mixer)", self.name)
        self.chunk = positive_int(chunk, "chunk (model.backbone.mixer)", self.name)
        self.heads, self.gated, self.key, self.value = heads, gated, widths["expand_k"], widths["expand_v"]
        self.q_proj, self.k_proj = nn.Linear(d_model, self.key, bias=False), nn.Linear(d_model, self.key, bias=False)
        self.v_proj = nn.Linear(d_model, self.value, bias=False)
        self.convs = nn.ModuleList(ShortConv(width, d_conv) for width in (self.key, self.key, self.value))
        self.b_proj = nn.Linear(d_model, heads, bias=False)
        if gated:
            self.a_proj = nn.Linear(d_model, heads, bias=False)
            self.A_log = nn.Parameter(torch.log(torch.empty(heads).uniform_(0, 16)))
            self.dt_bias = nn.Parameter(initial_steps(heads, 1e-3, 1e-1))
            self.g_proj = nn.Linear(d_model, self.value, bias=False)
        self.norm = nn.Parameter(torch.ones(self.value // heads))
        self.o_proj = nn.Linear(self.value, d_model, bias=False)

    def state_size(self, length: int) -> int:
        """(d_k, d_v) a head and each convolution's last d_conv - 1 inputs."""
        width = self.convs[0].width - 1
        return self.key * self.value // self.heads + (2 * self.key + self.value) * width

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'S': (B, H, d_k, d_v), 'conv_q', 'conv_k', 'conv_v'} or None) -> (y, state)."""
        after: State = {}
        parts = []
        for name, proj, conv in zip("qkv", (self.q_proj, self.k_proj, self.v_proj), self.convs):
            y, after[f"conv_{name}"] = conv(proj(x), state[f"conv_{name}"] if state else None)
            parts.append(split_heads(y.float(), self.heads))
        q, k, v = F.normalize(parts[0], dim=-1), F.normalize(parts[1], dim=-1), parts[2]
        beta = (self.beta_scale * torch.sigmoid(self.b_proj(x).float())).transpose(1, 2)  # (B, H, L)
        g = None
        if self.gated:
            step_size = F.softplus(self.a_proj(x).float() + self.dt_bias)
            g = (-torch.exp(self.A_log.float()) * step_size).transpose(1, 2)  # (B, H, L), log decays
        kernel = recurrent_delta if step else partial(chunk_delta, chunk=self.chunk)
        o, after["S"] = kernel(q * q.shape[-1] ** -0.5, k, v, beta, g, state["S"] if state else None)
        o = merge_heads(head_rms_norm(o, self.norm.float()))
        if self.gated:
            o = o * F.silu(self.g_proj(x).float())
        return self.o_proj(o.to(x.dtype)), after
