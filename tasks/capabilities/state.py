"""State tracking: tasks whose answer is a function of the whole prefix, so a model must carry a state forward.

* ``ModularSum``: digits 0..m-1, the answer their sum modulo m (m = 2 is parity; Delétang et al. 2023's "parity
  check" and "modular arithmetic" without brackets; Grazzi et al. 2024 on why a linear recurrence whose gates stay in
  [0, 1] cannot count modulo m). Scored at the last position (``scored: last``: one answer a sequence, as Delétang et
  al.) or at every position (``every``: the running sum, a denser signal).
"""

from __future__ import annotations

import random

from tasks.capabilities.base import Example

SCORED = ("last", "every")


class ModularSum:
    """Digits as ids 1..m, answers as ids m+1..2m (0 pads).

    Args:
        modulus: m >= 2.
        scored: 'last' or 'every'.
    """

    def __init__(self, modulus: int = 2, scored: str = "last") -> None:
        if isinstance(modulus, bool) or not isinstance(modulus, int) or modulus < 2:
            raise ValueError(f"modular_sum: task.generator.modulus must be an integer >= 2, got {modulus!r}")
        if scored not in SCORED:
            raise ValueError(f"modular_sum: task.generator.scored must be one of {list(SCORED)}, got {scored!r}")
        self.modulus, self.scored = modulus, scored
        self.name = "parity" if modulus == 2 else f"sum_mod_{modulus}"
        self.vocab = 1 + 2 * modulus

    def check(self, length: int) -> None:
        if length < 1:
            raise ValueError(f"{self.name}: task.seq_len must be >= 1, got {length}")

    def example(self, rng: random.Random, length: int) -> Example:
        digits = [rng.randrange(self.modulus) for _ in range(length)]
        targets, total = [], 0
        for i, d in enumerate(digits):
            total = (total + d) % self.modulus
            targets.append(1 + self.modulus + total if self.scored == "every" or i == length - 1 else -1)
        return [1 + d for d in digits], targets
