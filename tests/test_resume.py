"""Resume: a run stopped anywhere continues to exactly the weights and metrics of the run left alone.

In-process, a callback crashes the run mid-epoch or after an epoch; through the CLI, the
process is killed with SIGKILL, or asked to stop with SIGTERM / SIGUSR1 (the SLURM path).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate

from suite.runtime.files import atomic_save
from suite.runtime.record import RESULT_FILE, read_result
from suite.training.callbacks import Callback
from suite.training.checkpoint import LAST
from suite.training.schedules import warmup_cosine
from suite.training.trainer import Trainer
from tasks.long_range import build
from tests.conftest import compose_config, need_data, shrink

ROOT = Path(__file__).resolve().parents[1]


class Crash(Callback):
    """Fails the run when it reaches ``step`` (as a kill would, after the last checkpoint)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, state) -> None:
        if state.step == self.step:
            raise RuntimeError("crash")


def make_trainer(**kw) -> Trainer:
    settings = dict(
        name="t",
        optimizer=lambda params: torch.optim.AdamW(params, lr=3e-3),
        scheduler=lambda o, total_steps: warmup_cosine(o, total_steps, warmup_steps=3),
        max_epochs=3,
        batch_size=8,
        progress=False,
    )
    return Trainer(**(settings | kw))


def recall_task():
    task = build("long_range", problem="recall", seq_len=8, n_train=64, n_val=32, n_test=32)
    task.setup()
    return task, shrink(compose_config("model=transformer")).model  # dropout on: the random state must be restored too


def fresh(task, model_cfg, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)  # as the runner does before building
    return task.build_model(model_cfg)


def crash_with_a_checkpoint(task, model_cfg, checkpoint_dir: Path, identity: dict) -> None:
    """A run that saves ``last.pt`` after every step and crashes in step 3's callbacks (its last save: step 2)."""
    with pytest.raises(RuntimeError, match="crash"):
        make_trainer(checkpoint_every_s=0).fit(
            fresh(task, model_cfg),
            task,
            torch.device("cpu"),
            seed=0,
            checkpoint_dir=checkpoint_dir,
            callbacks=[Crash(3)],
            identity=identity,
        )


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def crash_and_resume(task, model_cfg, tmp_path: Path, crash_at: int, **trainer_kw):
    """(uninterrupted fit, resumed fit) on the same seed."""
    cpu = torch.device("cpu")
    whole = make_trainer(**trainer_kw).fit(fresh(task, model_cfg), task, cpu, seed=0)
    with pytest.raises(RuntimeError, match="crash"):
        make_trainer(**trainer_kw).fit(
            fresh(task, model_cfg), task, cpu, seed=0, checkpoint_dir=tmp_path, callbacks=[Crash(crash_at)]
        )
    assert (tmp_path / LAST).is_file()
    resumed = make_trainer(**trainer_kw).fit(fresh(task, model_cfg), task, cpu, seed=0, checkpoint_dir=tmp_path)
    return whole, resumed


@pytest.mark.parametrize(
    "every_s, resumed_at", [(0.0, 10), (None, 8)]
)  # a checkpoint each step (mid-epoch) / at epoch ends only
def test_crashed_run_resumes_to_the_same_weights_and_metrics(tmp_path, every_s, resumed_at):
    task, model_cfg = recall_task()
    whole, resumed = crash_and_resume(task, model_cfg, tmp_path, crash_at=11, checkpoint_every_s=every_s)
    assert resumed.resumed_at == resumed_at and whole.resumed_at is None
    assert_same_weights(whole.model, resumed.model)
    assert (whole.steps, whole.epochs, whole.best_epoch, whole.val) == (
        resumed.steps,
        resumed.epochs,
        resumed.best_epoch,
        resumed.val,
    )
    cpu = torch.device("cpu")
    assert make_trainer().score(whole.model, task, cpu, 0)[0] == make_trainer().score(resumed.model, task, cpu, 0)[0]
    assert (
        not (tmp_path / LAST).exists() and (tmp_path / "best.pt").is_file()
    )  # a finished run keeps its best weights only


