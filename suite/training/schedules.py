"""Learning-rate schedules as ``LambdaLR`` factories, configured as Hydra ``_partial_`` targets.

Each takes the optimizer and the planned number of optimizer steps (which the trainer knows,
the config does not) and returns a scheduler stepped once per optimizer step.
"""

from __future__ import annotations

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


def warmup_cosine(optimizer: Optimizer, total_steps: int, warmup_steps: int = 100, min_ratio: float = 0.0) -> LambdaLR:
    """Linear warm-up to the base lr over ``warmup_steps``, then cosine decay to ``min_ratio * lr``."""
    warmup_steps = max(1, min(warmup_steps, total_steps // 2))

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)


def inverse_sqrt(optimizer: Optimizer, total_steps: int, warmup_steps: int = 4000) -> LambdaLR:
    """The paper's schedule (§5.3): lr ∝ min(step^-0.5, step * warmup^-1.5), peaking at the base lr.

    The factor is scaled to peak at 1, so the base lr is the peak lr: the paper's
    d_model^-0.5 * min(...) is ``lr = (d_model * warmup_steps)**-0.5`` (7e-4 for the base model).
    """

    def factor(step: int) -> float:
        s = step + 1
        return min(s**-0.5, s * warmup_steps**-1.5) * warmup_steps**0.5

    return LambdaLR(optimizer, factor)


def constant(optimizer: Optimizer, total_steps: int) -> LambdaLR:
    """No schedule."""
    return LambdaLR(optimizer, lambda step: 1.0)
