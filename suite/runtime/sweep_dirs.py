"""Where every job of a sweep writes, decided before any job runs (``hydra/sweeper=every_point``, the default).

Each job's ``hydra.sweep.subdir`` is resolved as Hydra would resolve it. Where two jobs resolve to one directory (a
named experiment's subdir names the task, model and seed but not, say, a swept learning rate), each gets the swept
settings that tell them apart added to its name (``...-s0,trainer.optimizer.lr=0.001``); jobs that already have a
directory of their own keep its name, so a sweep's directories stay those of earlier runs of the same command. A job
whose directory holds the record of another configuration is refused, naming both, before any job runs; the runner's
own check (``suite.run.refuse_collision``) stays as the last line of defence.
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict

from suite.runtime.differences import computed_differences
from suite.runtime.record import RESULT_FILE, read_result


class SweepCollision(RuntimeError):
    """Two jobs of a sweep resolved to one run directory: the second would overwrite the first's record."""


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value (a directory name with commas, '=' or brackets stays one string)."""
    return "'" + value.replace("'", "\\'") + "'"


def settings(job: Sequence[str]) -> dict[str, str]:
    """A job's overrides as {key: value} ('model/attention=local' -> {'model/attention': 'local'})."""
    return dict(item.split("=", 1) for item in job if "=" in item)


def told_apart(base: str, jobs: list[dict[str, str]]) -> list[str]:
    """``base`` for each of ``jobs`` that share it, with the settings in which they differ added, ',key=value' each."""
    keys = [k for k in dict.fromkeys(k for job in jobs for k in job) if len({job.get(k) for job in jobs}) > 1]
    return [base + "".join(f",{k.replace('/', '.')}={job.get(k, '')}" for k in keys) for job in jobs]


def job_config(master: DictConfig, loader: Any, job: Sequence[str], number: int) -> DictConfig:
    """The composed config of one job, numbered as the launcher numbers it."""
    cfg = loader.load_sweep_config(master, list(job))
    with open_dict(cfg):
        cfg.hydra.job.num = number
        cfg.hydra.sweep.dir = str(master.hydra.sweep.dir)
    return cfg


@contextmanager
def as_job(cfg: DictConfig) -> Iterator[None]:
    """Within: ``${hydra:...}`` reads the job's own Hydra config, as it does in the job."""
    HydraConfig.instance().set_config(cfg)
    try:
        yield
    finally:
        HydraConfig.instance().cfg = None


def subdir(cfg: DictConfig) -> str:
    """The job's ``hydra.sweep.subdir``, resolved as in the job."""
    with as_job(cfg):
        return str(OmegaConf.select(cfg, "hydra.sweep.subdir"))


def task_config(cfg: DictConfig) -> dict[str, Any]:
    """What the job's record keeps as its config: everything but the ``hydra`` node, resolved."""
    with as_job(cfg):
        return OmegaConf.to_container(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]), resolve=True)


def refuse_other_record(where: Path, job: Sequence[str], cfg: DictConfig) -> None:
    """A ``SweepCollision`` when ``where`` holds the record of a configuration other than this job's."""
    path = where / RESULT_FILE
    if not path.exists():
        return
    try:
        saved = read_result(path).config
    except (ValueError, TypeError):
        return
    if saved and (found := computed_differences(saved, task_config(cfg))):
        differences = "; ".join(found[:4])
        raise SweepCollision(
            f"the job {' '.join(job)} would write into {where}, which holds the record of another configuration "
            f"({differences}): use another hydra.sweep.dir, or name the setting in hydra.sweep.subdir"
        )


def placed(master: DictConfig, loader: Any, jobs: list[Sequence[str]]) -> list[list[str]]:
    """Every job's overrides with its directory fixed (``hydra.sweep.dir`` and ``hydra.sweep.subdir`` as literals).

    Raises ``SweepCollision`` before any job runs when two jobs are the same settings twice or a job's directory holds
    another configuration's record.
    """
    configs = [job_config(master, loader, job, i) for i, job in enumerate(jobs)]
    names = [subdir(cfg) for cfg in configs]
    sharing: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(names):
        sharing[name].append(i)
    for name, members in sharing.items():
        if len(members) > 1:
            for i, apart in zip(members, told_apart(name, [settings(jobs[i]) for i in members])):
                names[i] = apart
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise SweepCollision(
                f"two jobs of this sweep have the same settings and directory {name}: "
                f"[{' '.join(jobs[seen[name]])}] and [{' '.join(jobs[i])}]"
            )
        seen[name] = i
    sweep_dir = Path(str(master.hydra.sweep.dir))
    for job, cfg, name in zip(jobs, configs, names):
        refuse_other_record(sweep_dir / name, job, cfg)
    return [
        [*job, f"hydra.sweep.dir={quoted(str(sweep_dir))}", f"hydra.sweep.subdir={quoted(name)}"]
        for job, name in zip(jobs, names)
    ]
