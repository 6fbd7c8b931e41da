"""S4D (Gu, Gupta, Goel and Ré 2022, "On the Parameterization and Initialization of Diagonal State Space Models").

Each of the D channels is a linear state space model x'(t) = A x(t) + B u(t), y(t) = Re(C x(t)) + D u(t) with a
diagonal complex A of N/2 modes (their conjugates give the other half: hence the 2 Re below), discretised with a
learned step dt by zero-order hold: A_bar = exp(dt A), B_bar = (exp(dt A) - 1) / A * B. Its output is the convolution
of u with the kernel K_l = 2 Re(sum_n C_n B_bar_n A_bar_n^l), which is computed from the parameters for the whole
length at once and applied by FFT in O(L log L); generation runs the same model as a recurrence, one state of N/2
complex numbers a channel. Initialisation: S4D-Lin (A_n = -1/2 + i pi n) or S4D-Inv (A_n = -1/2 + i N/pi (N/(2n+1)
- 1)), B = 1, C ~ N(0, 1) complex, dt log-uniform in [dt_min, dt_max].

A bidirectional kernel (classification) runs one causal kernel forwards and another backwards over the sequence; it
has no step-by-step form. ``S4DEncoder`` stacks pre-norm residual blocks: x + dropout(GLU(W gelu(S4D(norm(x))))).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.declaration import BIDIRECTIONAL, CAUSAL, PADDING, STEP
from suite.models.scan import positive_int
from suite.nn import Dropout
from suite.runtime.precision_policy import CONVOLUTION
from suite.types import State

INITS = ("lin", "inv")


def s4d_modes(state_size: int, init: str) -> Tensor:
    """(N/2,) complex A of S4D-Lin or S4D-Inv."""
    n = torch.arange(state_size // 2, dtype=torch.float64)
    if init == "lin":
        imag = math.pi * n
    else:
        imag = state_size / math.pi * (state_size / (2 * n + 1) - 1)
    return torch.complex(torch.full_like(n, -0.5), imag)


class S4DKernel(nn.Module):
    """The per-channel diagonal SSM: its kernel for a length, and its discrete (A_bar, C B_bar) for stepping.

    Args:
        channels: D.
        state_size: N (N/2 complex modes); even.
        init: 'lin' or 'inv'.
        dt_min, dt_max: the range of the initial log-uniform step.
    """

    def __init__(
        self, channels: int, state_size: int, init: str = "lin", dt_min: float = 1e-3, dt_max: float = 1e-1
    ) -> None:
        super().__init__()
        positive_int(state_size, "state size (model.backbone.state_size)", "S4D")
        if state_size % 2:
            raise ValueError(
                f"S4D: state size (model.backbone.state_size) must be even (conjugate pairs), got {state_size}"
            )
        if init not in INITS:
            raise ValueError(f"S4D: init must be one of {list(INITS)}, got {init!r}")
        modes = s4d_modes(state_size, init).expand(channels, -1)  # (D, N/2)
        self.log_neg_real = nn.Parameter(torch.log(-modes.real).float())  # Re A < 0 always: A = -exp(.) + i imag
        self.imag = nn.Parameter(modes.imag.float().clone())
        self.C = nn.Parameter(torch.view_as_real(torch.randn(channels, state_size // 2, dtype=torch.cfloat) * 0.5**0.5))
        log_dt = torch.rand(channels) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        self.log_dt = nn.Parameter(log_dt)

    def discretised(self) -> tuple[Tensor, Tensor]:
        """(dt A, C B_bar), each (D, N/2) complex: A_bar = exp(dt A)."""
        A = torch.complex(-torch.exp(self.log_neg_real), self.imag)
        dtA = A * torch.exp(self.log_dt)[:, None]
        return dtA, torch.view_as_complex(self.C) * (torch.exp(dtA) - 1) / A

    def discrete(self) -> tuple[Tensor, Tensor]:
        """(A_bar, C B_bar), each (D, N/2) complex."""
        dtA, CB = self.discretised()
        return torch.exp(dtA), CB

    def forward(self, length: int) -> Tensor:
        """The kernel (D, L): K_l = 2 Re(sum_n (C B_bar)_n A_bar_n^l) (``blocked_kernel``)."""
        return blocked_kernel(*self.discretised(), length)


def vandermonde_kernel(dtA: Tensor, CB: Tensor, length: int) -> Tensor:
    """(D, N/2) dt A and C B_bar -> the kernel (D, L) by its definition, the powers as exp(l dt A): D x N/2 x L
    complex numbers at once (the reference ``blocked_kernel`` is tested against)."""
    powers = torch.exp(dtA[..., None] * torch.arange(length, device=dtA.device))  # (D, N/2, L)
    return 2 * torch.einsum("dn,dnl->dl", CB, powers).real


def blocked_kernel(dtA: Tensor, CB: Tensor, length: int) -> Tensor:
    """(D, N/2) dt A and C B_bar -> the kernel (D, L), as ``vandermonde_kernel`` but from A_bar^(c j + i) =
    A_bar^(c j) A_bar^i with c ~ sqrt(L): exps of D x N/2 x 2 sqrt(L) numbers and one real batched matmul of
    D x L x N, rather than D x N/2 x L complex exps that backward keeps (537 MB a kernel at D 128, N 64, 16K)."""
    block = math.isqrt(max(length - 1, 0)) + 1  # c >= sqrt(L)
    rows = -(-length // block)
    steps = torch.arange(block, device=dtA.device)
    inner = torch.exp(dtA[..., None] * steps)  # (D, N/2, c): A_bar^i
    outer = CB[..., None] * torch.exp(dtA[..., None] * (block * torch.arange(rows, device=dtA.device)))  # (D, N/2, j)
    # 2 Re(sum_n o_nj i_ni) = 2 sum_n (Re o Re i - Im o Im i): one real matmul over 2 x N/2 terms
    left = torch.cat([outer.real, -outer.imag], dim=1).transpose(1, 2)  # (D, rows, N)
    right = torch.cat([inner.real, inner.imag], dim=1)  # (D, N, c)
    return 2 * torch.bmm(left, right).reshape(dtA.size(0), rows * block)[:, :length]


def fft_conv(u: Tensor, kernel: Tensor) -> Tensor:
    """u (B, L, D) causally convolved with kernel (D, L): y_t = sum_(s<=t) K_(t-s) u_s, by FFT over 2L (no wrap)."""
    length = u.size(1)
    n = 2 * length
    spectrum = torch.fft.rfft(u.float(), n=n, dim=1) * torch.fft.rfft(kernel.float().t(), n=n, dim=0)
    return torch.fft.irfft(spectrum, n=n, dim=1)[:, :length]


class S4D(nn.Module):
    """One S4D layer: (B, L, D) -> (B, L, D), y = K * u + D u (causal), or a forward and a backward kernel.

    Args:
        d_model: D.
        state_size: N per channel.
        bidirectional: a second kernel reads the sequence backwards (no step-by-step form).
        init, dt_min, dt_max: ``S4DKernel``'s.
    """

    def __init__(
        self,
        d_model: int,
        state_size: int = 64,
        bidirectional: bool = False,
        init: str = "lin",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
    ) -> None:
        super().__init__()
        self.bidirectional = bidirectional
        self.kernels = nn.ModuleList(
            S4DKernel(d_model, state_size, init, dt_min, dt_max) for _ in range(2 if bidirectional else 1)
        )
        self.skip = nn.Parameter(torch.randn(d_model))

    def forward(self, u: Tensor) -> Tensor:
        length = u.size(1)
        y = fft_conv(u, self.kernels[0](length))
        if self.bidirectional:
            y = y + fft_conv(u.flip(1), self.kernels[1](length)).flip(1)
        return (y + u.float() * self.skip).to(u.dtype)

    def step(self, u: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
        """u (B, t, D) after the state (B, D, N/2) complex (None: zeros) -> ((B, t, D), the new state): the recurrence
        x_t = A_bar x_(t-1) + u_t, y_t = 2 Re((C B_bar) x_t) + D u_t (B_bar folded into the output)."""
        if self.bidirectional:
            raise ValueError("S4D with a bidirectional kernel reads the future: it has no step-by-step form")
        A_bar, CB = self.kernels[0].discrete()
        x = u.new_zeros(u.size(0), *A_bar.shape, dtype=A_bar.dtype) if state is None else state
        out = []
        for t in range(u.size(1)):
            x = A_bar * x + u[:, t, :, None].float()
            out.append(2 * (CB * x).sum(-1).real + u[:, t].float() * self.skip)
        return torch.stack(out, dim=1).to(u.dtype), x


class S4DEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through ``n_layers`` pre-norm residual S4D blocks, a final norm.

    Causal (``causal=True``, a language model's backbone): position t reads positions <= t, and ``step`` goes on
    with a state of (D, N/2) complex numbers a layer. Bidirectional (classification): two kernels, no ``step``.
    Padded positions are zeroed before every layer, so with right padding no real output reads them.

    Args:
        d_model: D.
        n_layers: blocks.
        state_size: N per channel.
        bidirectional: both ways (refused together with ``causal``).
        causal: one way, for a language model.
        dropout: on each block's output.
        init, dt_min, dt_max: the kernels' initialisation.
    """

    def __init__(
        self,
        d_model: int,
        n_layers: int = 2,
        state_size: int = 64,
        bidirectional: bool = True,
        causal: bool = False,
        dropout: float = 0.0,
        init: Literal["lin", "inv"] = "lin",
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
    ) -> None:
        super().__init__()
        positive_int(n_layers, "n_layers", "S4D")
        if causal and bidirectional:
            raise ValueError(
                "S4D: causal=true with a bidirectional kernel is not a mode it has (the backward kernel reads the "
                "future); set model.backbone.bidirectional=false"
            )
        self.d_model, self.causal, self.bidirectional = d_model, causal, bidirectional and not causal
        self.layers = nn.ModuleList(
            S4D(d_model, state_size, self.bidirectional, init, dt_min, dt_max) for _ in range(n_layers)
        )
        self.outs = nn.ModuleList(nn.Linear(d_model, 2 * d_model) for _ in range(n_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.final = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)

    precision_family = CONVOLUTION

    @property
    def capabilities(self) -> frozenset[str]:
        """Causal: one kernel, a recurrent step; bidirectional: a kernel each way, no step."""
        return frozenset({PADDING} | ({BIDIRECTIONAL} if self.bidirectional else {CAUSAL, STEP}))

    def state_size(self, length: int) -> int:
        """Each layer's (D, N/2) complex state, two real numbers each: constant in ``length``."""
        return sum(2 * layer.kernels[0].imag.numel() for layer in self.layers)

    def block(self, i: int, x: Tensor, y: Tensor) -> Tensor:
        return x + self.dropout(F.glu(self.outs[i](F.gelu(y)), dim=-1))

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None (right padding) -> (B, L, D); zero at padded positions."""
        keep = None if pad_mask is None else (~pad_mask)[..., None].to(x.dtype)
        for i, layer in enumerate(self.layers):
            u = self.norms[i](x)
            x = self.block(i, x, layer(u if keep is None else u * keep))
        out = self.final(x)
        return out if keep is None else out * keep

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after ``state`` ({} at the start) -> ((B, t, D), {'x<i>': (B, D, N/2)})."""
        after: State = {}
        for i, layer in enumerate(self.layers):
            y, after[f"x{i}"] = layer.step(self.norms[i](x), state.get(f"x{i}"))
            x = self.block(i, x, y)
        return self.final(x), after
