"""Decoder-only language models: token ids -> next-token logits through any causal backbone.

With the Transformer stack built causal it is GPT-2's shape (Radford et al. 2019): token
embedding plus positions, pre-norm blocks ending in a LayerNorm, and an output layer that shares
the embedding matrix. With a unidirectional RNN, LSTM or GRU as the backbone (no positions: the
recurrence knows the order) it is the classic recurrent language model. One class, one loss and
one training loop serve both; ``step`` lets ``suite.generation.sampling`` add a token at a time, each
backbone carrying its own state (a key/value cache, running sums, a recurrent state).
"""

from __future__ import annotations

from typing import Any

from hydra.utils import instantiate
from torch import Tensor, nn

from suite.models.classifier import build_sized
from suite.models.declaration import CAUSAL, STEP, require
from suite.models.embeddings import TokenEmbedding
from suite.models.heads import Generator
from suite.nn import Dropout
from suite.types import CausalBackbone, State


class LanguageModel(nn.Module):
    """Token ids (B, L) -> next-token logits (B, L, V); position t reads ids[:, :t + 1] only.

    Args:
        embed: token embedding (its matrix is shared with ``generator`` when tied).
        positions: position encoding, called with an ``offset`` when decoding step by step.
        backbone: a ``CausalBackbone``.
        generator: (B, L, D) -> (B, L, V).
        dropout: on the embedded input.
        context: the longest text (in tokens) the model was built and trained for; generation
            stops there rather than run past it silently.
    """

    def __init__(
        self,
        embed: TokenEmbedding,
        positions: nn.Module,
        backbone: nn.Module,
        generator: Generator,
        dropout: float = 0.0,
        context: int | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(backbone, CausalBackbone):
            raise TypeError(
                f"a language model needs a causal backbone with a step method, got {type(backbone).__name__}"
            )
        self.embed, self.positions, self.backbone, self.generator = embed, positions, backbone, generator
        self.dropout = Dropout(dropout)
        self.context = context

    def features(self, ids: Tensor) -> Tensor:
        """(B, L) ids -> (B, L, D): the backbone's output at every position, before the output layer."""
        return self.backbone(self.dropout(self.positions(self.embed(ids))))

    def forward(self, ids: Tensor) -> Tensor:
        """(B, L) ids -> (B, L, V) logits, every position at once (training, scoring)."""
        return self.generator(self.features(ids))

    def next_logits(self, ids: Tensor) -> Tensor:
        """(B, L) ids -> (B, V) logits of the token after them, the text read whole (no state).

        Only the last position goes through the output layer: at V = 4000 and width 128 that layer
        costs more per position than the backbone, and the other positions' logits are thrown away.
        """
        return self.generator(self.features(ids)[:, -1])

    def step(self, ids: Tensor, position: int, state: State) -> tuple[Tensor, State]:
        """The next ids (B, t), the first at ``position``, after those in ``state`` ({} at the start) -> (logits (B, t,
        V), the new state)."""
        x = self.positions(self.embed(ids), offset=position)  # (B, t, D)
        h, state = self.backbone.step(x, state)
        return self.generator(h), state


def build_language_model(
    model_cfg: Any, vocab_size: int, context: int, pad_id: int = 0, tie_output: bool = True
) -> LanguageModel:
    """A ``LanguageModel`` from a ``conf/model/*.yaml`` node: its ``backbone`` built causal, its ``positions``.

    Args:
        model_cfg: node with d_model, embed_dropout, positions, backbone.
        vocab_size: V.
        context: the training length L (sizes fixed-length attention variants; bounds generation).
        pad_id: id whose embedding stays zero.
        tie_output: the output layer reuses the embedding matrix (GPT-2; Press & Wolf 2017).
    """
    node = model_cfg.backbone
    if node.get("bidirectional"):
        raise ValueError(
            f"model {model_cfg.name!r} reads the sequence both ways: a language model must not see the token "
            "it predicts (set model.backbone.bidirectional=false, or use a one-way model: lstm, gru, mingru, ...)"
        )
    backbone = build_sized(node, context, causal=True)
    if not isinstance(backbone, CausalBackbone) or getattr(backbone, "causal", True) is not True:
        raise ValueError(
            f"model {model_cfg.name!r} has no causal form for a language model (its backbone "
            f"{node._target_} takes no causal=true)"
        )
    require(backbone, {CAUSAL, STEP}, "language model", model_cfg.name)
    d = model_cfg.d_model
    embed = TokenEmbedding(vocab_size, d, padding_idx=pad_id)
    return LanguageModel(
        embed=embed,
        positions=instantiate(model_cfg.positions)(d_model=d, max_len=context),
        backbone=backbone,
        generator=Generator(d, vocab_size, tie_to=embed.embed if tie_output else None),
        dropout=model_cfg.embed_dropout,
        context=context,
    )
