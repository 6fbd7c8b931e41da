"""Every experiment config composes with the real config and runs a few steps end to end."""
import pytest

from suite.run import execute
from tests.conftest import CONF, compose_config, shrink, skip_or_fail

EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
FEW_STEPS = ["trainer.max_epochs=1", "trainer.max_steps=2", "trainer.limit_train_batches=2", "trainer.limit_eval_batches=1", "++trainer.time_budget_s=null"]


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_runs_a_few_steps(name, tmp_path):
    cfg = shrink(compose_config(f"experiment={name}", *FEW_STEPS))  # the experiment's settings, then these
    record = execute(cfg, tmp_path)
    if record.status == "failed" and (record.error or "").startswith("DatasetMissing"):
        skip_or_fail(record.error)
    assert record.status == "ok", record.error
    assert record.steps == 2 and record.task == cfg.task.name
