"""Names the configs resolve: a model's name in directory names, a command's directory.

Registered as OmegaConf resolvers by ``suite/__init__.py``, so every composition (``python -m suite.run``, the tests,
the tools) resolves them alike.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable


def model_id(name: str, attention: str | None = None) -> str:
    """A model's name in a sweep's directory names: 'transformer', 'transformer-local', 'lstm' (full attention, the
    default, is not named)."""
    return name if attention in (None, "full") else f"{name}-{attention}"


def model_overrides(row: str) -> list[str]:
    """The Hydra overrides that build the model a ``model_id`` names: 'transformer-local' -> ['model=transformer',
    'model/attention=local']; 'lstm' -> ['model=lstm'] (config names use underscores, never hyphens)."""
    name, _, attention = row.partition("-")
    return [f"model={name}", *([f"model/attention={attention}"] if attention else [])]


def command_dir(overrides: Iterable[Any] | None) -> str:
    """A directory name made from a command's settings (its task overrides, sorted): the same command always writes
    to, and so resumes in, the same directory. 'defaults' for none; a long one is cut and keeps a hash of the whole.

    'model=transformer,lstm seed=0,1' -> 'model=transformer,lstm_seed=0,1'.
    """
    items = sorted(str(o).replace("/", ".").replace(" ", "").replace("'", "").replace('"', "") for o in overrides or ())
    name = "_".join(items) or "defaults"
    if len(name) > 120:
        name = f"{name[:100]}~{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return name
