"""Keeping a sweep's finished runs (suite.runtime.keep): what is copied, what is left, what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.runtime.keep import keep, main
from suite.runtime.record import ResultRecord


def _record(status: str, loss: float = 1.0) -> ResultRecord:
    return ResultRecord(status=status, task="parity", dataset="parity", model="lstm", seed=0, metrics={"loss": loss})


def _run(sweep: Path, relative: str, status: str, loss: float = 1.0) -> Path:
    run_dir = sweep / relative
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "checkpoints" / "last.pt").write_bytes(b"weights")
    (run_dir / "wandb").mkdir()
    _record(status, loss).write(run_dir)
    (run_dir / "run.log").write_text(f"{relative} log\n")
    (run_dir / "predictions_test.jsonl").write_text('{"right": 3}\n')
    return run_dir


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "runs"
    _run(sweep, "parity-lstm-s0", "ok")
    _run(sweep, "knob-n_pairs-4/mqar-lstm-s0", "diverged")
    _run(sweep, "mqar-gru-s0", "interrupted")
    (sweep / "durations.jsonl").write_text('{"seconds": 10}\n')
    return sweep


def test_finished_runs_keep_their_records_at_their_paths(sweep: Path, tmp_path: Path) -> None:
    into = tmp_path / "kept"
    kept = keep(sweep, into)
    assert sorted(map(str, kept.added)) == ["knob-n_pairs-4/mqar-lstm-s0", "parity-lstm-s0"]
    assert [str(p) for p in kept.unfinished] == ["mqar-gru-s0"]
    for run in kept.added:
        assert sorted(p.name for p in (into / run).iterdir()) == ["predictions_test.jsonl", "result.json", "run.log"]
    assert json.loads((into / "knob-n_pairs-4/mqar-lstm-s0/result.json").read_text())["status"] == "diverged"
    assert not (into / "mqar-gru-s0").exists()
    assert (into / "durations.jsonl").read_text() == '{"seconds": 10}\n'


def test_a_second_call_copies_only_what_changed(sweep: Path, tmp_path: Path) -> None:
    into = tmp_path / "kept"
    keep(sweep, into)
    _record("ok").write(sweep / "mqar-gru-s0")  # the interrupted run resumed
    (sweep / "parity-lstm-s0" / "run.log").write_text("rerun\n")
    _record("ok", loss=0.5).write(sweep / "parity-lstm-s0")
    with (sweep / "knob-n_pairs-4/mqar-lstm-s0" / "run.log").open("a") as log:
        log.write("already finished with this config\n")  # a later sweep skipping it: not a change to keep
    with (sweep / "durations.jsonl").open("a") as ledger:
        ledger.write('{"seconds": 20}\n')
    kept = keep(sweep, into)
    assert [str(p) for p in kept.added] == ["mqar-gru-s0"]
    assert [str(p) for p in kept.updated] == ["parity-lstm-s0"]
    assert kept.unchanged == 1 and not kept.unfinished
    assert (into / "parity-lstm-s0" / "run.log").read_text() == "rerun\n"
    assert (into / "knob-n_pairs-4/mqar-lstm-s0" / "run.log").read_text() == "knob-n_pairs-4/mqar-lstm-s0 log\n"
    assert (into / "durations.jsonl").read_text().count("\n") == 2


def test_a_ledger_that_would_lose_lines_is_refused(sweep: Path, tmp_path: Path) -> None:
    into = tmp_path / "kept"
    into.mkdir()
    (into / "durations.jsonl").write_text('{"seconds": 99}\n')
    with pytest.raises(ValueError, match="lose them"):
        keep(sweep, into)
    assert (into / "durations.jsonl").read_text() == '{"seconds": 99}\n'


def test_bad_input_names_its_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no sweep directory"):
        keep(tmp_path / "nowhere", tmp_path / "kept")
    broken = tmp_path / "runs" / "a-run"
    broken.mkdir(parents=True)
    (broken / "result.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"a-run/result.json is not a readable result record"):
        keep(tmp_path / "runs", tmp_path / "kept")


def test_the_command_prints_what_it_did(sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main([str(sweep), str(tmp_path / "kept")])
    assert (
        capsys.readouterr().out.strip() == "2 runs added, 0 updated, 0 unchanged, 1 left out (interrupted: they resume)"
    )
