"""The run's configuration composed outside ``python -m suite.run``, for the command-line tools that build a model from it."""
from __future__ import annotations

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from suite.datadir import PROJECT_ROOT


def composed(overrides: list[str]) -> DictConfig:
    """``conf/config.yaml`` with ``overrides`` (no logger), as ``suite.run`` composes it."""
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=["logger=none", *overrides])
