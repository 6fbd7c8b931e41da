"""Replaying finished runs against a changed convergence test (suite/training/rejudge.py): a run the current test would
have stopped at the same validation keeps its record under the current test; one it would have let go on is removed
to run again; a second pass finds everything current."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from suite.training.convergence import PLATEAUED, STILL_LEARNING, ConvergenceTest
from suite.training.rejudge import main, rejudge, replay

# the test as records made before ``recent`` existed name it
OLD = dict(window=0.5, min_evaluations=5, min_gain=0.05, alpha=0.05, noise_multiple=2, min_relative=0.02, explode=100)
STEPS = [float(s) for s in range(75, 601, 75)]
JUMPED = [0.281, 0.297, 0.302, 0.312, 0.304, 0.317, 0.344, 0.761]  # a real run's curve where the old rule stopped it
FLAT = [0.281, 0.297, 0.302, 0.312, 0.304, 0.317, 0.309, 0.311]


def record(values: list[float], stop_reason: str, steps: list[float] = STEPS, status: str = "ok") -> dict:
    verdict = ConvergenceTest(recent=0).judge(steps, values, "accuracy").record()
    return {
        "status": status,
        "stop_reason": stop_reason,
        "config": {"trainer": {"stop_on_plateau": 300, "max_steps": 1500, "convergence": dict(OLD)}},
        "curves": {"step": steps, "val_accuracy": values},
        "convergence": verdict,
    }


def write(folder: Path, name: str, data: dict) -> Path:
    (folder / name).mkdir(parents=True)
    (folder / name / "result.json").write_text(json.dumps(data, indent=2) + "\n")
    return folder / name


def test_the_old_rule_s_stop_mid_jump_is_another_run_and_a_flat_stop_is_the_same_run():
    assert ConvergenceTest(recent=0).judge(STEPS, JUMPED, "accuracy").verdict == PLATEAUED  # why the old rule stopped
    assert replay(record(JUMPED, "plateaued"))[0] == "rerun"
    what, verdict = replay(record(FLAT, "plateaued"))
    assert what == "updated" and verdict["verdict"] == PLATEAUED and verdict["rejudged"]
    assert verdict["test"]["recent"] == ConvergenceTest().recent


def test_a_run_to_its_cap_keeps_its_run_and_takes_the_current_verdict():
    """Without the plateau stop a run goes to its cap under any test: the same run, judged again (a jump at its last
    validation: plateaued by the line alone, still learning now)."""
    steps = [float(s) for s in range(75, 1501, 75)]
    values = list(0.40 + 0.01 * np.sin(np.arange(20) * 1.7))[:-1] + [0.6]
    data = record(values, "max_steps", steps)
    data["config"]["trainer"]["stop_on_plateau"] = None
    assert data["convergence"]["verdict"] == PLATEAUED
    what, verdict = replay(data)
    assert what == "updated" and verdict["verdict"] == STILL_LEARNING and "its last evaluation is" in verdict["reason"]


def test_a_capped_run_the_current_test_would_have_stopped_before_its_end_is_another_run():
    steps = [float(s) for s in range(75, 1501, 75)]
    assert replay(record([0.3] * 4 + [0.5] * 16, "max_steps", steps))[0] == "rerun"  # flat from step 375 on


def test_a_target_reached_keeps_its_verdict_under_the_current_parameters():
    data = record([0.3, 0.5, 0.7, 0.9, 0.95, 0.97, 0.98, 0.995], "target_reached")
    data["convergence"] = ConvergenceTest(**OLD).reached(0.99, "accuracy").record()
    what, verdict = replay(data)
    assert what == "updated" and "trainer.stop_at" in verdict["reason"] and verdict["test"]["recent"] == 0.25


def test_a_run_that_did_not_finish_under_the_old_test_is_run_again_and_one_without_a_curve_is_left_alone():
    """An interrupted run's last.pt names the old test (a resume would be refused); a failed one is rerun anyway."""
    assert replay(record(FLAT, "plateaued", status="interrupted"))[0] == "rerun"
    assert replay(record(FLAT, "plateaued", status="failed"))[0] == "rerun"
    current = record(FLAT, "plateaued", status="interrupted")
    current["config"]["trainer"]["convergence"] = {**OLD, "recent": 0.25}
    assert replay(current)[0] == "current"  # one interrupted under the current test resumes
    bare = record(FLAT, "plateaued")
    bare["curves"] = {}
    assert replay(bare)[0] == "skipped"
    assert replay({"status": "ok", "config": {"job": "timing"}})[0] == "skipped"


def test_apply_rewrites_removes_and_a_second_pass_finds_everything_current(tmp_path, capsys):
    jumped = write(tmp_path, "jumped", record(JUMPED, "plateaued"))
    flat = write(tmp_path / "knob-x", "flat", record(FLAT, "plateaued"))
    listed = rejudge(tmp_path)
    assert listed.rerun == [jumped] and listed.updated == [flat] and jumped.exists()  # without apply: nothing moves
    assert json.loads((flat / "result.json").read_text())["config"]["trainer"]["convergence"] == OLD
    assert main([str(tmp_path), "--apply"]) == 0
    assert "to run again under the current test (removed): " in capsys.readouterr().out
    assert not jumped.exists()
    kept = json.loads((flat / "result.json").read_text())
    assert kept["config"]["trainer"]["convergence"] == {**OLD, "recent": 0.25}
    assert kept["convergence"]["rejudged"] and kept["curves"]["val_accuracy"] == FLAT
    again = rejudge(tmp_path)
    assert again.current == 1 and not again.updated and not again.rerun


def test_a_missing_folder_is_refused_by_name(tmp_path, capsys):
    import pytest

    with pytest.raises(SystemExit):
        main([str(tmp_path / "nowhere")])
    assert "nowhere is not a folder of run records" in capsys.readouterr().err
