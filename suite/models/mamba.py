"""Mamba (Gu and Dao 2023, "Linear-Time Sequence Modeling with Selective State Spaces"): a state space model whose
step, input and output maps depend on the input (the selection), with a constant-size state for generation.

A block: in_proj to x and z (width E = expand x D); x through a short causal depthwise convolution and SiLU; the
selective SSM h_t = exp(dt_t A) h_(t-1) + dt_t B_t x_t, y_t = C_t h_t + D x_t (A diagonal, (E, N)); y * SiLU(z);
out_proj.
The parameters are named and shaped as ``mambapy``'s ``MambaBlock`` names them (which follows the reference
``mamba_simple.py``), so the tests load its weights.

The scan on a CPU is our loop over positions (``kernel=loop``, the default: ``suite.models.selective_loop``), which
never builds the (B, L, E, N) decays and inputs the parallel scans pass over, and was measured faster than both
(``python -m suite.tools.scan_bench``): ``mambapy``'s ``pscan`` (``kernel=pscan``: a Blelloch scan in linear space,
in place, with its own backward) and ours in log space (``kernel=log``: ``suite.models.scan.log_scan``, the chunked
log-space scan of minGRU, run twice because its log needs b > 0 and dt B x has either sign), whose logcumsumexp's
exp and log over (B, L, E N) and its backward cost what the pscan's multiply-adds do not. ``kernel=mamba_ssm`` takes
``mamba-ssm``'s fused CUDA kernel (a CUDA device and the package are required, and checked when the model is built).

``negative_eigenvalues`` takes the decay 2 exp(dt A) - 1 in (-1, 1) for exp(dt A) in (0, 1): Grazzi et al. 2024's
Mamba [-1, 1] (their code's ``positive_and_negative``), for which they find parity solved (conf/model/mamba_negative).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.declaration import CAUSAL, PADDING, STEP
from suite.models.scan import log_scan, positive_int
from suite.models.selective_loop import selective_loop
from suite.nn import Dropout
from suite.runtime.precision_policy import SCAN
from suite.types import State

KERNELS = ("loop", "pscan", "log", "mamba_ssm")
NEGATIVE_KERNELS = (
    "Mamba: negative_eigenvalues (model.backbone.negative_eigenvalues) needs kernel=loop or pscan: the log-space scan "
    "takes decays in (0, 1) alone, and mamba-ssm's kernel has no such form"
)


def selective_scan(
    x: Tensor,
    delta: Tensor,
    A: Tensor,
    B: Tensor,
    C: Tensor,
    D: Tensor,
    h0: Tensor | None = None,
    chunk: int = 256,
    kernel: str = "loop",
    negative: bool = False,
) -> tuple[Tensor, Tensor]:
    """x, delta (B, L, E), A (E, N), B, C (B, L, N), D (E,), h0 (B, E, N) or None -> (y (B, L, E), h_L (B, E, N)).

    h_t = exp(delta_t A) h_(t-1) + delta_t B_t x_t and y_t = C_t . h_t + D x_t, in float32 (float64 stays): by our
    loop over positions (``kernel='loop'``: ``suite.models.selective_loop``), ``mambapy``'s pscan (``'pscan'``), or
    our log-space scan on the positive and negative parts of delta B x (``'log'``). ``negative``: the decay is
    2 exp(delta_t A) - 1, in (-1, 1) (Grazzi et al. 2024), which the log-space scan cannot take.
    """
    batch, length, width = x.shape
    states = A.shape[1]
    dtype = torch.promote_types(x.dtype, torch.float32)
    x, delta, A, B, C = x.to(dtype), delta.to(dtype), A.to(dtype), B.to(dtype), C.to(dtype)
    if kernel == "loop":
        y, h = selective_loop(x, delta, A, B, C, None if h0 is None else h0.to(dtype), negative=negative)
        return y + D * x, h
    if kernel == "pscan":
        from mambapy.pscan import pscan

        a = torch.exp(delta[..., None] * A)  # (B, L, E, N)
        a = 2 * a - 1 if negative else a
        b = (delta * x)[..., None] * B[:, :, None, :]
        if h0 is not None:  # the carried state enters as the first step's share: h_1 = a_1 h0 + b_1
            b = torch.cat([b[:, :1] + a[:, :1] * h0.float()[:, None], b[:, 1:]], dim=1)
        h = pscan(a, b)
        return torch.einsum("blen,bln->ble", h, C) + D * x, h[:, -1]
    if negative:
        raise ValueError(NEGATIVE_KERNELS)
    log_a = (delta[..., None] * A).reshape(batch, length, width * states)  # (B, L, E N), < 0
    b = ((delta * x)[..., None] * B[:, :, None, :]).reshape(batch, length, width * states)
    tiny = torch.finfo(torch.float32).tiny  # log(0) would be -inf, and its gradient NaN; tiny adds nothing visible
    start = torch.zeros(batch, width * states, device=x.device) if h0 is None else h0.float().reshape(batch, -1)
    parts = [
        log_scan(log_a, torch.log((sign * b).clamp(min=tiny)), (sign * start).clamp(min=0), chunk) for sign in (1, -1)
    ]
    h = (parts[0] - parts[1]).view(batch, length, width, states)
    y = torch.einsum("blen,bln->ble", h, C) + D * x
    return y, h[:, -1]


def mamba_ssm_scan(x: Tensor, delta: Tensor, A: Tensor, B: Tensor, C: Tensor, D: Tensor) -> Tensor:
    """``mamba-ssm``'s fused selective scan (CUDA): the same inputs as ``selective_scan``, the state not returned."""
    from mamba_ssm.ops.selective_scan_interface import selective_scan_fn

    y = selective_scan_fn(
        x.transpose(1, 2).contiguous(), delta.transpose(1, 2).contiguous(), A.contiguous(),
        B.transpose(1, 2).contiguous(), C.transpose(1, 2).contiguous(), D.float(),
    )  # fmt: skip
    return y.transpose(1, 2)


