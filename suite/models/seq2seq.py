"""Encoder-decoder models composed from parts: embeddings -> encoder (a Backbone) -> decoder (a Decoder) -> generator.

The model config supplies the families (``backbone`` as the encoder, ``decoder``, ``positions``,
and optionally ``copy``, e.g. ``suite.models.copy.PointerGenerator``); the task supplies the
vocabularies and whether they are shared. The same ``Seq2Seq`` serves
the Transformer and the recurrent encoder-decoder, so translation and summarization compare
like with like, and ``suite.generation.search`` generates from either.
"""

from __future__ import annotations

from typing import Any

import torch
from hydra.utils import instantiate
from torch import Tensor, nn

from suite.models.classifier import build_sized
from suite.models.declaration import DECODER, PADDING, require
from suite.models.embeddings import TokenEmbedding
from suite.models.heads import Generator
from suite.nn import Dropout
from suite.types import State


class Seq2Seq(nn.Module):
    """Source ids (B, L) and target-input ids (B, T) -> next-token logits (B, T, V).

    Args:
        src_embed, tgt_embed: token embeddings (the same module when the vocabulary is shared).
        src_positions, tgt_positions: position encodings (identity for recurrent models).
        encoder: (B, L, D), (B, L) pad mask -> memory (B, L, D); any ``suite.types.Backbone``.
        decoder: any ``suite.types.Decoder``.
        generator: (B, T, D) -> (B, T, V).
        dropout: on the embedded inputs.
        copy: None, or a head that turns the generator's logits into log-probabilities that can
            also copy source tokens: (logits, states, memory, pad mask, source ids) -> (B, T, V).
            The model's scores are then log-probabilities; both kinds are fit for
            cross-entropy and for ``suite.generation.search``.
    """

    def __init__(
        self,
        src_embed: nn.Module,
        tgt_embed: nn.Module,
        src_positions: nn.Module,
        tgt_positions: nn.Module,
        encoder: nn.Module,
        decoder: nn.Module,
        generator: nn.Module,
        dropout: float = 0.0,
        copy: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.src_positions, self.tgt_positions = src_positions, tgt_positions
        self.encoder, self.decoder, self.generator, self.copy = encoder, decoder, generator, copy
        self.dropout = Dropout(dropout)

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """(B, L) ids, (B, L) pad mask -> memory (B, L, D)."""
        return self.encoder(self.dropout(self.src_positions(self.src_embed(src))), src_mask)

    def decode_features(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None = None) -> Tensor:
        """Target-input ids (B, T), memory (B, L, D) -> decoder states (B, T, D), all positions at once."""
        x = self.dropout(self.tgt_positions(self.tgt_embed(tgt)))  # (B, T, D)
        return self.decoder(x, memory, src_mask)

    def project(self, h: Tensor, state: State) -> Tensor:
        """Decoder states (B, T, D) -> next-token scores (B, T, V): logits, or log-probabilities with ``copy``.

        ``state`` holds what the copy head reads: ``memory``, ``memory_mask`` and ``source``.
        """
        logits = self.generator(h)
        if self.copy is None:
            return logits
        return self.copy(logits, h, state["memory"], state["memory_mask"], state["source"])

    def decode(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None = None, src: Tensor | None = None) -> Tensor:
        """Target-input ids (B, T), memory (B, L, D) -> scores (B, T, V); ``src`` (B, L) is needed with ``copy``."""
        return self.project(self.decode_features(tgt, memory, src_mask), self.context(memory, src_mask, src))

    def forward(self, src: Tensor, src_mask: Tensor | None, tgt: Tensor) -> Tensor:
        return self.decode(tgt, self.encode(src, src_mask), src_mask, src)  # (B, T, V)

    def context(self, memory: Tensor, src_mask: Tensor | None = None, src: Tensor | None = None) -> State:
        """What every decoding position reads: the memory (B, L, D), its pad mask (B, L) and the source ids (B, L)."""
        if self.copy is not None and src is None:
            raise ValueError("a model with a copy head needs the source ids to decode")
        if src_mask is None:
            src_mask = torch.zeros(memory.shape[:2], dtype=torch.bool, device=memory.device)
        return {"memory": memory, "memory_mask": src_mask} | ({"source": src} if src is not None else {})

    def start(self, memory: Tensor, src_mask: Tensor | None = None, src: Tensor | None = None) -> State:
        """Generation state before the first token: the ``context`` and the decoder's cache."""
        state = self.context(memory, src_mask, src)
        return {**state, **self.decoder.init_cache(memory, state["memory_mask"])}

    def step(self, tokens: Tensor, position: int, state: State) -> tuple[Tensor, State]:
        """The newest tokens (B, 1) at ``position`` -> (next-token scores (B, V), the new state)."""
        x = self.tgt_positions(self.tgt_embed(tokens), offset=position)  # (B, 1, D)
        h, state = self.decoder.step(x, state["memory"], state["memory_mask"], state)
        return self.project(h[:, -1:], state)[:, -1], state


def build_seq2seq(
    model_cfg: Any,
    src_vocab: int,
    tgt_vocab: int,
    max_len: int,
    shared_vocab: bool = False,
    tie_output: bool = True,
    pad_id: int = 0,
) -> Seq2Seq:
    """Build a ``Seq2Seq`` from a ``conf/model/*.yaml`` node that has a ``decoder``.

    Args:
        model_cfg: node with d_model, embed_dropout, positions, backbone (the encoder), decoder.
        src_vocab, tgt_vocab: vocabulary sizes.
        max_len: longest source or target sequence.
        shared_vocab: one vocabulary for both sides: one embedding matrix serves both.
        tie_output: the generator reuses the target embedding matrix.
        pad_id: padding id (its embedding stays zero).

    ``model_cfg.copy`` (optional; null: none) is a partial taking ``d_model``; copying needs
    the shared vocabulary, since source ids index the target's.
    """
    if model_cfg.get("decoder") is None:
        raise ValueError(
            f"model {model_cfg.get('name')!r} has no decoder: sequence-to-sequence tasks need one "
            "(e.g. model=transformer, lstm, gru)"
        )
    if shared_vocab and src_vocab != tgt_vocab:
        raise ValueError(f"a shared vocabulary needs equal sizes, got {src_vocab} and {tgt_vocab}")
    copy = model_cfg.get("copy")
    if copy is not None and not shared_vocab:
        raise ValueError(
            "a copy head needs one vocabulary for source and target (the task's shared_vocab); this task has two"
        )
    d = model_cfg.d_model
    src_embed = TokenEmbedding(src_vocab, d, padding_idx=pad_id)
    tgt_embed = src_embed if shared_vocab else TokenEmbedding(tgt_vocab, d, padding_idx=pad_id)
    positions = instantiate(model_cfg.positions)
    src_positions, tgt_positions = positions(d_model=d, max_len=max_len), positions(d_model=d, max_len=max_len)
    encoder = build_sized(model_cfg.backbone, max_len)  # built in this order: the same draws as ever for a seed
    require(encoder, {DECODER, PADDING}, "sequence-to-sequence encoder", model_cfg.get("name"))
    return Seq2Seq(
        src_embed=src_embed,
        tgt_embed=tgt_embed,
        src_positions=src_positions,
        tgt_positions=tgt_positions,
        encoder=encoder,
        decoder=build_sized(model_cfg.decoder, max_len, where="model.decoder"),
        generator=Generator(d, tgt_vocab, tie_to=tgt_embed.embed if tie_output else None),
        dropout=model_cfg.embed_dropout,
        copy=instantiate(copy)(d_model=d) if copy is not None else None,
    )
