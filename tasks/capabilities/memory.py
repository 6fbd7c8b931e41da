"""Memory: tasks whose answer is not in the sequence at all, so a model must hold it in its weights.

* ``Memorization`` (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid Architectures", the MAD suite's
  memorization task): one fixed key -> value mapping, the same for every sequence (drawn once from
  ``mapping_seed``, never from an example's random stream), and sequences of keys each followed by its value
  ``k_1 v_1 k_2 v_2 ...``; every value is scored at its key's position (the next token must be the key's value). The
  keys of a sequence are distinct, so no value can be read from an earlier occurrence of its key in the context:
  the facts come from training alone, and the validation and test sequences (held apart from training's) ask for the
  same facts in new orders and company. An odd length ends on a key, scored with its value.

  Ids: 0 padding (unused: every example fills its length), keys 1 .. K, values K+1 .. K+V (K ``n_keys``, V
  ``n_values``). The mapping sends each key to a value drawn uniformly (two keys may share a value).

  Keys of several tokens (``key_tokens`` k > 1, not in MAD): a fact's key is spelt by k key ids, ``a b v`` for
  k = 2, its value scored at the key's last token; the facts are all K ** k spellings, each with its own value. With
  single-token keys a fact can live in its key's embedding row (the embedding and the output layer are a lookup table
  of their own, outside the backbone parameters the map matches), and at 256 facts every model of the map stored all of
  them; a value that depends on two tokens has to be computed from both, so the facts are held by the backbone, whose
  size is the one held equal. k = 1 draws the same sequences as before the setting existed.

  What differs from MAD: MAD shows a key then an insert token, scored there, so the value never enters the input;
  here the value follows its key (the teacher-forced form of the capability map's contract, tasks/capabilities/
  base.py), which leaks nothing because each key occurs once a sequence. MAD draws a sequence's keys with
  replacement (a repeated key is answered the same way, but with the value hidden it is no help); here they are
  distinct for the reason above, which needs ``n_keys`` >= half the length. MAD's mapping is a bijection between
  halves of its vocabulary (vocab 256: 127 facts, to 8192); here values are drawn per key from ``n_values``.
  Sizes: 256 facts at length 32 (MAD's baseline: 127 facts at length 32, 256 training sequences), so a 2-layer
  model 64-128 wide on a CPU meets each fact a few thousand times in 1000-2000 steps.

MAD's compression task is not here. There a random sequence ends in a compression token, an encoder's output at that
single position is the only thing a separate MLP decoder sees (with a position embedding) when it reconstructs every
token of the sequence: the test is what one vector can hold. Under this contract a causal language model is scored
at positions with its own output layer, and every position after the sequence still reads the whole sequence
(attention looks the token up, a recurrence has it in its state exactly as for copying); so any reconstruction
scored after the compression token is the copying task (``tasks.capabilities.copying.SelectiveCopying`` at length
2 x ``n_tokens``, no blanks), and no generator alone can make the single-vector bottleneck. A faithful form needs a
task-owned readout (the features at the compression position, plus a position code, through a small MLP into the
output layer, its parameters trained with the model): a change to ``SequenceDiagnostic``'s loss and evaluation, not
a generator.
"""

from __future__ import annotations

import random

from suite.models.scan import positive_int
from tasks.capabilities.base import Example

MAX_FACTS = 1 << 22  # the facts a mapping may hold: far beyond what a model of the map's sizes can store


class Memorization:
    """Keys each followed by its value under one fixed mapping (see the module for the layout and the ids).

    Args:
        n_keys: K, the key alphabet; the facts are its ``key_tokens``-tuples, K ** key_tokens of them.
        n_values: V >= 2, the values' alphabet.
        mapping_seed: draws the mapping (the same for every split and every run with this seed).
        key_tokens: k >= 1, the tokens a key is spelt with (1: MAD's single-token keys).
    """

    name = "memorization"

    def __init__(self, n_keys: int = 256, n_values: int = 256, mapping_seed: int = 0, key_tokens: int = 1) -> None:
        positive_int(n_keys, "task.generator.n_keys", self.name)
        positive_int(key_tokens, "task.generator.key_tokens", self.name)
        if isinstance(n_values, bool) or not isinstance(n_values, int) or n_values < 2:
            raise ValueError(f"{self.name}: task.generator.n_values must be an integer >= 2, got {n_values!r}")
        if isinstance(mapping_seed, bool) or not isinstance(mapping_seed, int):
            raise ValueError(f"{self.name}: task.generator.mapping_seed must be an integer, got {mapping_seed!r}")
        self.n_keys, self.n_values, self.mapping_seed, self.key_tokens = n_keys, n_values, mapping_seed, key_tokens
        self.n_facts = n_keys**key_tokens
        if self.n_facts > MAX_FACTS:  # the mapping is a table of every fact's value
            raise ValueError(
                f"{self.name}: n_keys={n_keys} with key_tokens={key_tokens} spells {self.n_facts:,} facts, more than "
                f"the {MAX_FACTS:,} a mapping table holds (lower task.generator.n_keys or key_tokens)"
            )
        self.vocab = 1 + n_keys + n_values
        # its own stream, so the facts do not move with the splits' seed or with how many examples are drawn; fact f
        # is the key spelt by f's base-K digits (for k = 1 the key id itself, the stream unchanged)
        facts = random.Random(f"memorization:{mapping_seed}")
        self.values = [1 + n_keys + facts.randrange(n_values) for _ in range(self.n_facts)]  # fact -> value id

    def spell(self, fact: int) -> list[int]:
        """The key ids (k,) of fact ``fact``, most significant digit first."""
        digits = [(fact // self.n_keys**i) % self.n_keys for i in reversed(range(self.key_tokens))]
        return [1 + d for d in digits]

    def facts_in(self, length: int) -> int:
        """Facts a sequence of ``length`` holds: ceil(L / (k + 1)), the last one cut after its key when L ends there."""
        return -(-length // (self.key_tokens + 1))

    def check(self, length: int) -> None:
        # each fact at most once a sequence, so that no value can be copied from the context
        if self.facts_in(length) > self.n_facts:
            raise ValueError(
                f"{self.name}: task.generator.n_keys={self.n_keys} spells {self.n_facts} facts with key_tokens="
                f"{self.key_tokens}, too few for a length of {length}: a sequence holds {self.facts_in(length)} "
                "distinct facts (raise n_keys or lower the length)"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (L,): distinct facts, each key's k tokens followed by its value (a length that cuts a fact keeps
        what fits); targets (L,): the fact's value at its key's last token, -1 elsewhere."""
        tokens: list[int] = []
        targets: list[int] = []
        for fact in rng.sample(range(self.n_facts), self.facts_in(length)):
            key = self.spell(fact)
            tokens += [*key, self.values[fact]]
            targets += [-1] * (len(key) - 1) + [self.values[fact], -1]
        return tokens[:length], targets[:length]
