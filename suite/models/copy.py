"""A copy mechanism (pointer-generator, See et al. 2017) for encoder-decoders with one shared vocabulary.

Summaries and subject lines reuse the source's own words: names, dates, project titles.
A generator must learn each such word as a vocabulary item; a pointer can take it from the
source wherever it stands. At each target position the head attends over the encoder's
memory, and a learned gate p_gen mixes the generator's distribution with that attention
scattered onto the source's token ids:

    P(w) = p_gen * softmax(logits)(w) + (1 - p_gen) * sum_{j : src_j = w} attention_j

The head sits after any decoder (Transformer or recurrent): it reads only the decoder states,
the memory and the source ids. Source and target ids must index one vocabulary.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

# Probabilities are floored before the log: a token neither generated nor in the source has
# probability 0 only by underflow, and log(0) would make the gradient NaN.
FLOOR = 1e-9


class PointerGenerator(nn.Module):
    """Generator logits (B, T, V), decoder states (B, T, D), memory (B, L, D), pad mask (B, L), source ids (B, L) ->
    log-probabilities (B, T, V).

    Args:
        d_model: width D of decoder states and memory.
    """

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.gate = nn.Linear(2 * d_model, 1)  # [state; attended memory] -> logit of p_gen

    def forward(self, logits: Tensor, h: Tensor, memory: Tensor, memory_mask: Tensor | None, source: Tensor) -> Tensor:
        scores = self.query(h) @ self.key(memory).transpose(1, 2) / math.sqrt(h.size(-1))  # (B, T, L)
        if memory_mask is not None:
            scores = scores.masked_fill(memory_mask[:, None, :], float("-inf"))
        attention = scores.float().softmax(dim=-1)  # (B, T, L)
        context = attention.to(memory.dtype) @ memory  # (B, T, D)
        p_gen = torch.sigmoid(self.gate(torch.cat([h, context], dim=-1)).float())  # (B, T, 1)
        index = source[:, None, :].expand(-1, h.size(1), -1)  # (B, T, L)
        copied = torch.zeros_like(logits, dtype=torch.float).scatter_add_(-1, index, attention)  # (B, T, V)
        probs = p_gen * logits.float().softmax(dim=-1) + (1 - p_gen) * copied
        return probs.clamp_min(FLOOR).log()
