"""experiment=tune: the declared spaces, the stored study, pruning, the ask-and-tell loop, its resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from suite.run import execute
from suite.runtime.record import RESULT_FILE, ResultRecord, read_result
from suite.tune.driver import Plan, Tuning, trial_dir, trial_outcome
from suite.tune.pruning import PRUNED, ReportToStudy
from suite.tune.shapes import kept_shapes, parameter_counts
from suite.tune.space import Space, SpaceError
from suite.tune.study import STUDY_FILE, StudyMismatch, open_study, storage_url
from suite.tune.sweep import family_space as family_space_of
from suite.tune.sweep import fixed_arguments
from tests.conftest import TINY_LONG_RANGE, compose_config, need_data

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = {"transformer": "transformer", "lstm": "recurrent", "gru": "recurrent"}


def family_space(model: str) -> Space:
    cfg = compose_config("experiment=tune", f"model={model}", tiny=False)
    return Space.from_config(cfg.tune.spaces[model], model)


def tune_config(*overrides: str):
    return compose_config("experiment=tune", *overrides, tiny=False)


@pytest.mark.parametrize("model", sorted(FAMILIES))
def test_each_family_space_names_only_keys_the_config_has_and_trial_zero_is_the_default(model):
    cfg = tune_config(f"model={model}", "task=dna")
    space = family_space(model)
    space.check_keys(cfg, model)
    default = space.defaults(cfg)
    assert default is not None, "the default setting must be a point of the space (trial 0)"
    same = tune_config(f"model={model}", "task=dna", *space.overrides(default))
    for key in [k for p in space.params for k in p.all_keys()]:
        assert OmegaConf.select(same, key) == OmegaConf.select(cfg, key), key


def test_a_space_key_the_config_lacks_is_named_before_any_training():
    space = Space.from_config(
        [{"name": "lr", "keys": ["trainer.optimizer.lrr"], "type": "float", "low": 1e-4, "high": 1e-2}], "bad.yaml"
    )
    with pytest.raises(SpaceError, match=r"trainer\.optimizer\.lrr"):
        space.check_keys(tune_config("model=lstm", "task=dna"), "task=dna, model=lstm")


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"name": "lr", "keys": ["a"], "type": "float", "low": 1.0, "high": 0.1}, "low < high"),
        ({"name": "lr", "type": "float", "low": 0.1, "high": 1.0}, "names no config keys"),
        ({"name": "b", "keys": ["a"], "type": "categorical", "choices": [1]}, "at least two"),
        ({"name": "x", "keys": ["a"], "type": "uniform"}, "type in"),
        ({"name": "s", "type": "shape", "choices": {"only": {"a": 1}}}, "at least two"),
    ],
)
def test_a_malformed_parameter_is_refused_naming_its_entry(spec, message):
    with pytest.raises(SpaceError, match=message) as err:
        Space.from_config([spec], "conf/tune/x.yaml")
    assert "conf/tune/x.yaml[0]" in str(err.value)


def test_overrides_set_every_key_of_a_parameter_and_a_shape_sets_its_keys():
    space = Space.from_config(
        [
            {
                "name": "dropout",
                "keys": ["model.embed_dropout", "model.head.dropout"],
                "type": "float",
                "low": 0,
                "high": 1,
            },
            {"name": "shape", "type": "shape", "choices": {"a": {"model.d_model": 8}, "b": {"model.d_model": 16}}},
        ],
        "x",
    )
    assert space.overrides({"dropout": 0.25, "shape": "b"}) == [
        "model.embed_dropout=0.25",
        "model.head.dropout=0.25",
        "model.d_model=16",
    ]
    assert [p.name for p in space.restricted("shape", ["a"]).params] == ["dropout"]  # one shape left: not searched


def test_kept_shapes_hold_the_parameter_count_within_ten_percent():
    counts = {"default": 1000, "same": 1000, "smaller": 905, "larger": 1120}
    assert kept_shapes(counts) == ["same", "smaller"]


def test_the_declared_shapes_stay_within_ten_percent_on_dna():
    need_data("dna")
    for model in ("transformer", "lstm"):
        cfg = tune_config(f"model={model}", "task=dna")
        shape = next(p for p in family_space(model).params if p.kind == "shape")
        counts = parameter_counts(
            cfg, shape, lambda keys: tune_config(f"model={model}", "task=dna", *[f"{k}={v}" for k, v in keys.items()])
        )
        assert len(kept_shapes(counts)) == 3, counts  # every declared shape is of the default's size on this task


def test_the_study_is_a_sqlite_database_and_refuses_another_search(tmp_path):
    attrs = {"space": [{"name": "lr", "low": 0.1}], "fixed": {"task": {"name": "dna"}}}
    study = open_study(tmp_path, attrs)
    study.tell(study.ask(), 0.5)
    assert (tmp_path / STUDY_FILE).read_bytes()[:16] == b"SQLite format 3\x00"
    assert len(open_study(tmp_path, attrs).trials) == 1  # the same search: loaded, trials kept
    other = attrs | {"space": [{"name": "lr", "low": 0.2}]}
    with pytest.raises(StudyMismatch, match=r"space\.lr\.low: 0\.1 -> 0\.2"):
        open_study(tmp_path, other)


def fit_state(value: float, epoch: int) -> SimpleNamespace:
    return SimpleNamespace(
        val={"accuracy": value}, primary="accuracy", epoch=epoch, stop_reason=None, world=SimpleNamespace(main=True)
    )


def test_a_trial_reports_each_validation_and_the_pruner_stops_a_poor_one(tmp_path):
    pruner = optuna.pruners.MedianPruner(n_startup_trials=1, n_warmup_steps=0)
    study = open_study(tmp_path, {"space": []}, pruner=pruner)
    good, poor = study.ask(), study.ask()
    url = storage_url(tmp_path)
    for trial, value in ((good, 0.9), (poor, 0.1)):
        callback = ReportToStudy(url, trial.number, pruner)
        callback.on_fit_start(fit_state(value, 0))
        for epoch in (1, 2):
            state = fit_state(value, epoch)
            callback.on_validation_end(state)
            if state.stop_reason is not None:  # the loop stops the fit there
                break
        if trial is good:
            assert state.stop_reason is None
            study.tell(good, 0.9)
    assert state.stop_reason == PRUNED
    assert study.trials[poor.number].intermediate_values == {1: 0.1}  # stopped at its first report below the median
    assert study.trials[good.number].intermediate_values == {1: 0.9, 2: 0.9}


def test_outside_a_study_nothing_is_reported(tmp_path):
    callback = ReportToStudy(None, None)
    state = fit_state(0.5, 1)
    callback.on_fit_start(state)
    callback.on_validation_end(state)
    assert state.stop_reason is None


def write_record(run_dir: Path, value: float | None, stop_reason: str = "max_steps", status: str = "ok") -> None:
    metrics = {"val_accuracy": value} if value is not None else {}
    ResultRecord(
        status=status,
        task="t",
        dataset="d",
        model="m",
        seed=0,
        metrics=metrics,
        stop_reason=stop_reason,
        primary_metric="accuracy",
    ).write(run_dir)


def test_trial_outcomes_follow_the_record(tmp_path):
    write_record(tmp_path / "a", 0.7)
    write_record(tmp_path / "b", 0.2, stop_reason=PRUNED)
    write_record(tmp_path / "c", None, status="diverged")
    states = [trial_outcome(tmp_path / d)[:2] for d in ("a", "b", "c", "missing")]
    S = optuna.trial.TrialState
    assert states == [(S.COMPLETE, 0.7), (S.PRUNED, None), (S.FAIL, None), (S.FAIL, None)]


class FakeLaunch:
    """Writes each job's record as a run would: validation accuracy from the learning rate (best at 1e-3)."""

    def __init__(self, sweep_dir: Path, kill_at_launch: int | None = None) -> None:
        self.sweep_dir, self.kill_at_launch, self.launches, self.jobs = sweep_dir, kill_at_launch, 0, []

    def __call__(self, jobs, first):
        self.launches += 1
        if self.launches == self.kill_at_launch:
            raise KeyboardInterrupt("killed")
        for job in jobs:
            values = dict(o.split("=", 1) for o in job)
            self.jobs.append(values["hydra.sweep.subdir"])
            lr = float(values.get("trainer.optimizer.lr", 1e-3))
            write_record(self.sweep_dir / values["hydra.sweep.subdir"], 1.0 - abs(lr - 1e-3) * 100)


