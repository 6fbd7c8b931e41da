"""Copying: tasks whose answer is a token read earlier in the sequence, so a model must find it and bring it forward.

* ``SelectiveCopying`` (Gu and Dao 2023, "Mamba", section 3.1 and appendix E.1; Poli et al. 2024's MAD suite):
  ``n_tokens`` data tokens stand at random positions among blank (noise) tokens; after them an answer region of
  ``n_tokens`` positions asks for the data tokens in their order. The blanks make where to look content-dependent
  (Arjovsky et al. 2016's copying task has them at fixed places, which a fixed convolution solves). Two forms:

  - ``teacher_forcing: true`` (the default): the region is a copy marker then the answers d_1 .. d_{n-1}, read as a
    language model reads its own output; the marker is scored with d_1 and each d_i with d_{i+1} (d_n is the last
    answer and needs no position after it). A model may use the answers it has given to keep its place.
  - ``teacher_forcing: false`` (MAD's form, and Arjovsky et al.'s: a copy token then blanks, each scored with the
    next answer): the region is ``n_tokens`` copy markers, the k-th scored with d_k; the answers never appear in the
    input, so a model must also count where it is.

  Ids: 0 padding (unused: every example fills its length), 1 blank, 2 copy marker, data tokens 3 .. 2+V (V the
  ``data_vocab``; drawn with replacement, as MAD). Layout of an example of length L: positions 0 .. L-n-1 the data and
  blanks (the n data positions drawn uniformly without replacement), then the n-position answer region.

* ``InductionHeads`` (Olsson et al. 2022; the synthetic form of Fu et al. 2023 "H3" section 3.1 that Gu and Dao
  2023 section 4.1.2 train at length 256 and test up to 2^20): random tokens, with a special token at one uniformly
  drawn position followed by a random token (the target); the special token comes again at the last position, and
  the model must predict the token that followed it the first time (scored only there). A length-extrapolation
  task: trained at ``seq_len``, tested at ``test_lengths``, where the first occurrence may be further back than any
  distance seen in training.

  Ids: 0 padding (unused), 1 the special token, the random tokens 2 .. 1+V (V the ``data_vocab``; the special token
  occurs exactly twice: at its drawn position and at the last).

Sizes are scaled down for a CPU (a 2-layer model 64-128 wide, 1000-2000 steps at batch 64): selective copying at
length 64 with 8 data tokens from 16 (Mamba: 4096 with 16 from 16; MAD: 256 with 16 from 14), induction heads trained
at 64 and tested to 16x (Mamba: trained at 256, tested to 4096x). See conf/task/capability/*.yaml.
"""

from __future__ import annotations

import random

from suite.models.scan import positive_int
from tasks.capabilities.base import Example, knob

BLANK, COPY, SPECIAL = 1, 2, 1


class SelectiveCopying:
    """Data tokens among blanks, then their copy in order (see the module for the layout and the ids).

    Args:
        n_tokens: n, the data tokens an example holds and the answers it asks for.
        data_vocab: V >= 2, the data tokens' alphabet (one symbol would make the answer guessable unread).
        teacher_forcing: the answer region shows the answers (a copy marker then d_1 .. d_{n-1}), or n markers.
    """

    name = "selective_copying"

    def __init__(self, n_tokens: int = 8, data_vocab: int = 16, teacher_forcing: bool = True) -> None:
        positive_int(n_tokens, "task.generator.n_tokens", self.name)
        knob(data_vocab, 2, "data_vocab", self.name)
        if not isinstance(teacher_forcing, bool):
            raise ValueError(
                f"{self.name}: task.generator.teacher_forcing must be true or false, got {teacher_forcing!r}"
            )
        self.n_tokens, self.data_vocab, self.teacher_forcing = n_tokens, data_vocab, teacher_forcing
        self.vocab = 3 + data_vocab

    def check(self, length: int) -> None:
        # the first part must hold the n data tokens, the answer region is n positions more
        if length < 2 * self.n_tokens:
            raise ValueError(
                f"{self.name}: task.generator.n_tokens={self.n_tokens} needs a length of at least "
                f"{2 * self.n_tokens} (the data tokens, then as many answer positions), got {length}"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (L,): the data among blanks (L - n), then the answer region (n); targets (L,): the data, in order,
        at the region's positions, -1 before it."""
        n = self.n_tokens
        first = length - n  # the data and blanks
        data = [3 + rng.randrange(self.data_vocab) for _ in range(n)]
        tokens = [BLANK] * first
        for position, token in zip(sorted(rng.sample(range(first), n)), data):
            tokens[position] = token
        region = [COPY, *data[:-1]] if self.teacher_forcing else [COPY] * n
        return tokens + region, [-1] * first + data


class InductionHeads:
    """A special token, the token after it, random tokens, the special token again: predict that token.

    Args:
        data_vocab: V >= 2, the random tokens' alphabet (the target is one of them).
    """

    name = "induction_heads"

    def __init__(self, data_vocab: int = 16) -> None:
        knob(data_vocab, 2, "data_vocab", self.name)
        self.data_vocab = data_vocab
        self.vocab = 2 + data_vocab

    def check(self, length: int) -> None:
        # the special token, its target, and the special token again at the end
        if length < 3:
            raise ValueError(
                f"{self.name}: task.seq_len must be at least 3 (the special token, the token after it, the special "
                f"token again), got {length}"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (L,) with the special token at one drawn position and at the last; targets (L,): -1 but the last,
        the token after the first special token."""
        tokens = [2 + rng.randrange(self.data_vocab) for _ in range(length)]
        first = rng.randrange(length - 2)  # the target (first + 1) must stand before the last position
        tokens[first] = tokens[-1] = SPECIAL
        return tokens, [-1] * (length - 1) + [tokens[first + 1]]
