"""Stop signals: a scheduler's warning becomes a saved checkpoint and an 'interrupted' record.

Ctrl-C at a terminal (SIGINT) is treated as SIGTERM is. SLURM sends SIGTERM before it pre-empts or kills a job,
and the signal asked for with
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
from typing import Any, Callable

log = logging.getLogger("suite.training.trainer")


def stop_signals() -> tuple[signal.Signals, ...]:
    """SIGTERM, SIGINT (Ctrl-C at a terminal), SIGUSR1 and submitit's pre-emption signal (SIGUSR2 by default)."""
    submitit = getattr(signal, f"SIG{os.environ.get('SUBMITIT_PREEMPT_SIGNAL', 'USR2')}", signal.SIGUSR2)
    return tuple(dict.fromkeys((signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, submitit)))


def install(handler: Callable[[int, FrameType | None], None]) -> dict[int, Any]:
    """``handler`` for every stop signal; the handlers it replaced (none off the main thread: only it may set
    them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, handler) for sig in stop_signals()}


def restore(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def ctrl_c_exit() -> None:
    """End the process after Ctrl-C with one line, not a KeyboardInterrupt traceback: the run is saved and recorded (a
    sweep stops there)."""
    print("interrupted (Ctrl-C): last.pt and the record are saved; run the same command again to resume", flush=True)
    raise SystemExit(130)


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
        self.previous = install(self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        restore(self.previous)

    def forward(self) -> None:
        """Call the handler the received signal had before (e.g. submitit's checkpoint-and-requeue), if it was a
        function. Ctrl-C ends the process (a sweep stops there) with one line instead of a traceback: the run is
        saved and recorded, and the same command resumes it."""
        handler = self.previous.get(self.received) if self.received is not None else None
        if self.received == signal.SIGINT:  # whatever was there before (a background job starts with it ignored)
            ctrl_c_exit()
        if callable(handler):
            handler(self.received, None)


class HeldWhileRecording:
    """Within ``with``: stop signals act as before until ``hold()``; from then on one waits until the exit.

    The runner holds them from the moment a job ends until its record is on disk: torchrun sends
    SIGTERM to the surviving ranks as soon as one dies, and the default action would end rank 0
    between the failure and its record. On exit the held signal goes to the handler that was there
    before (the default one ends the process, after the record).
    """

    def __init__(self) -> None:
        self.holding = False
        self.held: int | None = None
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.holding:
            self.held = self.held or signum
        else:
            self._deliver(signum, frame)

    def _deliver(self, signum: int, frame: FrameType | None) -> None:
        handler = self.previous.get(signum, signal.SIG_DFL)
        if signum == signal.SIGINT and self.holding:
            ctrl_c_exit()  # held until the record was written: the run is saved
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:  # the default action (termination) needs the default handler back
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    def hold(self) -> None:
        self.holding = True

    def __enter__(self) -> "HeldWhileRecording":
        self.previous = install(self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        restore(self.previous)
        if self.held is not None:
            log.warning("passing on %s now that the record is written", signal.Signals(self.held).name)
            self._deliver(self.held, None)