def test_a_resumed_run_continues_one_learning_curve(tmp_path):
    """Validations mid-epoch (``evaluations``): the resumed run's curve is the uninterrupted run's, point for point
    (the seconds aside: they are the runs' own)."""
    task, model_cfg = recall_task()
    whole, resumed = crash_and_resume(task, model_cfg, tmp_path, crash_at=11, checkpoint_every_s=0.0, evaluations=6)
    assert resumed.resumed_at == 10 and whole.curves["step"] == [4.0, 8.0, 12.0, 16.0, 20.0, 24.0]
    for key in whole.curves.keys() - {"seconds"}:
        assert whole.curves[key] == resumed.curves[key], key
    assert whole.convergence == resumed.convergence


def test_length_bucketed_batches_resume_exactly(tmp_path):
    """Translation: the batch order comes from a custom batch sampler's generator, and the loader draws from the global
    generator."""
    need_data("translation", "multi30k")
    cfg = shrink(compose_config("task=translation", "task.vocab_size=600", "model=transformer"))
    task = instantiate(cfg.task)
    task.setup()
    whole, resumed = crash_and_resume(
        task,
        cfg.model,
        tmp_path,
        crash_at=7,
        checkpoint_every_s=0.0,
        max_epochs=2,
        limit_train_batches=5,
        limit_eval_batches=1,
        eval_batch_size=8,
    )
    assert resumed.resumed_at == 6
    assert_same_weights(whole.model, resumed.model)
    assert whole.val == resumed.val


def test_a_checkpoint_of_another_configuration_is_refused_with_the_difference(tmp_path):
    task, model_cfg = recall_task()
    cpu = torch.device("cpu")
    crash_with_a_checkpoint(task, model_cfg, tmp_path, {"seed": 0, "model": {"d_model": 32}})
    with pytest.raises(ValueError, match=r"another configuration \(model.d_model: 32 -> 64"):
        make_trainer().fit(
            fresh(task, model_cfg),
            task,
            cpu,
            seed=0,
            checkpoint_dir=tmp_path,
            identity={"seed": 0, "model": {"d_model": 64}},
        )
    saved = torch.load(tmp_path / LAST, weights_only=False)
    saved["model"] = {"unrelated.weight": torch.zeros(1)}
    atomic_save(saved, tmp_path / LAST)
    with pytest.raises(ValueError, match="does not fit this model"):
        make_trainer().fit(
            fresh(task, model_cfg),
            task,
            cpu,
            seed=0,
            checkpoint_dir=tmp_path,
            identity={"seed": 0, "model": {"d_model": 32}},
        )


class Planted:
    """A pickle that runs code when loaded: it would create ``self.path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_every_checkpoint_loads_as_weights_only_and_a_crafted_pickle_is_refused_unrun(tmp_path):
    task, model_cfg = recall_task()
    cpu = torch.device("cpu")
    crash_with_a_checkpoint(task, model_cfg, tmp_path, {"seed": 0})
    saved = torch.load(tmp_path / LAST, weights_only=True)  # what resuming reads: tensors and plain values only
    assert saved["step"] == 2  # saved after every step; the crash came in step 3's callbacks, before its save
    planted = tmp_path / "code-ran"
    torch.save(saved | {"callbacks": [Planted(planted)]}, tmp_path / LAST)
    with pytest.raises(ValueError, match="more than tensors and plain values"):
        make_trainer().fit(fresh(task, model_cfg), task, cpu, seed=0, checkpoint_dir=tmp_path, identity={"seed": 0})
    assert not planted.exists()


def test_resume_to_a_missing_file_names_it(tmp_path):
    task, model_cfg = recall_task()
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "nowhere.pt")):
        make_trainer(resume=str(tmp_path / "nowhere.pt")).fit(fresh(task, model_cfg), task, torch.device("cpu"), seed=0)


def test_atomic_save_leaves_the_old_file_whole_when_the_write_fails(tmp_path):
    path = tmp_path / "x.pt"
    atomic_save({"a": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("cannot pickle")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        atomic_save({"a": Unpicklable()}, path)
    assert torch.load(path) == {"a": 1} and [p.name for p in tmp_path.iterdir()] == ["x.pt"]


# --- through the command line: SIGKILL, and the scheduler's signals ---------------------------------

CLI = [
    "task=long_range",
    "task.problem=recall",
    "task.seq_len=8",
    "task.n_train=2048",
    "task.n_val=64",
    "task.n_test=64",
    "model=lstm",
    "model.d_model=32",
    "trainer=smoke",
    "trainer.limit_train_batches=null",
    "trainer.limit_eval_batches=null",
    "trainer.max_epochs=2",
    "trainer.max_steps=null",
    "trainer.batch_size=8",
    "trainer.checkpoint_every_s=0",
    "logger=none",
    "trainer.precision=fp32",
]


def start(run_dir: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "suite.run", *CLI, *extra, f"hydra.run.dir={run_dir}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for_step(run_dir: Path, proc: subprocess.Popen, at_least: int, timeout: float = 300) -> int:
    """Block until the run's last.pt holds at least ``at_least`` steps (and is mid-epoch); its step."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        try:
            saved = torch.load(run_dir / "checkpoints" / LAST, weights_only=False)
            if saved["step"] >= at_least:
                return saved["step"]
        except (FileNotFoundError, EOFError, RuntimeError):
            pass
        time.sleep(0.05)
    raise AssertionError("the run never reached the step")


