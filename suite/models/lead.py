"""Lead-k: the extractive baseline that every summarization table shows beside the neural models."""

from __future__ import annotations

from torch import nn

from suite.data.tokenizers import split_sentences


class Lead(nn.Module):
    """Source texts -> their first ``sentences`` sentences. No parameters: nothing to train.

    A model of strings, not tensors: the task hands it the raw sources, so it is scored on
    exactly the text a reader would see (not on truncated, re-tokenized ids).

    Args:
        sentences: k, the number of leading sentences kept (Lead-1, Lead-3, ...).
    """

    def __init__(self, sentences: int) -> None:
        super().__init__()
        if sentences < 1:
            raise ValueError(f"Lead-k needs k >= 1, got {sentences}")
        self.sentences = sentences

    def forward(self, sources: list[str]) -> list[str]:
        return [" ".join(split_sentences(text)[: self.sentences]) for text in sources]

    def extra_repr(self) -> str:
        return f"sentences={self.sentences}"
