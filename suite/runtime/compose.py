"""The run's configuration composed outside ``python -m suite.run`` (command-line tools, tests): one helper for all."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from suite.runtime.paths import PROJECT_ROOT

CONF = PROJECT_ROOT / "conf"


def composed(overrides: list[str], logger: str | None = "none", conf: Path = CONF) -> DictConfig:
    """``conf/config.yaml`` with ``overrides``, as ``suite.run`` composes it; ``logger`` (default none) unless None."""
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose(config_name="config", overrides=([f"logger={logger}"] if logger else []) + list(overrides))
