"""Mamba-2 (Dao and Gu 2024, "Transformers are SSMs"): Mamba's selective state space with one decay a head, which
makes it a masked linear attention inside a chunk (the state-space duality) and a recurrence between chunks.

A mixer, laid out as the reference ``mamba2_simple.py`` lays it out: in_proj to z (E), x (E), B and C (N each, one
group shared by the heads) and dt (a head); x, B, C through a short causal convolution and SiLU; per head h (x in
heads of P), with dt_t = softplus(dt + dt_bias) and A_h = -exp(A_log_h),

    S_t = exp(dt_t A_h) S_(t-1) + B_t^T (dt_t x_t)      (S: (N, P) a head)
    y_t = C_t S_t + D_h x_t

then y * SiLU(z) through an RMSNorm over E, and out_proj. Training runs the chunked form, decoding the recurrence
(``suite.models.chunked``: q = C, k = B, v = dt x, log decay dt A). The stack is ``suite.models.mixer_stack``.
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked import chunk_gated, recurrent_gated
from suite.models.mixer_stack import ShortConv
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State


def softplus_inverse(x: Tensor) -> Tensor:
    return x + torch.log(-torch.expm1(-x))


def initial_steps(size: int, dt_min: float, dt_max: float) -> Tensor:
    """Steps log-uniform in [dt_min, dt_max], as Mamba draws them, as the bias that softplus maps to them."""
    dt = torch.exp(torch.rand(size) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(min=1e-4)
    return softplus_inverse(dt)


class Mamba2Mixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        d_state: N, the state a head has for each of its P channels.
        expand: E / D.
        head_dim: P; E must be a multiple of it.
        d_conv: the causal convolution's width.
        chunk: positions the chunked form takes at once.
        dt_min, dt_max: the range of the initial step.
        a_min, a_max: the range A_h = -exp(A_log_h) is drawn from (negated).
    """

    name = "Mamba-2"
    precision_family = SCAN

    def __init__(
        self,
        d_model: int,
        d_state: int = 64,
        expand: int = 2,
        head_dim: int = 64,
        d_conv: int = 4,
        chunk: int = 64,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        a_min: float = 1.0,
        a_max: float = 16.0,
    ) -> None:
        super().__init__()
        for value, setting in (
            (d_state, "d_state"), (expand, "expand"), (head_dim, "head_dim"), (d_conv, "d_conv"), (chunk, "chunk")
        ):  # fmt: skip
            positive_int(value, f"{setting} (model.backbone.mixer)", self.name)
        inner = expand * d_model
        if inner % head_dim:
            raise ValueError(
                f"Mamba-2: head_dim {head_dim} must divide the inner width expand x d_model = {inner} "
                "(model.backbone.mixer.head_dim)"
            )
        self.inner, self.heads, self.head_dim = inner, inner // head_dim, head_dim
        self.d_state, self.chunk = d_state, chunk
        self.in_proj = nn.Linear(d_model, 2 * inner + 2 * d_state + self.heads, bias=False)
        self.conv = ShortConv(inner + 2 * d_state, d_conv)
        self.dt_bias = nn.Parameter(initial_steps(self.heads, dt_min, dt_max))
        self.A_log = nn.Parameter(torch.log(torch.empty(self.heads).uniform_(a_min, a_max)))
        self.D = nn.Parameter(torch.ones(self.heads))
        self.norm = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def state_size(self, length: int) -> int:
        """(N, P) a head and the convolution's last d_conv - 1 inputs."""
        return self.heads * self.d_state * self.head_dim + self.conv.conv.in_channels * (self.conv.width - 1)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'S': (B, H, N, P), 'conv': (B, E + 2N, d_conv - 1)} or None) -> (y, state)."""
        batch, length, _ = x.shape
        z, xbc, dt = self.in_proj(x).split([self.inner, self.inner + 2 * self.d_state, self.heads], dim=-1)
        xbc, conv = self.conv(xbc, state["conv"] if state else None)
        xs, b, c = xbc.float().split([self.inner, self.d_state, self.d_state], dim=-1)
        dt = F.softplus(dt.float() + self.dt_bias).transpose(1, 2)  # (B, H, L)
        xh = xs.view(batch, length, self.heads, self.head_dim).transpose(1, 2)  # (B, H, L, P)
        shape = (batch, self.heads, length, self.d_state)
        q, k = c[:, None].expand(shape), b[:, None].expand(shape)  # one group: every head reads the same B and C
        g = (dt * -torch.exp(self.A_log.float())[:, None])[..., None]  # (B, H, L, 1)
        kernel = recurrent_gated if step else partial(chunk_gated, chunk=self.chunk)
        y, s = kernel(q, k, xh * dt[..., None], g, state["S"] if state else None)
        y = (y + self.D.float()[:, None, None] * xh).transpose(1, 2).reshape(batch, length, self.inner)
        y = F.rms_norm(y * F.silu(z.float()), (self.inner,), self.norm.float(), 1e-5)
        return self.out_proj(y.to(x.dtype)), {"S": s, "conv": conv}
