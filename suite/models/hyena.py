"""Hyena (Poli et al. 2023, "Hyena Hierarchy: Towards Larger Convolutional Language Models"): attention replaced by
a recurrence of data-controlled gates and long convolutions whose filters are generated implicitly by a small network.

A mixer of order N (the paper's Definition 3.1; ``safari``'s ``HyenaOperator`` and ``HyenaFilter`` for the details):

    (v, x^1, ..., x^N) = split(ShortConv(W_in u))                       each (B, L, D); a causal depthwise width-3 conv
    z^1 = v,   z^(n+1)_t = x^n_t * (sum_(s<=t) h^n_(t-s) z^n_s + b^n z^n_t),   y = W_out z^(N+1)
    h^n_l = FFN(p(l)) * exp(-|delta| l / S),   p(l) = [l / S, cos(2 pi f_k l / S), sin(2 pi f_k l / S)]

with the FFN Linear(emb_dim, F) -> sin(w .) -> (Linear(F, F) -> sin(w .)) x 2 -> Linear(F, N D), one learned frequency
w a hidden unit, f_k = linspace(1e-4, K - 1, K) for K = (emb_dim - 1) / 2 bands, b^n a skip a channel, and the window's
decay rates |delta| spread over the N D filter channels so that it falls to 1e-2 at t = l / S from 0.3 (the fastest) to
1.5 (the slowest): ``safari``'s ExponentialModulation, fixed as there. S (``time_scale``) is ``safari``'s l_max, the
positions a unit of the filter's time: the features are a function of the absolute position, so a filter tap does not
depend on the sequence's length (causal, and decoding agrees with the full pass), and any length runs; taps past 1.5 S
are below 1e-2 of the window. Training convolves by FFT over 2L in float32 with autocast off.

Generation: implicit filters have no constant-size recurrence, so decoding keeps what the convolutions read, the past
inputs z^n of every long convolution (N D numbers a position) and the short convolution's last 2 inputs, and computes a
new position as the filters' dot product with that history: O(L) numbers carried and O(N D L) work a token, plus the
filter network evaluated at all L positions (O(L F (F + N D)), the larger term; the filters are not cached between
steps, as a cache would have to follow every weight update). Several positions at once run by FFT over the history.

Not here: ``safari``'s heads, inner_factor, blocks, outer mixing, post-order FFN, filter dropout and fused FFT kernels
(its defaults leave them off); its positional features learned at a learning rate of 1e-5 (fixed here, computed for
any position rather than held in a table of l_max rows); the distilled constant-size recurrence of "Laughing Hyena"
(Massaroli et al. 2023), a separate model fitted after training. Note that ``safari``'s code at its order 2 gates
before its one convolution (y = x^1 (h * (x^2 v))); here is the paper's definition, N filters for order N.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from suite.models.mixer_stack import ShortConv
from suite.models.scan import positive_int
from suite.runtime.precision_policy import CONVOLUTION
from suite.types import State

FAST_DECAY, SLOW_DECAY, TARGET = 0.3, 1.5, 1e-2  # safari's window: 1e-2 at t = 0.3 (fastest channel) .. 1.5 (slowest)
INNER_LAYERS = 2  # safari's num_inner_mlps


def long_conv(u: Tensor, h: Tensor, bias: Tensor, start: int = 0) -> Tensor:
    """u (B, S, C) causally convolved with h (S, C), plus bias (C,) x u, at positions start..S-1: (B, S - start, C),
    y_i = sum_(s<=i) h_(i-s) u_s + bias u_i. In u's dtype (the mixer calls it in float32 at least, autocast off)."""
    length = u.size(1)
    if length - start == 1:  # one new position (decoding): the filter's dot product with the history, O(S)
        y = torch.einsum("bsc,sc->bc", u, h.flip(0))[:, None]
    else:  # by FFT over 2S: zero padding, so the circular convolution does not wrap the end onto the start
        n = 2 * length
        y = torch.fft.irfft(torch.fft.rfft(u, n=n, dim=1) * torch.fft.rfft(h, n=n, dim=0), n=n, dim=1)
        y = y[:, start:length]
    return y + bias * u[:, start:]


