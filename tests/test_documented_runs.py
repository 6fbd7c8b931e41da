"""Every ``python -m suite.run`` command the README and the docs show runs, at tiny size (slow).

Each is composed as Hydra would and its job run: the command's overrides
(the first value of each sweep), the model shrunk, the data cut to its first lines where a task tokenizes
whole files, and every budget cut to a step or a call. A command that reads a checkpoint
(``job.checkpoint=<run dir>/checkpoints/best.pt``, a path or a variable) is given one trained from the same
command's task and model overrides, so the weights fit the model the command composes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import DictConfig, open_dict

from suite.run import execute
from tests.conftest import TINY_TASK, compose_config, need_data, shrink
from tests.test_documented_commands import commands, overrides
from tests.test_run import DATA_OF, JOB_LIMITS

pytestmark = pytest.mark.slow

# Weights a command reads: a checkpoint to score, compress or continue from ('auto' is the run's own: none to give).
CHECKPOINT = re.compile(r"(?<![\w.])'?(?:job\.checkpoint|trainer\.resume)=(?!auto\b)[^\s']+'?")
TRAINER_LIMITS = JOB_LIMITS["train_job"]
LIMITS = {
    **JOB_LIMITS,
    "evaluate_job": [],
    "attention_maps_job": [],
    "generate_job": ["job.max_new_tokens=4", "job.test_prompts=1", "job.prompt_tokens=4"],
}


def documented_runs() -> list[tuple[str, str]]:
    """(page, command) for every documented ``python -m suite.run`` command that runs a job no other one does (two
    commands that differ only in the later values of a sweep, or in where they write, run the same tiny job)."""
    runs = {}
    for page, command in commands(r"python -m suite\.run\b"):
        try:
            key = repr(readable(command))
        except AssertionError:
            key = command  # run on its own, to fail with its name
        runs.setdefault(key, (page, command))
    return list(runs.values())


def readable(command: str) -> tuple[list[str], bool]:
    """The command's overrides, and whether it reads a checkpoint (which the test then provides).

    A trailing ``...`` (a command shown in part: "add your overrides") is left out; any other placeholder fails."""
    reads_checkpoint = bool(CHECKPOINT.search(command))
    text = CHECKPOINT.sub("", command).removesuffix("...").strip()
    found = overrides(text)
    if found is None:
        raise AssertionError(f"a documented command the test cannot read alone: {command}")
    return found, reads_checkpoint


def job_of(cfg: DictConfig) -> str:
    return cfg.job._target_.rpartition(".")[2]


def tiny_data(found: list[str], request: pytest.FixtureRequest) -> list[str]:
    """The data overrides that make the command's task small, after checking its data is there."""
    task = compose_config(*found, tiny=False).task.name
    if task in DATA_OF:
        need_data(*DATA_OF[task])
    if task in TINY_TASK:
        return [*TINY_TASK[task], f"data_dir={request.getfixturevalue('subset_data')}"]
    return {"long_range": ["task.n_train=64", "task.n_val=16", "task.n_test=16"]}.get(task, [])


def cut(cfg: DictConfig) -> DictConfig:
    """Every budget a job composes cut to a step or a call: its trainer, and a compression's fine-tuning."""
    with open_dict(cfg):
        cfg.trainer.time_budget_s = None
        compress = cfg.get("compress")
        if compress is not None:
            if "fine_tune" in compress:
                compress.fine_tune.max_steps = 1
            if "importance_batches" in compress:
                compress.importance_batches = 1
    return cfg


def composed_run(found: list[str], extra: list[str]) -> DictConfig:
    cfg = compose_config(*found, "logger=none", *extra, tiny=False)
    limits = [*TRAINER_LIMITS, *LIMITS.get(job_of(cfg), [])]
    if "seq_len" not in cfg.task:  # a sequence-to-sequence task's lengths are its data's
        limits = [x for x in limits if not x.startswith("task.seq_len")]
    return cut(shrink(compose_config(*found, "logger=none", *extra, *limits, tiny=False)))


def teacher(found: list[str], extra: list[str], where: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkpoint trained for a step from the command's overrides without its job, compression and resume settings;
    its ``last.pt`` kept too (a finished run deletes it: here, as if the run had been killed after its last save)."""
    own = [o for o in found if not o.split("=")[0].lstrip("+").startswith(("job", "compress", "trainer.resume"))]
    cfg = composed_run([*own, "job=train"], extra)
    with open_dict(cfg):
        cfg.trainer.checkpoint_every_s = 0.0  # last.pt after every step
    with monkeypatch.context() as patch:
        patch.setattr(Path, "unlink", lambda self, missing_ok=False: None)
        record = execute(cfg, where)
    assert record.status == "ok", f"the teacher of the command failed: {record.error}"
    return where / "checkpoints" / "best.pt"


@pytest.mark.parametrize("page, command", documented_runs(), ids=lambda x: x[:60] if "suite.run" in x else x)
def test_every_documented_run_runs(page, command, tmp_path, request, monkeypatch):
    found, reads_checkpoint = readable(command)
    extra = tiny_data(found, request)
    if reads_checkpoint:
        best = teacher(found, extra, tmp_path / "teacher", monkeypatch)
        key = "trainer.resume" if "trainer.resume=" in command else "job.checkpoint"
        extra = [*extra, f"{key}={best.with_name('last.pt') if key == 'trainer.resume' else best}"]
    record = execute(composed_run(found, extra), tmp_path / "run")
    assert record.status == "ok", f"{page}: {command}\n{record.error}"


def test_a_command_with_a_placeholder_other_than_its_checkpoint_is_refused():
    assert readable("python -m suite.run job=evaluate job.checkpoint=<run dir>/checkpoints/best.pt task=dna") == (
        ["job=evaluate", "task=dna"],
        True,
    )
    assert readable("python -m suite.run task=dna trainer=quick ...") == (["task=dna", "trainer=quick"], False)
    assert readable("python -m suite.run task=dna 'job.checkpoint=runs/${model.name}/best.pt'")[1]
    assert readable("python -m suite.run task=dna trainer.resume=outputs/x/last.pt")[1]
    assert not readable("python -m suite.run task=dna trainer.resume=auto")[1]
    with pytest.raises(AssertionError, match="cannot read alone"):
        readable("python -m suite.run task=<your task>")