SPACE = Space.from_config(
    [{"name": "lr", "keys": ["trainer.optimizer.lr"], "type": "float", "low": 1e-4, "high": 1e-2, "log": True}], "x"
)


def tuning(sweep_dir: Path, launch: FakeLaunch, n_trials: int = 6) -> Tuning:
    sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=3)
    study = open_study(sweep_dir, {"space": SPACE.describe()}, sampler=sampler)
    return Tuning(study, SPACE, Plan(n_trials, 2, (0, 1)), launch, sweep_dir)


def test_the_loop_runs_the_default_first_then_the_finals_on_test(tmp_path):
    launch = FakeLaunch(tmp_path)
    summary = tuning(tmp_path, launch).run(default={"lr": 1e-3})
    assert summary["trials"][0]["params"] == {"lr": 1e-3} and summary["best"]["number"] == 0
    assert summary["states"]["COMPLETE"] == 6
    assert launch.jobs == [trial_dir(n) for n in range(6)] + ["tuned-s0", "tuned-s1", "default-s0", "default-s1"]
    assert json.loads((tmp_path / "tune.json").read_text())["best"]["params"] == {"lr": 1e-3}


def test_a_killed_study_resumes_its_running_trials_in_their_directories_and_repeats_nothing(tmp_path):
    killed = FakeLaunch(tmp_path, kill_at_launch=2)  # the second pair of trials is asked, then the study is killed
    with pytest.raises(KeyboardInterrupt):
        tuning(tmp_path, killed).run(default={"lr": 1e-3})
    assert killed.jobs == ["trial-000", "trial-001"]
    resumed = FakeLaunch(tmp_path)
    summary = tuning(tmp_path, resumed).run(default={"lr": 1e-3})
    assert resumed.jobs[:2] == ["trial-002", "trial-003"]  # the pair left running, in their own directories
    assert resumed.jobs[2:4] == ["trial-004", "trial-005"]
    assert [t["number"] for t in summary["trials"]] == list(range(6))
    assert summary["states"]["COMPLETE"] == 6