class ImplicitFilter(nn.Module):
    """The filters h (L, C) at positions 0..L-1: an FFN of positional features with sine activations, times a window.

    Args:
        channels: C (N D: every filter's channels, safari's layout: channel d N + n is filter n's channel d).
        emb_dim: features a position (odd, >= 3: the time and a cosine and a sine a band).
        width: the FFN's hidden width (safari's filter_order).
        sin_freq: the sine activations' initial frequency (learned, one a hidden unit).
        time_scale: positions a unit of the filter's time (S).
    """

    def __init__(self, channels: int, emb_dim: int, width: int, sin_freq: float, time_scale: float) -> None:
        super().__init__()
        self.emb_dim, self.time_scale = emb_dim, time_scale
        self.first = nn.Linear(emb_dim, width)
        self.inner = nn.ModuleList(nn.Linear(width, width) for _ in range(INNER_LAYERS))
        self.last = nn.Linear(width, channels, bias=False)
        self.freq = nn.Parameter(torch.full((width,), float(sin_freq)))
        rates = torch.linspace(math.log(TARGET) / SLOW_DECAY, math.log(TARGET) / FAST_DECAY, channels).abs()
        self.register_buffer("rates", rates)  # fixed, as safari's (its modulation_lr is 0)

    def features(self, length: int) -> tuple[Tensor, Tensor]:
        """(L, emb_dim) features and (L, 1) times t = l / S of positions 0..L-1."""
        t = torch.arange(length, device=self.freq.device, dtype=self.freq.dtype)[:, None] / self.time_scale
        bands = (self.emb_dim - 1) // 2
        angle = 2 * math.pi * t * torch.linspace(1e-4, bands - 1, bands, device=t.device, dtype=t.dtype)
        return torch.cat([t, angle.cos(), angle.sin()], dim=1), t

    def forward(self, length: int) -> Tensor:
        """h (L, C)."""
        z, t = self.features(length)
        h = torch.sin(self.freq * self.first(z))
        for layer in self.inner:
            h = torch.sin(self.freq * layer(h))
        return self.last(h) * torch.exp(-t * self.rates)


class HyenaMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract); its state grows with the positions read (see the module).

    Args:
        d_model: D.
        order: N, the gates and long convolutions (the paper's Hyena-2 by default; 1 is a single gated convolution).
        filter_order: the filter FFN's hidden width.
        emb_dim: positional features a position (odd, >= 3).
        sin_freq: the filter's sine frequency at init (14: safari's Pile config).
        short_width: taps of the short convolution.
        time_scale: positions a unit of filter time, safari's l_max (the window is at 1e-2 by 0.3-1.5 x this).
    """

    name = "Hyena"
    precision_family = CONVOLUTION

    def __init__(
        self,
        d_model: int,
        order: int = 2,
        filter_order: int = 64,
        emb_dim: int = 33,
        sin_freq: float = 14.0,
        short_width: int = 3,
        time_scale: float = 1024,
    ) -> None:
        super().__init__()
        for setting, value in (("order", order), ("filter_order", filter_order), ("short_width", short_width)):
            positive_int(value, f"model.backbone.mixer.{setting}", self.name)
        if isinstance(emb_dim, bool) or not isinstance(emb_dim, int) or emb_dim < 3 or emb_dim % 2 == 0:
            raise ValueError(
                f"Hyena: model.backbone.mixer.emb_dim must be an odd integer >= 3 (the time, then a cosine and a sine "
                f"a band), got {emb_dim!r}"
            )
        if isinstance(time_scale, bool) or not isinstance(time_scale, (int, float)) or not time_scale > 0:
            raise ValueError(f"Hyena: model.backbone.mixer.time_scale must be a positive number, got {time_scale!r}")
        self.d_model, self.order, self.short_width = d_model, order, short_width
        self.in_proj = nn.Linear(d_model, (order + 1) * d_model)
        self.short = ShortConv((order + 1) * d_model, short_width, activation=False)
        self.filter = ImplicitFilter(order * d_model, emb_dim, filter_order, sin_freq, time_scale)
        self.bias = nn.Parameter(torch.randn(order, d_model))  # b^n, as safari's filter bias
        self.out_proj = nn.Linear(d_model, d_model)

    def state_size(self, length: int) -> int:
        """Every long convolution's past inputs (N D a position) and the short convolution's last width - 1 inputs."""
        return self.order * self.d_model * length + (self.order + 1) * self.d_model * (self.short_width - 1)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, t, D) after ``state`` (with ``step``; {'conv': (B, (N+1) D, width - 1), 'z<n>': (B, P, D)}, None or {}
        at the start) -> (y (B, t, D), the state after it). The training form is the same from an empty state."""
        state = (state or {}) if step else {}
        u, window = self.short(self.in_proj(x), state.get("conv"))
        start = state["z1"].size(1) if state else 0  # positions read before these
        kept: State = {"conv": window}
        # autocast off: a bf16 FFT of a long filter loses the taps far back; float64 stays float64
        with torch.autocast(x.device.type, enabled=False):
            z, *gates = u.to(torch.promote_types(u.dtype, torch.float32)).split(self.d_model, dim=-1)
            h = self.filter(start + x.size(1)).to(z.dtype).view(-1, self.d_model, self.order)
            for n, gate in enumerate(gates):
                history = torch.cat([state[f"z{n + 1}"].to(z.dtype), z], dim=1) if state else z
                kept[f"z{n + 1}"] = history
                z = gate * long_conv(history, h[..., n], self.bias[n].to(z.dtype), start)
        return self.out_proj(z.to(x.dtype)), kept
