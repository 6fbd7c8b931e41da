"""Stop signals around the record: one that arrives while a job's record is written waits for it.

torchrun SIGTERMs the ranks that outlive a dead one; without the hold, rank 0 could end between
its failure and its record (CI saw a killed rank leave no result.json).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from suite.runtime.record import RESULT_FILE, read_result

ROOT = Path(__file__).resolve().parents[1]


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


GUARDED = """
    import os, signal, sys
    from pathlib import Path
    from suite.runtime.preemption import HeldWhileRecording
    with HeldWhileRecording() as signals:
        {hold}
        os.kill(os.getpid(), signal.SIGTERM)
        Path(sys.argv[1]).write_text("recorded")
    print("went on")
"""


def test_a_held_signal_waits_for_the_record_then_ends_the_process(tmp_path):
    out = python(GUARDED.format(hold="signals.hold()"), str(tmp_path / "record"))
    assert out.returncode == -signal.SIGTERM, out.stderr
    assert (tmp_path / "record").read_text() == "recorded" and "went on" not in out.stdout


def test_before_the_hold_a_signal_acts_at_once(tmp_path):
    out = python(GUARDED.format(hold="pass"), str(tmp_path / "record"))
    assert out.returncode == -signal.SIGTERM and not (tmp_path / "record").exists()


def test_a_held_signal_goes_to_the_handler_that_was_there_before(tmp_path):
    out = python(
        """
        import os, signal
        from suite.runtime.preemption import HeldWhileRecording
        signal.signal(signal.SIGUSR1, lambda signum, frame: print("requeued", signum))
        with HeldWhileRecording() as signals:
            signals.hold()
            os.kill(os.getpid(), signal.SIGUSR1)
            print("record")
        print("went on")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["record", f"requeued {int(signal.SIGUSR1)}", "went on"]


class SignalOnFinish:
    """A tracker that SIGTERMs its own process as the runner finishes it (after the job, before the record)."""

    def __init__(self, **_: object) -> None:
        self.run_dir = None

    def log(self, metrics: dict[str, float], step: int) -> None:
        pass

    def summary(self, values: dict) -> None:
        pass

    def table(self, key: str, columns: list[str], rows: list) -> None:
        pass

    def finish(self, exit_code: int = 0) -> None:
        os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize(("d_model", "status"), [(32, "ok"), (30, "failed")])  # 30: 4 heads cannot split it
def test_a_run_signalled_between_its_end_and_its_record_still_writes_it(tmp_path, d_model, status):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "suite.run",
            f"hydra.run.dir={tmp_path}",
            "task=long_range",
            "task.seq_len=16",
            "model=transformer",
            f"model.d_model={d_model}",
            "trainer=smoke",
            "logger._target_=tests.test_stop_signals.SignalOnFinish",
            "~logger.project",
            "~logger.mode",
        ],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == -signal.SIGTERM, out.stderr[-2000:]
    assert read_result(tmp_path / RESULT_FILE).status == status
