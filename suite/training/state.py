"""What the training loop and its callbacks share while a model trains (``FitState``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from suite.runtime import distributed
from suite.types import Task


@dataclass
class FitState:
    """What the loop and its callbacks share while training: the objects, the counters, the last figures."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    task: Task
    device: torch.device
    world: distributed.World
    total: int  # the steps the schedule now plans for
    planned: int  # the steps planned before any budget cut
    primary: str  # the validation metric that selects the best epoch
    epoch: int = 0
    step: int = 0
    batch: int = 0  # batches done in this epoch
    train_seconds: float = 0.0  # training time of finished epochs (validation excluded)
    tokens: int = 0
    items: int = 0
    loss: Tensor | None = None
    val: dict[str, float] = field(default_factory=dict)
    improved: bool = False
    best_eligible: bool = (
        True  # a callback may rule this epoch's weights out as the best (a pruning schedule short of its target)
    )
    stop_reason: str | None = None
    requested_total: int | None = None
    clock: float | None = None  # perf_counter at the start of the running epoch
    loader: Any = None  # the training loader (this rank's shard)
    precision: Any = None  # the run's suite.runtime.numerics.Choice, resolved once when the fit starts
    epoch_generators: list[Tensor] = field(
        default_factory=list
    )  # the data order's generator states at the epoch's start
    eval_every: int | None = None  # steps between validations (None: at each epoch's end)
    validated_at: int = -1  # the step of the last validation
    _loss_cache: tuple[int, float] | None = None

    def elapsed(self) -> float:
        """Training seconds so far, including the running epoch."""
        return self.train_seconds + (time.perf_counter() - self.clock if self.clock is not None else 0.0)

    def request_total(self, steps: int) -> None:
        """Ask for a schedule over ``steps`` steps in all (the loop re-plans, ranks agreeing on the shortest)."""
        self.requested_total = steps if self.requested_total is None else min(self.requested_total, steps)

    def loss_value(self) -> float:
        """This step's training loss (averaged over ranks); the same call on every rank."""
        if self._loss_cache is None or self._loss_cache[0] != self.step:
            value = self.loss.item() if self.loss is not None else math.nan
            value = distributed.reduce([value], "sum", self.world, self.device)[0] / self.world.size
            self._loss_cache = (self.step, value)
        return self._loss_cache[1]
