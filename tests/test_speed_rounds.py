"""suite.tools.speed_rounds: arms run in alternating rounds, a directory a run, resumed; each round's ratio, the median
and range over rounds, a failed run shown by its status."""

from __future__ import annotations

import subprocess

import pytest

from suite.runtime.record import RESULT_FILE, read_result
from suite.tools import speed_rounds
from suite.tools.speed_rounds import main, parse_arm, rounds_table

TINY_SPEED = [
    "experiment=speed_vs_length", "model=lstm", "model.d_model=16", "task.seq_len=16", "job.batch_size=2",
    "job.min_time_s=0", "job.repeats=2", "job.warmup=1", "job.measure_peak=false",
]  # fmt: skip


def test_each_round_has_its_ratio_and_the_rounds_their_median_and_range():
    found = {1: {"a": 300.0, "b": 100.0}, 2: {"a": 330.0, "b": 110.0}, 3: {"a": 500.0, "b": 100.0}, 4: {"b": 90.0}}
    found[4]["a"] = "oom"
    rows = rounds_table(found, ["a", "b"], "b")
    assert [r["a / b"] for r in rows[:4]] == ["3.00x", "3.00x", "5.00x", ""]  # a failed run: its status, no ratio
    assert rows[3]["a"] == "oom" and rows[3]["b"] == "90"
    assert rows[4] == {"round": "median", "a": "330", "b": "100", "a / b": "3.00x"}
    assert rows[5] == {"round": "range", "a": "300 - 500", "b": "90 - 110", "a / b": "3.00x - 5.00x"}
    with pytest.raises(ValueError, match="baseline arm 'c' is not among the arms"):
        rounds_table(found, ["a", "b"], "c")


def test_an_arm_is_a_name_and_its_overrides():
    assert parse_arm("loop=") == ("loop", [])
    assert parse_arm("pscan=model.backbone.kernel=pscan job.batch_size=4") == (
        "pscan", ["model.backbone.kernel=pscan", "job.batch_size=4"]
    )  # fmt: skip
    for bad in ("loop", "a b=x", "=x"):
        with pytest.raises(ValueError, match="expected NAME=OVERRIDES"):
            parse_arm(bad)


@pytest.mark.slow  # two speed jobs, each a process of its own
def test_a_series_runs_every_arm_a_round_in_its_own_directory_and_resumes(tmp_path, monkeypatch):
    rows = main(["--out", str(tmp_path), "--rounds", "1", "--arm", "w16=", "--arm", "w8=model.d_model=8", "--",
                 *TINY_SPEED])  # fmt: skip
    records = {arm: read_result(tmp_path / f"{arm}-1" / RESULT_FILE) for arm in ("w16", "w8")}
    assert all(r.status == "ok" for r in records.values())
    assert records["w8"].config["model"]["d_model"] == 8 and records["w16"].config["model"]["d_model"] == 16
    ratio = records["w16"].speed["train_tokens_per_s"] / records["w8"].speed["train_tokens_per_s"]
    assert rows[0]["w16 / w8"] == f"{ratio:.2f}x" and rows[1]["round"] == "median"

    def no_run(*args, **kwargs):
        raise AssertionError("a finished run was started again")

    monkeypatch.setattr(subprocess, "run", no_run)
    assert main(["--out", str(tmp_path), "--arm", "w16=", "--arm", "w8=model.d_model=8", "--rounds", "1", "--",
                 *TINY_SPEED]) == rows  # fmt: skip
    assert speed_rounds.figures(tmp_path, "train_tokens_per_s")[0].keys() == {1}


def test_a_table_without_runs_or_arms_without_a_job_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no finished runs named <arm>-<round>"):
        main(["--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--arm", "a="])
