"""The run's configuration composed outside ``python -m suite.run`` (command-line tools, tests): one helper for all."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from suite.runtime.paths import PROJECT_ROOT

CONF = PROJECT_ROOT / "conf"


def composed(overrides: list[str], logger: str | None = "none", conf: Path = CONF) -> DictConfig:
    """``conf/config.yaml`` with ``overrides``, as ``suite.run`` composes it; ``logger`` (default none) unless None."""
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose(config_name="config", overrides=([f"logger={logger}"] if logger else []) + list(overrides))


def importable(node: Any, where: str, conf: Path = CONF) -> None:
    """An ImportError naming the module and the config file when ``node``'s ``_target_`` cannot be imported.

    Hydra's own error names the target alone; a user who added a config wants to know which file to fix. ``where`` is
    the node's key ('model.backbone').
    """
    target = str(node.get("_target_") or "") if node is not None else ""
    if not target:
        return
    module, _, name = target.rpartition(".")
    try:
        found = hasattr(importlib.import_module(module), name) if module else False
        reason = "" if found else f"module {module or target!r} has no {name!r}"
    except ImportError as err:
        found, reason = False, f"cannot import module {module!r} ({err})"
    if not found:
        files = sorted(str(p.relative_to(conf.parent)) for p in conf.rglob("*.yaml") if target in p.read_text())
        source = f"set in {', '.join(files)}" if files else "given on the command line (no config file names it)"
        raise ImportError(f"{where}._target_ {target!r}: {reason}; {source}")