def finish(run_dir: Path, *extra: str):
    proc = start(run_dir, *extra)
    out = proc.communicate(timeout=600)[0]
    assert proc.returncode == 0, out[-3000:]
    return read_result(run_dir / RESULT_FILE), torch.load(run_dir / "checkpoints" / "best.pt")


@pytest.mark.slow
def test_a_run_killed_mid_epoch_resumes_to_the_same_result(tmp_path):
    whole, whole_best = finish(tmp_path / "whole")
    proc = start(tmp_path / "killed")
    wait_for_step(tmp_path / "killed", proc, at_least=80)  # 256 steps an epoch: mid-epoch 1
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed, resumed_best = finish(tmp_path / "killed")
    assert resumed.status == "ok" and resumed.resumed_at is not None and 80 <= resumed.resumed_at < 256
    assert resumed.metrics == whole.metrics and resumed.steps == whole.steps
    assert all(torch.equal(whole_best[k], resumed_best[k]) for k in whole_best)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1])
def test_a_stop_signal_saves_records_interrupted_and_the_rerun_finishes(tmp_path, sig):
    proc = start(tmp_path)
    wait_for_step(tmp_path, proc, at_least=40)
    proc.send_signal(sig)
    out = proc.communicate(timeout=300)[0]
    record = read_result(tmp_path / RESULT_FILE)
    assert record.status == "interrupted" and "resume" in record.error, out[-2000:]
    assert torch.load(tmp_path / "checkpoints" / LAST, weights_only=False)["step"] >= 40
    resumed, _ = finish(tmp_path)
    assert resumed.status == "ok" and resumed.resumed_at >= 40


@pytest.mark.slow
def test_a_sweep_stopped_with_ctrl_c_resumes_in_its_own_directory_when_the_same_command_runs_again(tmp_path):
    """No hydra.sweep.dir: the default directory comes from the command's settings, so the same command finds it."""
    command = [sys.executable, "-m", "suite.run", "-m", *CLI[:-1], "trainer.precision=fp32", "seed=0,1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob("multirun/*/long_range-lstm-s1/checkpoints/last.pt")):  # seed 0 done, seed 1 going
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()[-3000:]
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130 and "Traceback" not in out and "run the same command again" in out, out[-3000:]
    (sweep,) = tmp_path.glob("multirun/*")
    first, second = (read_result(sweep / f"long_range-lstm-s{s}" / RESULT_FILE) for s in (0, 1))
    assert first.status == "ok" and second.status == "interrupted"
    again = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "already finished with this config" in again.stdout + again.stderr
    resumed = read_result(sweep / "long_range-lstm-s1" / RESULT_FILE)
    assert resumed.status == "ok" and resumed.resumed_at is not None and resumed.resumed_at > 0
    assert read_result(sweep / "long_range-lstm-s0" / RESULT_FILE).wall_seconds == first.wall_seconds  # not rerun
