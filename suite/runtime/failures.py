"""Failures that carry the status their run is recorded with.

A job raises one of these (or any other exception, recorded as 'failed', or 'oom' when the
device ran out of memory); the runner reads the status with ``status_of`` instead of knowing
every job's exception types.
"""

from __future__ import annotations

from typing import Callable


class RunFailure(RuntimeError):
    """A run that ended without a result; ``status`` is what its record says, ``fields`` what else it keeps (e.g. the
    learning curve up to a divergence)."""

    status = "failed"
    fields: dict = {}  # noqa: RUF012 - replaced per instance, never mutated


class Diverged(RunFailure):
    """The training loss became NaN or infinite."""

    status = "diverged"


class PointTimeout(RunFailure):
    """A measurement would not finish inside its time budget."""

    status = "timeout"


class PointSkipped(RunFailure):
    """A measurement beyond the configured cap (e.g. a length this machine cannot hold)."""

    status = "skipped"


class Interrupted(RunFailure):
    """The run was asked to stop (SIGTERM, SIGUSR1: a scheduler's warning) and saved its state to resume.

    ``forward()``, called once the record is written, passes the signal on to the handler that
    was installed before the run's (e.g. submitit's requeue).
    """

    status = "interrupted"

    def __init__(self, message: str, forward: Callable[[], None] | None = None) -> None:
        super().__init__(message)
        self.forward = forward or (lambda: None)


def is_oom(err: BaseException) -> bool:
    """The device ran out of memory (torch's own error, or a kernel's message saying so)."""
    import torch

    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


def status_of(err: BaseException) -> str:
    """The record status an exception stands for: its own if it carries one, else 'oom' or 'failed'."""
    if isinstance(err, RunFailure):
        return err.status
    return "oom" if is_oom(err) else "failed"
