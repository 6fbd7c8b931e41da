"""The capability map's time budget (tasks/capabilities/budget.py), from synthetic records: the plan's run count per
task, the finished runs' seconds, the runs to go estimated at the model's own rate on that task and never at another
task's or another model's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tasks.capabilities.budget import budget, main, planned_runs, rows
from tasks.capabilities.map import MapConfig
from tasks.capabilities.probe import probed_tasks, ratio, settings, table
from tests.test_capability_report import run

PLAN = MapConfig(
    tasks=["parity", "mqar"],
    models=["lstm", "transformer"],
    sizes=[100_000, 400_000],
    lrs=[3e-4, 1e-3, 3e-3],
    seeds=[0, 1, 2],
    overrides={},
    task_overrides={},
    sweep_dir=Path("runs/capabilities"),
    knobs={"mqar": {"n_pairs": [4, 16]}, "elsewhere": {"x": [1]}},
)


def timed(record, seconds: float, training: float | None = None):
    return dataclasses.replace(record, wall_seconds=seconds, train_seconds=training)


def test_the_plan_counts_the_grid_the_other_seeds_and_the_knob_stage():
    # 3 rates, 2 more seeds; MQAR's knob: 2 values x 3 seeds; a knob of a task not in the map counts nowhere
    assert planned_runs(PLAN, "parity") == 3 + 2 and planned_runs(PLAN, "mqar") == 3 + 2 + 6


def test_each_task_is_estimated_from_the_same_models_runs_of_it_alone():
    records = [
        timed(run("lstm", "parity", 1e-3, 0, 0.6), 10.0),
        timed(run("lstm", "parity", 3e-3, 0, 1.0), 30.0),
        timed(run("lstm", "parity", 3e-3, 1, None), 500.0),  # failed: to go again, its seconds not counted
        timed(run("lstm", "mqar", 1e-3, 0, 0.5), 100.0),
        timed(run("transformer", "mqar", 1e-3, 0, 0.9, params=390_000), 72.0),
    ]
    lines = {(line.model, line.size): line for line in budget(records, PLAN)}
    assert set(lines) == {(m, s) for m in PLAN.models for s in PLAN.sizes}
    lstm = lines[("lstm", 100_000)]
    assert lstm.seconds == {"parity": [10.0, 30.0], "mqar": [100.0]} and lstm.to_go == 3 + 10
    # parity's 3 left at its own mean (20 s), MQAR's 10 at its own (100 s): never one mean for both
    assert lstm.hours_to_go(2) == pytest.approx((3 * 20 + 10 * 100) / 2 / 3600) and lstm.unestimated == 0
    big = lines[("transformer", 400_000)]
    assert big.hours_to_go(1) == pytest.approx(10 * 72 / 3600) and big.unestimated == 5  # parity: not run, not guessed
    assert lines[("transformer", 100_000)].hours_to_go(2) == 0 and lines[("transformer", 100_000)].unestimated == 16
    table = rows(list(lines.values()), jobs=2)
    total = table[-1]
    assert total["model"] == "all" and total["finished"] == "4" and total["to go"] == str(4 * 16 - 4)
    expected = (3 * 20 + 10 * 100) / 2 / 3600 + 10 * 72 / 2 / 3600
    assert total["hours to go at 2 at a time"] == f"{expected:.1f} + {5 + 16 + 16} runs not yet estimated"
    assert table[0]["s a run"] == "47" and table[0]["hours of a core"] == f"{140 / 3600:.2f}"


def test_a_variant_plans_its_own_tasks_alone():
    plan = dataclasses.replace(PLAN, variants={"lstm_variant": ["parity"]})
    lines = {(line.model, line.size): line for line in budget([timed(run("lstm", "parity", 1e-3, 0, 0.6), 10.0)], plan)}
    assert lines[("lstm_variant", 100_000)].planned == {"parity": 5} and lines[("lstm_variant", 400_000)].to_go == 5
    assert lines[("lstm", 100_000)].to_go == 5 + 11 - 1  # the models keep every task


def test_a_missing_run_directory_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no such run directory.*nowhere"):
        main([str(tmp_path / "nowhere")])


def point(model: str, task: str, params: int, step_ms: float, status: str = "ok"):
    """A step-probe record: job=speed at the map's shapes (tasks.capabilities.probe)."""
    speed = {"train_step_ms": step_ms} if status == "ok" else {}
    return dataclasses.replace(run(model, task, 3e-4, 0, None, params=params), job="speed", status=status, speed=speed)


def test_the_probe_estimates_a_size_no_run_has_reached_from_a_size_that_ran():
    records = [  # wall and training seconds: the rest (start-up, data) does not grow with the model
        timed(run("lstm", "parity", 1e-3, 0, 0.6), 10.0, 8.0),
        timed(run("lstm", "parity", 3e-3, 0, 1.0), 30.0, 28.0),
        timed(run("lstm", "mqar", 1e-3, 0, 0.5), 100.0, 90.0),
    ]
    probe = [
        point("lstm", "parity", 98_000, 20.0),
        point("lstm", "parity", 390_000, 60.0),  # parity's step 3x longer at 400,000
        point("lstm", "mqar", 98_000, 10.0),
        point("lstm", "mqar", 390_000, 120.0, status="timeout"),  # not timed: MQAR takes the other tasks' ratio
        point("transformer", "parity", 98_000, 5.0),  # the Transformer has no run anywhere: nothing to scale
        point("transformer", "parity", 390_000, 9.0),
    ]
    lines = {(line.model, line.size): line for line in budget(records, PLAN, probe)}
    big = lines[("lstm", 400_000)]
    # parity: 2 s of start-up and 18 s of training at 100,000, the training x 3; MQAR: 10 + 90 x 3, parity's ratio
    # being the only one timed
    assert big.probed == pytest.approx({"parity": 2 + 18 * 3, "mqar": 10 + 90 * 3}) and big.unestimated == 0
    assert big.probed_hours(2) == pytest.approx((5 * 56 + 11 * 280) / 2 / 3600) == big.hours_to_go(2)
    assert lines[("lstm", 100_000)].probed == {}  # the measured size keeps its own means
    assert lines[("transformer", 400_000)].probed == {} and lines[("transformer", 400_000)].unestimated == 16
    table = {(r["model"], r["size"]): r for r in rows(list(lines.values()), jobs=2)}
    assert table[("lstm", "400,000")]["of them from the probe"] == f"{(5 * 56 + 11 * 280) / 2 / 3600:.1f}"
    assert table[("lstm", "100,000")]["of them from the probe"] == ""
    # without a probe the table has no such column and the size stays unestimated, as before
    assert "of them from the probe" not in rows(budget(records, PLAN), jobs=2)[0]


