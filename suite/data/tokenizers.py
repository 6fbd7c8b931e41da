"""Subword tokenizers trained on the training split with the ``tokenizers`` library, byte-level ids, and sentence splitting."""
from __future__ import annotations

import re
from typing import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

PAD, UNK, BOS, EOS = "[PAD]", "[UNK]", "[BOS]", "[EOS]"
SPECIALS = [PAD, UNK, BOS, EOS]  # ids 0..3, in this order


def train_bpe(texts: Iterable[str], vocab_size: int, lowercase: bool = False, min_frequency: int = 2, reversible: bool = False) -> Tokenizer:
    """A byte-pair-encoding tokenizer fitted to ``texts``; [PAD]=0, [UNK]=1, [BOS]=2, [EOS]=3.

    Args:
        texts: the training texts.
        vocab_size: target vocabulary size, specials included.
        lowercase: lowercase before splitting.
        min_frequency: least count of a merged pair.
        reversible: split at spaces only and mark them as SentencePiece does ('▁'), so that
            ``tok.decode(ids)`` gives the text back (detokenized BLEU and ROUGE need that);
            otherwise split at whitespace and punctuation, which loses the spacing.
    """
    tok = Tokenizer(models.BPE(unk_token=UNK))
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    tok.normalizer = normalizers.Sequence(steps)
    if reversible:
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
    else:
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def train_byte_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> Tokenizer:
    """A byte-level BPE (GPT-2's): every UTF-8 byte is in the vocabulary, so nothing is unknown and
    ``tok.decode(ids)`` gives the text back byte for byte (no normalisation). [PAD]=0 .. [EOS]=3.

    ``vocab_size`` = 256 + 4 (the bytes and the specials) learns no merges: plain bytes.
    """
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if vocab_size < len(alphabet) + len(SPECIALS):
        raise ValueError(f"a byte-level vocabulary needs at least {len(alphabet) + len(SPECIALS)} entries (256 bytes and {len(SPECIALS)} specials), got {vocab_size}")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIALS, initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def byte_lengths(tok: Tokenizer) -> list[int]:
    """UTF-8 bytes each id of a byte-level tokenizer stands for (one character per byte); 0 for the specials."""
    return [0 if (t := tok.id_to_token(i)) in SPECIALS else len(t) for i in range(tok.get_vocab_size())]


def encode(tok: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Batch-encode texts to id lists (no special tokens)."""
    return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]


def decode(tok: Tokenizer, ids: list[list[int]]) -> list[str]:
    """Batch-decode id lists to texts, dropping special tokens."""
    return tok.decode_batch(ids, skip_special_tokens=True)


BYTE_PAD = 0  # byte-level ids: 0 pads, byte b is id b + 1
BYTE_VOCAB = 257


def utf8_ids(texts: list[str]) -> list[list[int]]:
    """Byte-level ids (LRA's Text task reads bytes): each UTF-8 byte b of a text as id b + 1."""
    return [[b + 1 for b in text.encode("utf-8")] for text in texts]


def byte_names(ids: list[int]) -> list[str]:
    """Readable labels of byte ids: the character of an ASCII byte, else its hex value ('[PAD]' for padding)."""
    return [PAD if i == BYTE_PAD else chr(i - 1) if 32 <= i - 1 < 127 else f"0x{i - 1:02x}" for i in ids]


# A sentence ends at . ! or ? (and any closing quote or bracket) before whitespace and a capital,
# digit, quote or bracket. Abbreviations like "Mr. Smith" are split too: a baseline can live with it.
SENTENCE_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9£$])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text: every line break ends one, and so does final punctuation within a line."""
    sentences = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            parts = SENTENCE_END.sub(lambda m: m.group(1) + "\n", line).split("\n")
            sentences += [p.strip() for p in parts if p.strip()]
    return sentences