def test_a_trial_scores_validation_only(tmp_path):
    cfg = compose_config(*TINY_LONG_RANGE, "job.test=false")
    record = execute(cfg, tmp_path)
    assert record.status == "ok"
    assert record.metrics and all(k.startswith("val_") for k in record.metrics)
    assert not (tmp_path / "predictions_test.jsonl").exists()


TINY_STUDY = [
    "experiment=tune",
    *TINY_LONG_RANGE,
    "model=lstm",
    "logger=none",
    "tune.n_trials=3",
    "tune.n_jobs=1",
    "tune.seeds=[0]",
    "trainer.max_steps=4",
    "trainer.max_epochs=2",
    "trainer.batch_size=8",
    "trainer.eval_batch_size=8",
]


def run_study(sweep_dir: Path, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="1")
    command = [sys.executable, "-m", "suite.run", "-m", *TINY_STUDY, f"hydra.sweep.dir={sweep_dir}", *extra]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, **kwargs)


@pytest.mark.slow  # about 40 s: the whole sweeper through Hydra (the loop itself is tested fast above)
def test_a_study_runs_end_to_end_and_a_second_run_repeats_nothing(tmp_path):
    done = run_study(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "tune.json").read_text())
    assert summary["states"]["COMPLETE"] + summary["states"]["PRUNED"] == 3
    trial = read_result(tmp_path / "trial-001" / RESULT_FILE)
    assert trial.config["tune"]["trial"] == 1 and not any(not k.startswith("val_") for k in trial.metrics)
    for final in ("tuned-s0", "default-s0"):
        assert "accuracy" in read_result(tmp_path / final / RESULT_FILE).metrics
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.glob("*/" + RESULT_FILE)}
    again = run_study(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.glob("*/" + RESULT_FILE)} == stamps
    assert len(optuna.load_study(study_name="tune", storage=storage_url(tmp_path)).trials) == 3
    other = run_study(tmp_path, "tune.spaces.lstm.0.high=0.01")  # the study directory of another search space
    assert other.returncode != 0 and "holds a study of another search (space.lr.high: 0.003 -> 0.01)" in other.stderr
    assert len(list(tmp_path.glob("trial-*"))) == 3


def test_a_swept_command_or_a_family_without_a_space_is_refused():
    parser = OverridesParser.create()
    with pytest.raises(SpaceError, match="tunes one task and one model"):
        fixed_arguments(["task=dna", "model=lstm,gru"], parser)
    assert fixed_arguments(["task=dna", "model=lstm"], parser) == ["task=dna", "model=lstm"]
    with pytest.raises(SpaceError, match=r"no search space for model family 'vit'.*conf/tune/vit\.yaml"):
        family_space_of(tune_config().tune.spaces, "vit")


@pytest.mark.slow
def test_a_study_killed_mid_trial_resumes_and_finishes(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    command = [
        sys.executable,
        "-m",
        "suite.run",
        "-m",
        *TINY_STUDY,
        f"hydra.sweep.dir={tmp_path}",
        "trainer.max_steps=400",
        "trainer.max_epochs=200",
        "task.n_train=64",
    ]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while not (tmp_path / "trial-001").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(2)
    os.killpg(proc.pid, signal.SIGKILL)  # no goodbye: the study and trial 1 are left as they were
    proc.wait()
    first = (tmp_path / "trial-000" / RESULT_FILE).stat().st_mtime_ns
    assert not (tmp_path / "trial-001" / RESULT_FILE).exists()
    done = run_study(tmp_path, "trainer.max_steps=400", "trainer.max_epochs=200", "task.n_train=64")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "trial-000" / RESULT_FILE).stat().st_mtime_ns == first  # finished trials are not run again
    study = optuna.load_study(study_name="tune", storage=storage_url(tmp_path))
    assert [t.number for t in study.trials] == [0, 1, 2] and all(t.state.is_finished() for t in study.trials)
    assert read_result(tmp_path / "trial-001" / RESULT_FILE).status == "ok"