def require_kernel(kernel: str) -> None:
    """Refuse, when the model is built, a kernel this machine cannot run."""
    if kernel not in KERNELS:
        raise ValueError(f"Mamba: kernel (model.backbone.kernel) must be one of {list(KERNELS)}, got {kernel!r}")
    if kernel == "mamba_ssm":
        if not torch.cuda.is_available():
            raise ValueError(
                "Mamba: kernel=mamba_ssm runs on CUDA only, and no CUDA device is here; use model.backbone.kernel=pscan"
            )
        try:
            import mamba_ssm  # noqa: F401
        except ImportError as err:
            raise ValueError(f"Mamba: kernel=mamba_ssm needs the mamba-ssm package ({err})") from None


class MambaBlock(nn.Module):
    """The Mamba mixer: (B, L, D) -> (B, L, D), and step by step from its state.

    Args:
        d_model: D.
        d_state: N, the state a channel.
        expand: E / D.
        d_conv: the causal convolution's width.
        dt_rank: the rank of the step's input map ('auto': ceil(D / 16)).
        chunk: the scan's chunk length.
        kernel: 'loop' (ours, one loop over positions), 'pscan' (mambapy's), 'log' (ours) or 'mamba_ssm' (CUDA).
        dt_min, dt_max: the range of the initial step.
        negative_eigenvalues: the decay 2 exp(delta A) - 1 in (-1, 1), Grazzi et al. 2024's Mamba [-1, 1], rather than
            exp(delta A) in (0, 1) (loop and pscan only).
    """

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        expand: int = 2,
        d_conv: int = 4,
        dt_rank: int | str = "auto",
        chunk: int = 256,
        kernel: str = "loop",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        negative_eigenvalues: bool = False,
    ) -> None:
        super().__init__()
        if negative_eigenvalues and kernel not in ("loop", "pscan"):
            raise ValueError(f"{NEGATIVE_KERNELS}, not kernel={kernel}")
        self.negative = negative_eigenvalues
        for value, setting in ((d_state, "d_state (the state size)"), (d_conv, "d_conv"), (chunk, "scan chunk")):
            positive_int(value, f"{setting} (model.backbone)", "Mamba")
        require_kernel(kernel)
        inner = expand * d_model
        self.rank = math.ceil(d_model / 16) if dt_rank == "auto" else positive_int(dt_rank, "dt_rank", "Mamba")
        self.inner, self.d_state, self.d_conv, self.chunk, self.kernel = inner, d_state, d_conv, chunk, kernel
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv1d = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1)
        self.x_proj = nn.Linear(inner, self.rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(self.rank, inner)
        nn.init.uniform_(self.dt_proj.weight, -(self.rank**-0.5), self.rank**-0.5)
        dt = torch.exp(torch.rand(inner) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)).clamp(min=1e-4)
        with torch.no_grad():
            self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus(bias) = dt
        self.A_log = nn.Parameter(torch.log(torch.arange(1, d_state + 1, dtype=torch.float32).repeat(inner, 1)))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)

    def ssm_inputs(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """x (B, L, E) -> delta (B, L, E), A (E, N), B and C (B, L, N)."""
        delta, B, C = self.x_proj(x).split([self.rank, self.d_state, self.d_state], dim=-1)
        return F.softplus(self.dt_proj(delta).float()), -torch.exp(self.A_log.float()), B, C

    def mix(self, x: Tensor, z: Tensor, h0: Tensor | None, fused: bool = False) -> tuple[Tensor, Tensor | None]:
        """After the convolution: x, z (B, L, E) -> (out (B, L, D), the state after; None from mamba-ssm, which
        ``fused`` allows: the whole sequence at once, no state to go on from)."""
        x = F.silu(x)
        delta, A, B, C = self.ssm_inputs(x)
        if fused and self.kernel == "mamba_ssm" and x.is_cuda:
            y, h = mamba_ssm_scan(x, delta, A, B, C, self.D), None
        else:
            # a step goes on from a state, which mamba-ssm's kernel does not return: its device's parallel scan does
            scan = "pscan" if self.kernel == "mamba_ssm" else self.kernel
            y, h = selective_scan(x, delta, A, B, C, self.D.float(), h0, self.chunk, scan, self.negative)
        return self.out_proj((y * F.silu(z.float())).to(z.dtype)), h

    def forward(self, x: Tensor) -> Tensor:
        length = x.size(1)
        x, z = self.in_proj(x).chunk(2, dim=-1)
        # causal: the left padding only. Contiguous again: as a transposed view, every elementwise operation after it
        # and its backward (SiLU's above all, with a gradient laid out the other way) walk memory across its rows
        x = self.conv1d(x.transpose(1, 2))[..., :length].transpose(1, 2).contiguous()
        return self.mix(x, z, None, fused=True)[0]

    def step(self, x: Tensor, state: dict[str, Tensor] | None) -> tuple[Tensor, dict[str, Tensor]]:
        """x (B, t, D) after ``state`` ({'h': (B, E, N), 'conv': (B, E, d_conv - 1)} or None) -> ((B, t, D), state)."""
        x, z = self.in_proj(x).chunk(2, dim=-1)
        x = x.transpose(1, 2)  # (B, E, t)
        before = x.new_zeros(x.size(0), self.inner, self.d_conv - 1) if not state else state["conv"]
        window = torch.cat([before, x], dim=2)
        conv = F.conv1d(window, self.conv1d.weight, self.conv1d.bias, groups=self.inner)  # (B, E, t)
        out, h = self.mix(conv.transpose(1, 2), z, state["h"] if state else None)
        return out, {"h": h, "conv": window[:, :, window.size(2) - (self.d_conv - 1) :]}


class MambaEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through ``n_layers`` residual blocks x + mamba(rmsnorm(x)) and a final RMSNorm.

    The ``CausalBackbone`` contract: position t reads positions <= t; ``step`` goes on with a state of (E, N) and the
    last d_conv - 1 inputs a layer. With right padding no real output reads a padded position; padded outputs are 0.

    Args:
        d_model: D.
        n_layers: blocks.
        dropout: on each block's output.
        causal: must be True (Mamba reads one way; a language model builds it with causal=True).
        block: each block's settings (``MambaBlock``: d_state, expand, d_conv, dt_rank, chunk, kernel).
    """

    def __init__(
        self, d_model: int, n_layers: int = 2, dropout: float = 0.0, causal: bool = True, **block: Any
    ) -> None:
        super().__init__()
        if not causal:
            raise ValueError("Mamba reads one way only: causal=false is not a mode it has")
        positive_int(n_layers, "n_layers", "Mamba")
        self.d_model, self.causal, self.bidirectional = d_model, True, False
        self.mixers = nn.ModuleList(MambaBlock(d_model, **block) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.RMSNorm(d_model, eps=1e-5) for _ in range(n_layers))
        self.final = nn.RMSNorm(d_model, eps=1e-5)
        self.dropout = Dropout(dropout)

    precision_family = SCAN
    capabilities = frozenset({PADDING, CAUSAL, STEP})

    def state_size(self, length: int) -> int:
        """Each layer's (E, N) state and its last d_conv - 1 inputs (E each): constant in ``length``."""
        return sum(m.inner * (m.d_state + m.d_conv - 1) for m in self.mixers)

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None (right padding) -> (B, L, D)."""
        for norm, mixer in zip(self.norms, self.mixers):
            x = x + self.dropout(mixer(norm(x)))
        out = self.final(x)
        return out if pad_mask is None else out * (~pad_mask)[..., None].to(out.dtype)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after ``state`` ({} at the start) -> ((B, t, D), the new state)."""
        after: State = {}
        for i, (norm, mixer) in enumerate(zip(self.norms, self.mixers)):
            before = {"h": state[f"h{i}"], "conv": state[f"conv{i}"]} if state else None
            out, kept = mixer.step(norm(x), before)
            x = x + self.dropout(out)
            after[f"h{i}"], after[f"conv{i}"] = kept["h"], kept["conv"]
        return self.final(x), after
