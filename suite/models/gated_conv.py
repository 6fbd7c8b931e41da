"""A gated convolution backbone (Dauphin et al. 2017's GLU blocks, causal): the smallest model of another family.

Each block is a pre-norm residual ``x + W_o (conv_a(h) * sigmoid(conv_b(h)))`` over ``h = norm(x)``, with causal
depthwise convolutions of width ``kernel``: position t reads positions t - kernel + 1 .. t of the layer below, so a
stack of n blocks sees n (kernel - 1) positions back, no further. It declares itself (``suite.models.declaration``) as
a causal model of the convolution precision family that goes on step by step from the last kernel - 1 inputs of
each block: a new model family in this module and ``conf/model/gated_conv.yaml``, nothing else.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.declaration import CAUSAL, PADDING, STEP
from suite.models.scan import positive_int
from suite.nn import Dropout
from suite.runtime.precision_policy import CONVOLUTION
from suite.types import State


class GatedConvBlock(nn.Module):
    """(B, L, D) -> (B, L, D): x + out(conv_a(h) * sigmoid(conv_b(h))), h = norm(x), both convolutions causal."""

    def __init__(self, d_model: int, kernel: int, dropout: float) -> None:
        super().__init__()
        self.kernel = kernel
        self.norm = nn.LayerNorm(d_model)
        self.conv = nn.Conv1d(d_model, 2 * d_model, kernel, groups=d_model)  # value and gate per channel
        self.out = nn.Linear(d_model, d_model)
        self.dropout = Dropout(dropout)

    def mix(self, window: Tensor, x: Tensor) -> Tensor:
        """``window`` (B, D, kernel - 1 + t) of normed inputs -> the block's output at its last t positions."""
        value, gate = self.conv(window).transpose(1, 2).chunk(2, dim=-1)  # (B, t, D) each
        return x + self.dropout(self.out(value * torch.sigmoid(gate)))

    def forward(self, x: Tensor) -> Tensor:
        h = F.pad(self.norm(x).transpose(1, 2), (self.kernel - 1, 0))  # (B, D, kernel - 1 + L): causal
        return self.mix(h, x)

    def step(self, x: Tensor, before: Tensor | None) -> tuple[Tensor, Tensor]:
        """x (B, t, D) after ``before`` (B, D, kernel - 1) normed inputs (None: zeros) -> (out, the last kernel - 1)."""
        h = self.norm(x).transpose(1, 2)
        before = h.new_zeros(h.size(0), h.size(1), self.kernel - 1) if before is None else before
        window = torch.cat([before, h], dim=2)
        return self.mix(window, x), window[:, :, window.size(2) - (self.kernel - 1) :]


class GatedConvEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through ``n_layers`` gated convolution blocks and a final LayerNorm.

    Args:
        d_model: D.
        n_layers: blocks.
        kernel: each convolution's width (>= 2).
        dropout: on each block's output.
        causal: must be True (it reads one way).
    """

    precision_family = CONVOLUTION
    capabilities = frozenset({PADDING, CAUSAL, STEP})

    def __init__(
        self, d_model: int, n_layers: int = 2, kernel: int = 4, dropout: float = 0.0, causal: bool = True
    ) -> None:
        super().__init__()
        if not causal:
            raise ValueError("gated convolution reads one way only: causal=false is not a mode it has")
        positive_int(n_layers, "n_layers", "gated convolution")
        if positive_int(kernel, "kernel", "gated convolution") < 2:
            raise ValueError(f"gated convolution: kernel must be at least 2 (it reads earlier positions), got {kernel}")
        self.d_model, self.causal, self.bidirectional = d_model, True, False
        self.blocks = nn.ModuleList(GatedConvBlock(d_model, kernel, dropout) for _ in range(n_layers))
        self.final = nn.LayerNorm(d_model)

    def state_size(self, length: int) -> int:
        """The last kernel - 1 normed inputs of every block (D each): constant in ``length``."""
        return sum(b.kernel - 1 for b in self.blocks) * self.d_model

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None (right padding: no real position reads a later one) -> (B, L, D)."""
        for block in self.blocks:
            x = block(x)
        out = self.final(x)
        return out if pad_mask is None else out * (~pad_mask)[..., None].to(out.dtype)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after ``state`` ({} at the start) -> ((B, t, D), {'conv<i>': (B, D, k-1)})."""
        after: State = {}
        for i, block in enumerate(self.blocks):
            x, after[f"conv{i}"] = block.step(x, state.get(f"conv{i}"))
        return self.final(x), after
