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


class Memorization:
    """Keys each followed by its value under one fixed mapping (see the module for the layout and the ids).

    Args:
        n_keys: K, the facts to store (a sequence of length L holds ceil(L / 2) distinct keys).
        n_values: V >= 2, the values' alphabet.
        mapping_seed: draws the mapping (the same for every split and every run with this seed).
    """

    name = "memorization"

    def __init__(self, n_keys: int = 256, n_values: int = 256, mapping_seed: int = 0) -> None:
        positive_int(n_keys, "task.generator.n_keys", self.name)
        if isinstance(n_values, bool) or not isinstance(n_values, int) or n_values < 2:
            raise ValueError(f"{self.name}: task.generator.n_values must be an integer >= 2, got {n_values!r}")
        if isinstance(mapping_seed, bool) or not isinstance(mapping_seed, int):
            raise ValueError(f"{self.name}: task.generator.mapping_seed must be an integer, got {mapping_seed!r}")
        self.n_keys, self.n_values, self.mapping_seed = n_keys, n_values, mapping_seed
        self.vocab = 1 + n_keys + n_values
        # its own stream, so the facts do not move with the splits' seed or with how many examples are drawn
        facts = random.Random(f"memorization:{mapping_seed}")
        self.mapping = {1 + k: 1 + n_keys + facts.randrange(n_values) for k in range(n_keys)}  # key id -> value id

    def check(self, length: int) -> None:
        # each key at most once a sequence, so that no value can be copied from the context
        if (length + 1) // 2 > self.n_keys:
            raise ValueError(
                f"{self.name}: task.generator.n_keys={self.n_keys} is too few for a length of {length}: a sequence "
                f"holds {(length + 1) // 2} distinct keys (raise n_keys or lower the length)"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (L,): ceil(L / 2) distinct keys, each followed by its value (an odd L ends on a key); targets (L,):
        the key's value at each key, -1 at the values."""
        keys = [1 + k for k in rng.sample(range(self.n_keys), (length + 1) // 2)]
        tokens = [t for k in keys for t in (k, self.mapping[k])][:length]
        targets = [self.mapping[t] if i % 2 == 0 else -1 for i, t in enumerate(tokens)]
        return tokens, targets
