"""The stored Optuna study of one tuning run: a SQLite database in the sweep directory, so a killed study resumes.

The study keeps, as user attributes, the search space it was started with and what it tunes (task, model and
trainer settings). Opening it again with another space or another fixed config is refused, naming what differs,
before any trial runs: a study never mixes trials of two searches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from suite.runtime.differences import config_differences

STUDY_FILE = "study.db"
STUDY_NAME = "tune"


class StudyMismatch(ValueError):
    """A study directory that holds the study of another search space or another fixed config."""


def storage_url(directory: Path) -> str:
    """The SQLite URL of the study in ``directory`` (optuna's RDB storage)."""
    return f"sqlite:///{(Path(directory) / STUDY_FILE).resolve()}"


def storage(url: str) -> optuna.storages.RDBStorage:
    """The RDB storage at ``url``; SQLite waits for a lock (trials report from their own processes)."""
    return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": {"timeout": 60}})


def keyed(value: Any) -> Any:
    """``value`` with lists of named entries as dicts by name (a search space's parameters), so that a difference is
    named by parameter and field (``space.lr.high``), not as two whole lists."""
    if isinstance(value, dict):
        return {k: keyed(v) for k, v in value.items()}
    if isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        return {v["name"]: keyed(v) for v in value}
    return value


def open_study(
    directory: Path,
    attrs: dict[str, Any],
    sampler: optuna.samplers.BaseSampler | None = None,
    pruner: optuna.pruners.BasePruner | None = None,
) -> optuna.Study:
    """The study stored in ``directory`` (created when there is none), checked to be of ``attrs``.

    Args:
        attrs: what identifies the search, e.g. ``{"space": ..., "fixed": ...}``; stored with a new study, compared
            with an existing one's (``StudyMismatch`` naming the differences).
    """
    Path(directory).mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(
        storage=storage(storage_url(directory)),
        study_name=STUDY_NAME,
        sampler=sampler,
        pruner=pruner,
        direction="maximize",
        load_if_exists=True,
    )
    stored = study.user_attrs
    if not stored and not study.trials:
        for key, value in attrs.items():
            study.set_user_attr(key, value)
        return study
    differences = config_differences(keyed({k: stored.get(k) for k in attrs}), keyed(attrs))
    if differences:
        raise StudyMismatch(
            f"{Path(directory) / STUDY_FILE} holds a study of another search ({'; '.join(differences[:6])}); "
            "use another hydra.sweep.dir, or delete that directory to start this search afresh"
        )
    return study
