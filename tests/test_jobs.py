"""The jobs' shared preparation, what a task's config fixes before its data is read, and failure statuses."""

import pytest
import torch

from suite.jobs.prepare import planned_fields, prepare
from suite.models.classifier import count_parameters
from suite.run import execute
from suite.runtime.failures import Diverged, Interrupted, PointSkipped, PointTimeout, RunFailure, status_of
from suite.runtime.record import RESULT_FILE, read_result
from tests.conftest import CONF, compose_config, shrink

TASKS = sorted(p.stem for p in (CONF / "task").glob("*.yaml"))


def test_prepare_gives_the_task_with_its_data_and_the_model_on_the_device():
    cfg = shrink(
        compose_config(
            "task=long_range", "model=lstm", "task.seq_len=16", "task.n_train=32", "task.n_val=8", "task.n_test=8"
        )
    )
    prepared = prepare(cfg, torch.device("cpu"))
    assert prepared.task.split_sizes() == {"train": 32, "val": 8, "test": 8}  # set up
    assert prepared.params == count_parameters(prepared.model) > 0
    assert all(p.device.type == "cpu" for p in prepared.model.parameters())
    assert prepared.ok_fields() == {
        "status": "ok",
        "dataset": "recall",
        "seq_len": 16,
        "params": prepared.params,
        "split_sizes": {"train": 32, "val": 8, "test": 8},
        "data": {},  # generated: no file read
        "primary_metric": "accuracy",
        "declaration": {
            "backbone": "RecurrentEncoder",
            "family": "recurrent cells",
            "capabilities": ["causal", "padding mask", "sequence-to-sequence decoder", "step-by-step decoding"],
            "parameters": count_parameters(prepared.model.backbone),
            "state_numbers": 2 * 32,  # the LSTM's h and c, 32 wide, one layer
            "state_at_length": 16,
        },
    }


def test_prepare_takes_a_task_variant_it_is_given():
    cfg = shrink(compose_config("task=long_range", "model=transformer", "task.seq_len=16"))
    other = compose_config("task=long_range", "task.problem=listops", "task.seq_len=16")
    from hydra.utils import instantiate

    assert prepare(cfg, torch.device("cpu"), instantiate(other.task)).task.dataset == "listops"


@pytest.mark.parametrize("task", TASKS)
def test_every_task_names_its_dataset_and_length_before_reading_data(task, tmp_path):
    # A run that fails before its job says more is still placed: no data is read for this.
    fields = planned_fields(compose_config(f"task={task}", f"data_dir={tmp_path / 'nowhere'}").task)
    assert fields["dataset"]
    if task == "image":
        assert fields["seq_len"] is None  # the patch count: only the images tell
    else:
        assert fields["seq_len"] > 0


def test_planned_fields_of_the_configured_length_keys():
    assert planned_fields(compose_config("task=translation", "task.max_source_len=48").task) == {
        "dataset": "multi30k-en-de",
        "seq_len": 48,
    }
    assert (
        planned_fields(compose_config("task=summarization").task)["seq_len"] == 256
    )  # aeslc's default, resolved by the task
    assert planned_fields(compose_config("task=dna", "task.max_len=100").task)["seq_len"] == 100
    assert planned_fields(compose_config("task=news_topic", "task.seq_len=64").task) == {
        "dataset": "bbc",
        "seq_len": 64,
    }
    assert (
        planned_fields(compose_config("task=summarization", "task.dataset=nope").task) == {}
    )  # a task that cannot be built fixes nothing


@pytest.mark.parametrize(
    "err, status",
    [
        (Diverged("nan"), "diverged"),
        (PointTimeout("slow"), "timeout"),
        (PointSkipped("long"), "skipped"),
        (Interrupted("term"), "interrupted"),
        (RunFailure("other"), "failed"),
        (torch.OutOfMemoryError("CUDA out of memory"), "oom"),
        (RuntimeError("boom"), "failed"),
    ],
)
def test_a_failure_status_comes_from_the_exception(err, status):
    assert status_of(err) == status


def test_a_job_failure_is_recorded_with_the_exception_status_and_the_planned_fields(tmp_path, monkeypatch):
    import suite.jobs.train

    def diverge(**kwargs):
        raise Diverged("loss is nan at step 3")

    monkeypatch.setattr(suite.jobs.train, "train_job", diverge)
    record = execute(shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=24")), tmp_path)
    assert record.status == "diverged" and record.error == "Diverged: loss is nan at step 3"
    assert record.dataset == "recall" and record.seq_len == 24 and record.model == "lstm"


def test_a_run_whose_loss_explodes_is_recorded_diverged_with_its_curve(tmp_path):
    """A learning rate far too high: the loss grows past ``convergence.explode`` times the untrained one (or becomes
    inf); the record says diverged, at which step, and keeps the curve up to there."""
    cfg = compose_config(
        "task=long_range", "model=rnn", "trainer.optimizer.lr=1e3", "trainer.grad_clip=0", "trainer.max_steps=60"
    )
    record = execute(shrink(cfg), tmp_path)
    assert record.status == "diverged" and " at step " in record.error
    assert record.convergence["verdict"] == "diverged" and record.curves["train_step"][0] == 1.0
    assert read_result(tmp_path / RESULT_FILE).curves == record.curves


def test_a_missing_dataset_keeps_the_records_dataset_and_length(tmp_path):
    record = execute(
        shrink(compose_config("task=translation", "model=lstm", f"data_dir={tmp_path / 'nowhere'}")), tmp_path / "run"
    )
    assert record.status == "failed" and "make data" in record.error
    assert record.dataset == "multi30k-en-de" and record.seq_len == 64


def test_every_job_module_has_a_config_and_every_config_a_module():
    import importlib

    from omegaconf import OmegaConf

    modules = {p.stem for p in (CONF.parent / "suite" / "jobs").glob("*.py")} - {
        "__init__",
        "prepare",
        "checkpoint_or_train",
    }  # set-up shared by jobs
    configs = {p.stem: OmegaConf.load(p)._target_ for p in (CONF / "job").glob("*.yaml")}
    assert set(configs) == modules
    for name, target in configs.items():
        module, _, function = target.rpartition(".")
        assert module == f"suite.jobs.{name}" and callable(getattr(importlib.import_module(module), function))
