"""Stop signals: a scheduler's warning becomes a saved checkpoint and an 'interrupted' record.

SLURM sends SIGTERM before it pre-empts or kills a job, and the signal asked for with
``--signal`` before the time limit (submitit asks for SIGUSR2 unless
``SUBMITIT_PREEMPT_SIGNAL`` says otherwise); SIGUSR1 is the conventional manual one. While
training, these only set a flag: the loop finishes its step, writes ``last.pt`` and raises
``Interrupted``. After the record is written, ``Interrupted.forward()`` hands the signal to
the handler that was there before (submitit's requeue), so the job comes back and resumes.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType
from typing import Any

log = logging.getLogger("suite.training.trainer")


def stop_signals() -> tuple[signal.Signals, ...]:
    """SIGTERM, SIGUSR1 and submitit's pre-emption signal (SIGUSR2 by default)."""
    submitit = getattr(signal, f"SIG{os.environ.get('SUBMITIT_PREEMPT_SIGNAL', 'USR2')}", signal.SIGUSR2)
    return tuple(dict.fromkeys((signal.SIGTERM, signal.SIGUSR1, submitit)))


class StopSignals:
    """Within ``with``: a stop signal is recorded in ``received`` instead of ending the process."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            log.warning("received %s: stopping after this step and saving last.pt", signal.Signals(signum).name)
        self.received = signum

    def __enter__(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():  # handlers can only be set there
            for sig in stop_signals():
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def forward(self) -> None:
        """Call the handler the received signal had before (e.g. submitit's checkpoint-and-requeue), if it was a
        function."""
        handler = self.previous.get(self.received) if self.received is not None else None
        if callable(handler):
            handler(self.received, None)
