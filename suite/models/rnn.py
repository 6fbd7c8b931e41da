"""Recurrent baselines (Elman RNN, LSTM, GRU) behind the same Backbone contract as the encoder,
and a recurrent decoder with attention behind the same Decoder contract as the Transformer's.

They use torch's fused ``nn.RNN/LSTM/GRU`` (cuDNN on GPU) and honour padding, so a padded position
never feeds the recurrence at a real one and extra padding changes nothing: a one-way encoder over
right-padded sequences (every batch the suite's collators make) runs the fused kernel over the
whole batch and zeroes the padded outputs, since a padded position comes after every real one;
a two-way encoder goes through packed sequences. Padding before real tokens is refused.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from suite.models.declaration import BIDIRECTIONAL, CAUSAL, DECODER, PADDING, STEP
from suite.nn import Dropout
from suite.runtime import numerics
from suite.runtime.precision_policy import RECURRENT_CELLS
from suite.types import State

CELLS: dict[str, type[nn.RNNBase]] = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}
RnnState = Tensor | tuple[Tensor, ...]  # torch's (layers, B, H) state; a tuple (h, c) for the LSTM


def state_names(cell: str) -> tuple[str, ...]:
    """The recurrent state's parts: h, and the LSTM's cell c."""
    return ("h", "c") if cell == "lstm" else ("h",)


def torch_state(state: State, names: tuple[str, ...]) -> RnnState:
    """Batch-first state {'h': (B, layers, H)[, 'c': ...]} -> torch's (layers, B, H) state (a tuple for the LSTM)."""
    states = tuple(state[name].transpose(0, 1).contiguous() for name in names)
    return states if len(states) > 1 else states[0]


def batch_first_state(state: RnnState, names: tuple[str, ...]) -> State:
    """torch's (layers, B, H) state -> batch-first {'h': (B, layers, H)[, 'c': ...]} (beam search reorders dim 0)."""
    states = state if isinstance(state, tuple) else (state,)
    return {name: s.transpose(0, 1) for name, s in zip(names, states)}


def run_cell(
    rnn: nn.RNNBase, x: Tensor | PackedSequence, state: RnnState | None = None
) -> tuple[Tensor | PackedSequence, RnnState]:
    """``rnn(x, state)``; an LSTM asked for bf16 (autocast, or bf16 inputs) on a CPU where torch has no bf16 LSTM
    kernel (``numerics.cpu_bf16_lstm``: oneDNN fails to build one) runs in fp32 with autocast off instead."""
    data = x.data if isinstance(x, PackedSequence) else x
    wants_bf16 = torch.is_autocast_enabled("cpu") or data.dtype == torch.bfloat16
    if isinstance(rnn, nn.LSTM) and data.device.type == "cpu" and wants_bf16 and not numerics.cpu_bf16_lstm():
        with torch.autocast("cpu", enabled=False):
            floats = None if state is None else tuple(s.float() for s in state)
            return rnn(x.float(), floats)
    return rnn(x, state)


def padded_at_end(pad_mask: Tensor) -> bool:
    """(B, L) bool, True at padding -> whether every row's padding follows all its real positions."""
    return bool((pad_mask[:, 1:] >= pad_mask[:, :-1]).all())


class RecurrentEncoder(nn.Module):
    """(B, L, D) -> (B, L, D) through a stacked (optionally bidirectional) recurrent network.

    Args:
        d_model: input and output width D.
        cell: 'rnn' (tanh Elman), 'lstm' or 'gru'.
        hidden_size: per-direction state size; the outputs are projected back to D when
            ``directions * hidden_size != D``.
        n_layers: stacked layers.
        bidirectional: read both ways (classification only: it sees the future).
        dropout: between stacked layers.
    """

    def __init__(
        self,
        d_model: int,
        cell: Literal["rnn", "lstm", "gru"] = "lstm",
        hidden_size: int | None = None,
        n_layers: int = 1,
        bidirectional: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"unknown cell {cell!r}; choose one of {sorted(CELLS)}")
        hidden_size = hidden_size or d_model
        self.d_model = d_model
        self.rnn = CELLS[cell](
            d_model,
            hidden_size,
            num_layers=n_layers,
            batch_first=True,
            bidirectional=bidirectional,
            dropout=dropout if n_layers > 1 else 0.0,
        )
        width = hidden_size * (2 if bidirectional else 1)
        self.proj = nn.Identity() if width == d_model else nn.Linear(width, d_model)
        self.states, self.bidirectional = state_names(cell), bidirectional

    precision_family = RECURRENT_CELLS

    @property
    def capabilities(self) -> frozenset[str]:
        """One way: causal, step by step; both ways: neither. A recurrent decoder with attention exists for either."""
        way = {BIDIRECTIONAL} if self.bidirectional else {CAUSAL, STEP}
        return frozenset({PADDING, DECODER} | way)

    def state_size(self, length: int) -> int:
        """h (and an LSTM's c) of every layer and direction: constant in ``length``."""
        rnn = self.rnn
        return len(self.states) * rnn.num_layers * (2 if rnn.bidirectional else 1) * rnn.hidden_size

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None -> (B, L, D); outputs at padded positions are zero."""
        # A batch without padding runs unpacked: the same recurrence through torch's fused kernel
        # (oneDNN on a CPU), where the packed path runs another one. Measured on an AVX2 EPYC, width
        # 128, 2 layers, L 256, batch 8, forward + backward: LSTM 1.08x, GRU 2.16x, RNN 1.77x faster;
        # and torch's autocast covers only the unpacked call, so only there does bf16 reach the cell.
        if pad_mask is None or not bool(pad_mask.any()):
            out, _ = run_cell(self.rnn, x)
            return self.proj(out)
        if not padded_at_end(pad_mask):  # packing, too, takes a row's real positions to be its first ones
            raise ValueError(
                "RecurrentEncoder: padding must follow each row's real positions (right padding), "
                "as the suite's collators make it"
            )
        keep = (~pad_mask)[..., None]
        if not self.bidirectional:
            # The padding comes after every real position, so a one-way recurrence's real outputs never
            # read it. The fused kernel over the padded batch is 2-11x faster than the packed one for
            # training (forward + backward, batch 32, L 256, width 128, lengths 150-256, one thread, AVX2
            # EPYC: LSTM 11.4x, GRU 4.2x, RNN 3.1x at one layer), equal within float rounding.
            out, _ = run_cell(self.rnn, x)
            return self.proj(out) * keep.to(out.dtype)
        # Two ways: the backward direction must start at each row's last real position.
        lengths = (~pad_mask).sum(dim=1).cpu()  # packing wants lengths on the CPU
        packed = pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        out, _ = run_cell(self.rnn, packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return self.proj(out) * keep.to(out.dtype)  # (B, L, D)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) from the carried state ({} at the start: zeros) -> ((B, t, D), the new state).

        The ``CausalBackbone`` contract: the state has the same size however long the text grows.
        """
        if self.bidirectional:
            raise ValueError("a bidirectional recurrent encoder reads the future: it cannot go on step by step")
        out, after = run_cell(self.rnn, x, torch_state(state, self.states) if state else None)
        return self.proj(out), batch_first_state(after, self.states)