def test_the_ratio_is_the_tasks_own_else_the_geometric_mean_of_the_others():
    timed_steps = {("gru", 1, "a"): 10.0, ("gru", 4, "a"): 20.0, ("gru", 1, "b"): 10.0, ("gru", 4, "b"): 80.0}
    assert ratio(timed_steps, "gru", "a", 4, 1) == 2.0 and ratio(timed_steps, "gru", "b", 1, 4) == 1 / 8
    assert ratio(timed_steps, "gru", "c", 4, 1) == pytest.approx(4.0)  # sqrt(2 x 8)
    assert ratio(timed_steps, "lstm", "a", 4, 1) is None


def test_the_probe_times_the_maps_shapes_and_a_variant_its_own_task():
    plan = dataclasses.replace(PLAN, variants={"lstm_variant": ["parity"]})
    assert probed_tasks(plan, "lstm", ["mqar"]) == ["mqar"] and probed_tasks(plan, "lstm_variant", ["mqar"]) == [
        "parity"
    ]
    assert {"job=speed", "job.batch_size=64", "job.precision=fp32"} <= set(settings(64))


def test_a_missing_probe_directory_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no such probe directory.*tasks.capabilities.probe"):
        main([str(tmp_path), "--probe", str(tmp_path / "nowhere")])


def test_the_probes_table_gives_each_step_and_its_ratio_to_the_smallest_size():
    points = [point("lstm", "parity", 390_000, 60.0), point("lstm", "parity", 98_000, 20.0),
              point("lstm", "mqar", 98_000, 10.0, status="timeout")]  # fmt: skip
    rows = table(points)
    assert [(r["size"], r["train step (ms)"], r["x the smallest size"]) for r in rows] == [
        ("100,000", "20.0", "1.00"), ("400,000", "60.0", "3.00")
    ]  # the timed-out point is not a step  # fmt: skip


def test_a_resumed_run_keeps_no_negative_start_up_and_a_run_without_training_time_scales_whole():
    # a resumed run's wall time is its last session's alone, shorter than its training restored from the checkpoint
    records = [timed(run("lstm", "parity", 1e-3, 0, 0.6), 10.0, 50.0), timed(run("lstm", "mqar", 1e-3, 0, 0.5), 100.0)]
    probe = [point("lstm", "parity", 98_000, 20.0), point("lstm", "parity", 390_000, 60.0)]
    big = {(line.model, line.size): line for line in budget(records, PLAN, probe)}[("lstm", 400_000)]
    assert big.probed == pytest.approx({"parity": 0 + 50 * 3, "mqar": 100 * 3})


def test_two_probe_points_of_one_model_size_and_task_are_refused_by_name():
    twice = [point("lstm", "parity", 98_000, 20.0), point("lstm", "parity", 99_000, 21.0)]
    with pytest.raises(ValueError, match="two points for lstm at 100,000 on parity"):
        budget([], PLAN, twice)


def test_the_probe_table_leaves_the_ratio_blank_without_the_smallest_size():
    rows = table([point("lstm", "parity", 390_000, 60.0), point("lstm", "parity", 98_000, 20.0, status="timeout")])
    assert [(r["size"], r["x the smallest size"]) for r in rows] == [("400,000", "")]


def test_a_knob_stage_run_counts_against_the_plans_knob_runs():
    knob = timed(run("lstm", "mqar", 1e-3, 0, 0.5), 40.0)
    knob.config = {**knob.config, "capability_stage": "knob", "capability_knob": "n_pairs"}
    lines = {
        (line.model, line.size): line for line in budget([timed(run("lstm", "mqar", 1e-3, 0, 0.5), 100.0), knob], PLAN)
    }
    assert lines[("lstm", 100_000)].seconds == {"mqar": [100.0, 40.0]} and lines[("lstm", 100_000)].to_go == 11 - 2 + 5


def test_each_probe_point_runs_with_a_map_jobs_threads_unless_told(monkeypatch, tmp_path):
    import tasks.capabilities.map as driver
    from tasks.capabilities.probe import main as probe

    seen = []
    monkeypatch.setattr(driver.subprocess, "run", lambda cmd, **kw: seen.append((cmd, kw["env"]["OMP_NUM_THREADS"])))
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda _: set(range(4)))  # four cores, two map jobs: two each
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    sweep = f"hydra.sweep.dir={tmp_path}"
    probe([sweep, "--models", "rnn", "--tasks", "a4", "--sizes", "100000"])
    assert [threads for _, threads in seen] == ["2"] and "job=speed" in seen[0][0]
    probe([sweep, "--models", "rnn", "--tasks", "a4", "--sizes", "100000", "--threads", "1"])
    assert seen[-1][1] == "1"  # the setting the probe made is undone with the test's (monkeypatch restores it)
