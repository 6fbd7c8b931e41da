"""Width and depth choices held to the default's parameter count: a tuned model may not win by being larger."""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import ready
from suite.models.classifier import count_parameters
from suite.tune.space import Param

log = logging.getLogger("suite.tune")

TOLERANCE = 0.10
"""A shape is searched only where its parameter count is within 10 % of the default model's."""


def parameter_counts(
    default: DictConfig, param: Param, config_for: Callable[[Mapping[str, object]], DictConfig]
) -> dict[str, int]:
    """The task's model's parameter count for every choice of ``param`` (the task's data read once)."""
    task = ready(instantiate(default.task))
    return {
        choice: count_parameters(task.build_model(config_for(keys).model)) for choice, keys in param.sets.items()
    } | {"default": count_parameters(task.build_model(default.model))}


def kept_shapes(counts: dict[str, int], tolerance: float = TOLERANCE) -> list[str]:
    """The choices within ``tolerance`` of ``counts['default']`` (fewer than two: the task's model cannot change shape
    at its size, and the shape is not searched)."""
    base = counts["default"]
    kept = [c for c, n in counts.items() if c != "default" and abs(n - base) <= tolerance * base]
    dropped = {c: n for c, n in counts.items() if c != "default" and c not in kept}
    if dropped:
        log.info(
            "shapes outside ±%.0f%% of the default's %d parameters, not searched: %s", 100 * tolerance, base, dropped
        )
    return kept
