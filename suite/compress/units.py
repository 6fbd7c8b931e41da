"""Structured pruning of a recurrent encoder: units ranked by importance and physically removed, then fine-tuning.

A unit's importance is |sum h dL/dh| of its output over training batches (a gate on the
encoder's output, ``suite.compress.importance``); its pull on the other units through the
recurrence is not counted, which fine-tuning makes up for. The ``units`` fraction least
important is removed (``suite.compress.slicing.keep_units``): every gate's matrices shrink, so
the recurrence does less work at every step.
"""

from __future__ import annotations

import copy
from typing import Any

from torch import nn

from suite.compress.importance import gate_importance
from suite.compress.method import Context, Method
from suite.compress.prune import check_fraction
from suite.compress.slicing import keep_units
from suite.compress.structured import neurons_to_keep
from suite.models.rnn import RecurrentEncoder
from suite.training.trainer import limited


class HiddenUnitPruning(Method):
    """Remove the least important ``units`` fraction of a one-layer, one-direction recurrent encoder's hidden units.

    Args:
        units: fraction removed, in [0, 1).
        importance_batches: training batches over which importance is summed.
        fine_tune: trainer settings of the fine-tuning (None: none).
    """

    name = "hidden_unit_pruning"

    def __init__(
        self, units: float = 0.5, importance_batches: int = 32, fine_tune: dict[str, Any] | None = None
    ) -> None:
        super().__init__(fine_tune)
        self.units, self.importance_batches = check_fraction("units", units), int(importance_batches)
        self.kept: int | None = None

    def check(self, model: nn.Module) -> None:
        encoders = [m for m in model.modules() if isinstance(m, RecurrentEncoder)]
        if not encoders:
            raise ValueError(
                f"compress={self.name} (units {self.units}) applies to recurrent encoders; this model has none"
            )
        rnn = encoders[0].rnn
        if len(encoders) > 1 or rnn.num_layers != 1 or rnn.bidirectional:
            raise ValueError(
                f"compress={self.name}: built for one recurrent encoder of one layer and one direction "
                f"(this one: {len(encoders)} encoder(s), {rnn.num_layers} layer(s), bidirectional={rnn.bidirectional})"
            )

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        pruned = copy.deepcopy(model)
        encoder = next(m for m in pruned.modules() if isinstance(m, RecurrentEncoder))
        batches = limited(context.task.loaders(32, context.seed)["train"], self.importance_batches)
        scores = gate_importance(
            pruned, context.task, batches, {"units": (encoder.proj, encoder.rnn.hidden_size)}, context.device
        )
        keep_units(encoder, neurons_to_keep(scores["units"], self.units).to(context.device))
        self.kept = encoder.rnn.hidden_size
        return pruned

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.name,
            "units_removed": self.units,
            "importance_batches": self.importance_batches,
            "kept_units": self.kept,
        }
