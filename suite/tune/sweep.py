"""The sweeper's work (``hydra_plugins.suite_tune``): check the search before any training, open the stored study,
run it (``suite.tune.driver``).

Checked first, each a clear error naming what is wrong: a swept value in the command (a study tunes one task and
one model), a model family without a search space, a space key the composed config lacks, shape choices that do not
hold the parameter count, and a study directory from another search.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from suite.training.trainer import RESUME_MAY_CHANGE
from suite.tune.driver import Plan, Tuning
from suite.tune.shapes import kept_shapes, parameter_counts
from suite.tune.space import Space, SpaceError
from suite.tune.study import open_study

log = logging.getLogger("suite.tune")


def fixed_arguments(arguments: list[str], parser: OverridesParser) -> list[str]:
    """The command's overrides, refused when one sweeps (``model=lstm,gru``): one study tunes one task and model."""
    for override in parser.parse_overrides(arguments):
        if override.is_sweep_override():
            raise SpaceError(
                f"experiment=tune tunes one task and one model: {override.input_line} sweeps; run one command a value"
            )
    return list(arguments)


def study_attrs(space: Space, job: DictConfig) -> dict[str, Any]:
    """What identifies the search: its space and the fixed config (task, model, budget) every trial starts from."""
    # The trainer unresolved: its trial report names the trial (``${tune.trial}``), which differs from trial to trial.
    trainer = {
        k: v for k, v in OmegaConf.to_container(job.trainer, resolve=False).items() if k not in RESUME_MAY_CHANGE
    }
    return {
        "space": space.describe(),
        "fixed": {
            "task": OmegaConf.to_container(job.task, resolve=True),
            "model": OmegaConf.to_container(job.model, resolve=True),
            "trainer": trainer,
        },
    }


def family_space(spaces: Any, family: str) -> Space:
    if spaces is None or family not in spaces:
        known = sorted(spaces) if spaces is not None else []
        raise SpaceError(
            f"no search space for model family {family!r} (spaces: {known}): add conf/tune/{family}.yaml and list it "
            "in conf/experiment/tune.yaml's defaults"
        )
    return Space.from_config(spaces[family], f"conf/tune/{family}.yaml")


def run_sweep(sweeper: Any, arguments: list[str]) -> dict[str, Any]:
    """The whole study for ``sweeper`` (a ``TuneSweeper`` after ``setup``) and the command's ``arguments``."""
    loader = sweeper.hydra_context.config_loader
    arguments = fixed_arguments(arguments, OverridesParser.create(config_loader=loader))
    compose = lambda extra: loader.load_sweep_config(sweeper.config, arguments + list(extra))  # noqa: E731
    job = compose(["tune.trial=0"])
    family = str(job.model.name)
    space = family_space(sweeper.spaces, family)
    described = f"task={job.task.name}, model={family}"
    space.check_keys(job, described)
    for param in [p for p in space.params if p.kind == "shape"]:
        counts = parameter_counts(job, param, lambda keys: compose([f"{k}={v}" for k, v in keys.items()]))
        space = space.restricted(param.name, kept_shapes(counts))
    sweep_dir = Path(sweeper.config.hydra.sweep.dir)
    study = open_study(sweep_dir, study_attrs(space, job), sampler=sweeper.sampler, pruner=sweeper.pruner)
    OmegaConf.save(sweeper.config, sweep_dir / "multirun.yaml")

    def launch(jobs, first: int) -> None:
        for ret in sweeper.launcher.launch(jobs, initial_job_idx=first):
            _ = ret.return_value  # a job that raised (a sweep collision, a stop signal) stops the study here

    plan = Plan(sweeper.n_trials, sweeper.n_jobs, sweeper.seeds, tuple(arguments))
    summary = Tuning(study, space, plan, launch, sweep_dir).run(default=space.defaults(job))
    log.info(
        "study %s: best trial %d (validation %.4g), %s",
        sweep_dir,
        summary["best"]["number"],
        summary["best"]["value"],
        summary["states"],
    )
    return summary
