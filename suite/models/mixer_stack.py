"""A residual stack of sequence mixers, the body the modern baselines share (Mamba-2, GLA, DeltaNet, RetNet).

Each block is ``x + mixer(norm(x))``, then, where ``mlp_ratio`` > 0, ``x + mlp(norm(x))``, with RMSNorm, and a
final RMSNorm: the Transformer's pre-norm layout with attention swapped for the mixer. A mixer is any module with

    forward(x (B, L, D), state: State | None, step: bool) -> (y (B, L, D), the state after the last position)
    state_size(length) -> numbers carried after ``length`` positions (constant for a recurrence)
    precision_family, name

whose ``forward`` is its training form (chunked) and, with ``step``, its decoding form (the recurrence, from
``state``, None at the start), so that a family is its mixer and its config. The stack reads one way only:
position t sees positions <= t, right padding never reaches a real position, and padded outputs are zero.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.declaration import CAUSAL, PADDING, STEP
from suite.models.scan import positive_int
from suite.nn import Dropout
from suite.runtime.precision_policy import SCAN
from suite.types import State, scoped


class ShortConv(nn.Module):
    """A causal depthwise convolution over time with its own state for decoding: (B, L, C) -> (B, L, C).

    Args:
        channels: C.
        width: taps (>= 1); the state keeps the last ``width - 1`` inputs.
        activation: SiLU after the convolution (Mamba-2, DeltaNet) or none.
    """

    def __init__(self, channels: int, width: int, activation: bool = True) -> None:
        super().__init__()
        self.width, self.activation = width, activation
        self.conv = nn.Conv1d(channels, channels, width, groups=channels, padding=0)

    def forward(self, x: Tensor, before: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, L, C), the last ``width - 1`` inputs before it (B, C, width - 1) or None (zeros) -> (y, the state)."""
        x = x.transpose(1, 2)
        before = x.new_zeros(x.shape[0], x.shape[1], self.width - 1) if before is None else before.to(x.dtype)
        window = torch.cat([before, x], dim=2)
        y = self.conv(window).transpose(1, 2)
        return (F.silu(y) if self.activation else y), window[:, :, window.shape[2] - (self.width - 1) :]


def head_rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-5) -> Tensor:
    """RMSNorm over the last dimension (a head's values): x (..., V), weight (V,)."""
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def head_layer_norm(x: Tensor, weight: Tensor, eps: float = 1e-5) -> Tensor:
    """A layer norm over each head's values, then a weight a channel: x (B, H, L, d), weight (H * d,) -> (B, L, H * d)
    (xLSTM's and RWKV-7's group norm)."""
    return merge_heads(F.layer_norm(x, x.shape[-1:], eps=eps)) * weight


def head_widths(d_model: int, heads: int, factors: dict[str, float], owner: str) -> dict[str, int]:
    """Each ``factor x d_model`` width, refused unless it is a whole number of at least one a head."""
    positive_int(heads, "heads (model.backbone.mixer)", owner)
    out = {}
    for name, factor in factors.items():
        width = factor * d_model
        if width != int(width) or int(width) < heads or int(width) % heads:
            raise ValueError(
                f"{owner}: {name} x d_model = {width:g} must be a whole multiple of heads = {heads} "
                f"(model.backbone.mixer.{name}, model.d_model)"
            )
        out[name] = int(width)
    return out


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, L, H * d) -> (B, H, L, d)."""
    return x.view(*x.shape[:2], heads, -1).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, L, d) -> (B, L, H * d)."""
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


class MixerEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through ``n_layers`` pre-norm residual blocks of a mixer (and an MLP), then RMSNorm.

    Args:
        d_model: D.
        mixer: ``d_model -> mixer`` (a Hydra partial of the family's mixer), or a list of them taken in turn, layer i
            the (i mod len)-th (a hybrid: Based's linear attention and sliding window, a recurrence with attention).
        n_layers: blocks.
        mlp_ratio: the MLP's hidden width over D (0: none, as in Mamba-2's own stack), or a list taken in turn as
            ``mixer`` is (xLSTM: none after an mLSTM block, one after an sLSTM block).
        dropout: on each block's branches.
        causal: must be True (the stack reads one way; a language model builds it with causal=True).
    """

    def __init__(
        self,
        d_model: int,
        mixer: Callable[[int], nn.Module] | Sequence[Callable[[int], nn.Module]],
        n_layers: int = 2,
        mlp_ratio: float | Sequence[float] = 2.0,
        dropout: float = 0.0,
        causal: bool = True,
    ) -> None:
        super().__init__()
        pattern = list(mixer) if isinstance(mixer, Sequence) else [mixer]
        if not pattern:
            raise ValueError("MixerEncoder: mixer (model.backbone.mixer) is an empty list")
        positive_int(n_layers, "n_layers", "MixerEncoder")
        self.mixers = nn.ModuleList(pattern[i % len(pattern)](d_model) for i in range(n_layers))
        name = getattr(self.mixers[0], "name", type(self.mixers[0]).__name__)
        if not causal:
            raise ValueError(f"{name} reads one way only: causal=false is not a mode it has")
        self.d_model, self.causal, self.bidirectional = d_model, True, False
        ratios = list(mlp_ratio) if isinstance(mlp_ratio, Sequence) else [mlp_ratio]
        if not ratios or min(ratios) < 0:
            raise ValueError(f"{name}: mlp_ratio (model.backbone.mlp_ratio) must be >= 0, got {mlp_ratio}")
        hidden = [int(d_model * ratios[i % len(ratios)]) for i in range(n_layers)]
        self.norms = nn.ModuleList(nn.RMSNorm(d_model, eps=1e-5) for _ in range(n_layers))
        # an MLP and its norm only where there is one: a norm nothing reads would get no gradient
        self.mlps = nn.ModuleDict(
            {
                str(i): nn.Sequential(
                    nn.RMSNorm(d_model, eps=1e-5), nn.Linear(d_model, h), nn.GELU(), nn.Linear(h, d_model)
                )
                for i, h in enumerate(hidden)
                if h
            }
        )
        self.final = nn.RMSNorm(d_model, eps=1e-5)
        self.dropout = Dropout(dropout)
        families = {m.precision_family for m in self.mixers}
        # a hybrid runs as its recurrences need: their state is carried over every position
        self.precision_family = families.pop() if len(families) == 1 else SCAN

    capabilities = frozenset({PADDING, CAUSAL, STEP})
    precision_family = SCAN  # what every mixer here declares; an instance takes its mixer's

    def state_size(self, length: int) -> int:
        """Each layer's mixer state after ``length`` positions."""
        return sum(m.state_size(length) for m in self.mixers)

    def run(self, x: Tensor, state: State | None, step: bool) -> tuple[Tensor, State]:
        """(B, L, D) after ``state`` (None: the start) -> ((B, L, D), each layer's state as '<layer>.<name>')."""
        after: State = {}
        for i, (mixer, norm) in enumerate(zip(self.mixers, self.norms)):
            out, kept = mixer(norm(x), scoped(state, f"{i}.") if state else None, step)
            x = x + self.dropout(out)
            if str(i) in self.mlps:
                x = x + self.dropout(self.mlps[str(i)](x))
            after |= {f"{i}.{k}": v for k, v in kept.items()}
        return self.final(x), after

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None (right padding) -> (B, L, D)."""
        out, _ = self.run(x, None, step=False)
        return out if pad_mask is None else out * (~pad_mask)[..., None].to(out.dtype)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after ``state`` ({} at the start) -> ((B, t, D), the new state)."""
        return self.run(x, state or None, step=True)