class RecurrentDecoder(nn.Module):
    """A recurrent decoder with Luong attention over the encoder memory (the ``suite.types.Decoder`` contract).

    The recurrence reads the target embeddings; each output h_t then attends over the memory
    with the "general" score (W h_t) . m_l, scaled by 1/sqrt(D), and is combined with its
    context c_t as tanh(W_c [h_t; c_t]) (Luong et al. 2015, §3.1). Without input feeding the
    whole target runs through one fused RNN call in training, and a generation step is one
    cell step plus one attention read. The initial state comes from the memory's mean over
    real positions (the contract passes no encoder state), as Bahdanau et al. derive theirs
    from the encoder.

    Args:
        d_model: width D of the target embeddings, the memory and the output.
        cell: 'rnn', 'lstm' or 'gru'.
        hidden_size: state size H (D when None).
        n_layers: stacked layers.
        dropout: between stacked layers and on the output.
    """

    def __init__(
        self,
        d_model: int,
        cell: Literal["rnn", "lstm", "gru"] = "lstm",
        hidden_size: int | None = None,
        n_layers: int = 1,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"unknown cell {cell!r}; choose one of {sorted(CELLS)}")
        hidden_size = hidden_size or d_model
        self.d_model, self.hidden_size, self.n_layers = d_model, hidden_size, n_layers
        self.rnn = CELLS[cell](
            d_model, hidden_size, num_layers=n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0
        )
        self.states = state_names(cell)
        self.bridge = nn.Linear(d_model, len(self.states) * n_layers * hidden_size)
        self.query = nn.Linear(hidden_size, d_model, bias=False)
        self.combine = nn.Linear(hidden_size + d_model, d_model)
        self.dropout = Dropout(dropout)

    def init_cache(self, memory: Tensor, memory_mask: Tensor | None = None) -> dict[str, Tensor]:
        """Initial recurrent state(s) from the memory, batch-first: {'h': (B, layers, H)[, 'c': ...]}."""
        if memory_mask is None:
            summary = memory.mean(dim=1)
        else:
            keep = (~memory_mask)[..., None].to(memory.dtype)
            summary = (memory * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)  # (B, D)
        init = torch.tanh(self.bridge(summary)).view(memory.size(0), len(self.states), self.n_layers, self.hidden_size)
        return {name: init[:, j] for j, name in enumerate(self.states)}

    def attend(self, h: Tensor, memory: Tensor, memory_mask: Tensor | None) -> Tensor:
        """RNN outputs (B, T, H) -> attentional outputs (B, T, D)."""
        allowed = None if memory_mask is None else ~memory_mask[:, None, :]  # (B, 1, L)
        context = F.scaled_dot_product_attention(self.query(h), memory, memory, attn_mask=allowed)  # (B, T, D)
        return self.dropout(torch.tanh(self.combine(torch.cat([h, context], dim=-1))))

    def forward(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """tgt (B, T, D), memory (B, L, D), memory_mask (B, L) bool | None -> (B, T, D)."""
        out, _ = run_cell(self.rnn, tgt, torch_state(self.init_cache(memory, memory_mask), self.states))  # (B, T, H)
        return self.attend(out, memory, memory_mask)

    def step(
        self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None, cache: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """The next positions tgt (B, t, D) from the carried state -> ((B, t, D), the new state)."""
        out, state = run_cell(self.rnn, tgt, torch_state(cache, self.states))
        return self.attend(out, memory, memory_mask), {**cache, **batch_first_state(state, self.states)}
