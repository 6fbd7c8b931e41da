"""minGRU and minLSTM (Feng et al. 2024, "Were RNNs All We Needed?"): recurrences whose gates read the input alone.

    minGRU:  z_t = sigmoid(W_z x_t),  h~_t = g(W_h x_t),  h_t = (1 - z_t) h_(t-1) + z_t h~_t
    minLSTM: f_t, i_t = sigmoid(W_f x_t), sigmoid(W_i x_t) normalised to sum to one, h_t = f'_t h_(t-1) + i'_t h~_t

With no h_(t-1) inside the gates, the recurrence is linear in h: training can read the whole sequence through a
parallel scan in log space (``kernel=log``: ``suite.models.scan.log_scan``; the paper's log-space form, B.3, with
g(x) = x + 1/2 for x >= 0 and sigmoid(x) below, so h stays positive), which a GPU wants; on a CPU the plain recurrence
with its own backward (``kernel=loop``: ``suite.models.linear_loop``) computes the same h for a fraction of the time
(``python -m suite.tools.scan_bench``). ``kernel=auto`` (the configs' default) takes the scan on CUDA, the loop
elsewhere. Generation carries a state of one vector a layer. The layer's weights are
laid out as ``mingru-pytorch``'s ``minGRU`` lays them out (one input map to hidden and gate, an output map when the
inner width differs), so the tests can load theirs.

``MinRecurrentEncoder`` stacks pre-norm residual blocks (the layer, then an MLP), as the paper's language models do.
It reads one way: position t sees positions <= t, and right padding never reaches a real position.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.declaration import CAUSAL, PADDING, STEP
from suite.models.linear_loop import linear_loop
from suite.models.scan import log_scan, positive_int, sequential
from suite.nn import Dropout
from suite.runtime.precision_policy import SCAN
from suite.types import State

CELLS = ("gru", "lstm")
KERNELS = ("auto", "loop", "log")


def g(x: Tensor) -> Tensor:
    """The positive activation of h~: x + 1/2 for x >= 0, sigmoid(x) below (continuous at 0)."""
    return torch.where(x >= 0, x + 0.5, torch.sigmoid(x))


def log_g(x: Tensor) -> Tensor:
    return torch.where(x >= 0, torch.log(F.relu(x) + 0.5), -F.softplus(-x))


class MinRNN(nn.Module):
    """One minGRU or minLSTM layer: (B, L, D) -> (B, L, D), and its state (B, H) after the last position.

    Args:
        d_model: input and output width D.
        cell: 'gru' or 'lstm'.
        expansion: inner width H = expansion x D; an output map H -> D where H != D.
        chunk: positions the parallel scan takes at once (``suite.models.scan``).
        bias: biases on the input maps (``mingru-pytorch`` has none).
        kernel: 'log' (the parallel scan), 'loop' (one loop over positions) or 'auto' (the scan on CUDA, else the loop).
    """

    def __init__(
        self,
        d_model: int,
        cell: str = "gru",
        expansion: float = 1.0,
        chunk: int | None = 256,
        bias: bool = False,
        kernel: str = "auto",
    ) -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"min{cell}: unknown cell {cell!r}; choose one of {list(CELLS)}")
        name = f"min{cell.upper()}"
        if kernel not in KERNELS:
            raise ValueError(f"{name}: kernel (model.backbone.kernel) must be one of {list(KERNELS)}, got {kernel!r}")
        if chunk is not None:
            positive_int(chunk, "scan chunk (model.backbone.chunk)", name)
        self.inner = int(d_model * expansion)
        positive_int(self.inner, f"inner width (expansion {expansion} x d_model {d_model})", name)
        self.cell, self.chunk, self.kernel = cell, chunk, kernel
        gates = 2 if cell == "gru" else 3  # (hidden, gate) or (hidden, forget, input)
        self.to_hidden_and_gate = nn.Linear(d_model, gates * self.inner, bias=bias)
        self.to_out = nn.Linear(self.inner, d_model, bias=False) if self.inner != d_model else nn.Identity()

    def gate(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B, L, D) -> h~'s pre-activation and u, the logit of the share of h~ in h_t (each (B, L, H)), in float32 at
        least (the recurrence needs more digits than bf16 has): a_t = sigmoid(-u_t), b_t = sigmoid(u_t) g(h~'s)."""
        projected = self.to_hidden_and_gate(x)
        parts = projected.to(torch.promote_types(projected.dtype, torch.float32)).chunk(
            3 if self.cell == "lstm" else 2, -1
        )
        if self.cell == "gru":
            hidden, gate = parts  # z = sigmoid(gate): u is the gate itself
            return hidden, gate
        hidden, forget, given = parts  # f' = f / (f + i) = sigmoid(-u) with u = log i - log f
        return hidden, F.softplus(-forget) - F.softplus(-given)

    def coefficients(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B, L, D) -> log a, log b (B, L, H) of h_t = a_t h_(t-1) + b_t (the log-space scan's)."""
        hidden, u = self.gate(x)
        return -F.softplus(u), -F.softplus(-u) + log_g(hidden)

    def linear_coefficients(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B, L, D) -> a, b (B, L, H), the loop's: the same numbers as ``coefficients`` without their logs."""
        hidden, u = self.gate(x)
        return torch.sigmoid(-u), torch.sigmoid(u) * g(hidden)

    def forward(self, x: Tensor, h0: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(B, L, D), the state before (B, H) or None -> ((B, L, D), the state after (B, H))."""
        if self.kernel == "log" or (self.kernel == "auto" and x.device.type == "cuda"):
            h = log_scan(*self.coefficients(x), h0, self.chunk)  # (B, L, H), float32
        else:
            h = linear_loop(*self.linear_coefficients(x), h0)
        return self.to_out(h.to(x.dtype)), h[:, -1]

    def reference(self, x: Tensor, h0: Tensor | None = None) -> Tensor:
        """The recurrence step by step in linear space (the tests' reference): (B, L, D) -> (B, L, D)."""
        log_a, log_b = self.coefficients(x)
        return self.to_out(sequential(log_a.exp(), log_b.exp(), h0).to(x.dtype))


class MinRecurrentEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through ``n_layers`` pre-norm residual blocks: x + layer(norm(x)), then x + mlp(norm(x)).

    The ``CausalBackbone`` contract: position t reads positions <= t; ``step`` goes on from a state of one (B, H)
    vector a layer, however long the text. Outputs at padded positions are zero.

    Args:
        d_model: width D.
        cell: 'gru' (minGRU) or 'lstm' (minLSTM).
        n_layers: blocks.
        expansion: the layer's inner width over D.
        mlp_ratio: the MLP's hidden width over D (0: no MLP).
        dropout: on each block's two branches.
        chunk: the scan's chunk length.
        kernel: 'auto', 'loop' or 'log' (``MinRNN``).
        causal: must be True (the model reads one way; a language model builds it with causal=True).
    """

    def __init__(
        self,
        d_model: int,
        cell: Literal["gru", "lstm"] = "gru",
        n_layers: int = 2,
        expansion: float = 1.0,
        mlp_ratio: float = 2.0,
        dropout: float = 0.0,
        chunk: int | None = 256,
        causal: bool = True,
        kernel: str = "auto",
    ) -> None:
        super().__init__()
        if not causal:
            raise ValueError(f"min{cell.upper()} reads one way only: causal=false is not a mode it has")
        positive_int(n_layers, "n_layers", f"min{cell.upper()}")
        self.d_model, self.causal, self.bidirectional = d_model, True, False
        self.layers = nn.ModuleList(MinRNN(d_model, cell, expansion, chunk, kernel=kernel) for _ in range(n_layers))
        hidden = int(d_model * mlp_ratio)
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, d_model))
            if hidden
            else nn.Identity()
            for _ in range(n_layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(2 * n_layers))
        self.final = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.has_mlp = hidden > 0

    precision_family = SCAN
    capabilities = frozenset({PADDING, CAUSAL, STEP})

    def state_size(self, length: int) -> int:
        """One vector a layer (the layer's inner width): constant in ``length``."""
        return sum(layer.inner for layer in self.layers)

    def run(self, x: Tensor, states: list[Tensor | None]) -> tuple[Tensor, list[Tensor]]:
        """(B, L, D) from the states before each layer -> ((B, L, D), the states after)."""
        after = []
        for i, (layer, mlp) in enumerate(zip(self.layers, self.mlps)):
            out, h = layer(self.norms[2 * i](x), states[i])
            x = x + self.dropout(out)
            if self.has_mlp:
                x = x + self.dropout(mlp(self.norms[2 * i + 1](x)))
            after.append(h)
        return self.final(x), after

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None (right padding) -> (B, L, D)."""
        out, _ = self.run(x, [None] * len(self.layers))
        return out if pad_mask is None else out * (~pad_mask)[..., None].to(out.dtype)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after those in ``state`` ({} at the start) -> ((B, t, D), {'h': (B, layers,
        H)})."""
        states = list(state["h"].unbind(1)) if state else [None] * len(self.layers)
        out, after = self.run(x, states)
        return out, {"h": torch.stack(after, dim=1)}
