"""Subword tokenizers trained on the training split with the ``tokenizers`` library."""
from __future__ import annotations

from typing import Iterable

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
SPECIALS = [PAD, UNK, BOS, EOS]  # ids 0..3, in this order


def train_bpe(texts: Iterable[str], vocab_size: int, lowercase: bool = False, min_frequency: int = 2) -> Tokenizer:
    """A byte-pair-encoding tokenizer fitted to ``texts``; [PAD]=0, [UNK]=1, [BOS]=2, [EOS]=3."""
    tok = Tokenizer(models.BPE(unk_token=UNK))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def encode(tok: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Batch-encode texts to id lists (no special tokens)."""
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
