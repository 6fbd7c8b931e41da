"""Files that survive a kill: atomic writes, and the random state a resumed run needs.

Every checkpoint and record is written to a temporary file in the same directory and moved
into place with ``os.replace`` (atomic on POSIX), so a kill during a write leaves the
previous file whole, never a truncated one.
"""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch


def _replace_with(path: Path, write: Any) -> Path:
    """Call ``write(file)`` on a temporary file beside ``path``, flush it to disk, then move it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_save(obj: Any, path: Path) -> Path:
    """``torch.save(obj, path)``, atomically."""
    return _replace_with(path, lambda file: torch.save(obj, file))


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, atomically."""
    return _replace_with(path, lambda file: file.write(text.encode("utf-8")))


def rng_state() -> dict[str, Any]:
    """Every global random state a training step can draw from: python, numpy, torch, CUDA."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured (CUDA only where the same devices exist)."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def loader_generators(loader: Any) -> list[torch.Generator]:
    """The seeded generators that decide a DataLoader's order, wherever it keeps them.

    A DataLoader's ``generator`` (shuffle=True), its sampler's (RandomSampler,
    DistributedSampler has none: its order is a function of seed and epoch) and a custom
    batch sampler's (e.g. length-bucketed batches). Each appears once.
    """
    found: dict[int, torch.Generator] = {}
    holders: Iterable[Any] = (loader, getattr(loader, "sampler", None), getattr(loader, "batch_sampler", None),
                              getattr(getattr(loader, "batch_sampler", None), "sampler", None))
    for holder in holders:
        generator = getattr(holder, "generator", None)
        if isinstance(generator, torch.Generator):
            found.setdefault(id(generator), generator)
    return list(found.values())
