"""Recurrent baselines (Elman RNN, LSTM, GRU) behind the same Backbone contract as the encoder.

They use torch's fused ``nn.RNN/LSTM/GRU`` (cuDNN on GPU), and honour padding with packed
sequences, so a padded position never feeds the recurrence and extra padding changes nothing.
"""
from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

CELLS: dict[str, type[nn.RNNBase]] = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


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

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None -> (B, L, D); outputs at padded positions are zero."""
        if pad_mask is None:
            out, _ = self.rnn(x)
            return self.proj(out)
        lengths = (~pad_mask).sum(dim=1).cpu()  # packing wants lengths on the CPU
        packed = pack_padded_sequence(x, lengths.clamp(min=1), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return self.proj(out) * (~pad_mask)[..., None].to(out.dtype)  # (B, L, D)
