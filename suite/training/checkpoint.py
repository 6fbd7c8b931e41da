"""What a resumed run needs besides its weights: random states (python, numpy, torch, CUDA) and the loaders' generators.

Every state is kept as tensors, numbers, strings and tuples, so ``last.pt`` loads with
``torch.load(..., weights_only=True)``: resuming never unpickles code, whatever file it is given.
"""

from __future__ import annotations

import pickle
import random
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import torch

from suite.runtime.files import atomic_save

LAST = "last.pt"  # <run dir>/checkpoints/last.pt: what a re-run continues from
FORMAT = 2  # 2: random states as tensors and plain values, so the file loads with weights_only=True


def write_last(path: Path, fields: dict[str, Any]) -> Path:
    """Write a ``last.pt`` (the trainer's fields: weights, optimizer, schedule, counters, random states), atomically."""
    return atomic_save({"format": FORMAT, **fields}, path)


def read_last(path: Path, device: torch.device) -> dict[str, Any]:
    """A ``last.pt``'s fields, or ``ValueError`` saying why it cannot be resumed. Tensors and plain values only:
    a crafted file cannot run code here."""
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        raise ValueError(
            f"{path} holds more than tensors and plain values (a {LAST} of an older format of this suite, or not "
            f"ours), so it is not loaded; start afresh with trainer.resume=never ({str(err).splitlines()[0]})"
        ) from err
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        found = saved.get("format") if isinstance(saved, dict) else None
        raise ValueError(
            f"{path} is not a {LAST} of this suite (format {found!r}); start afresh with trainer.resume=never"
        )
    return saved


def rng_state() -> dict[str, Any]:
    """Every global random state a training step can draw from: python, numpy, torch, CUDA."""
    name, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    return {
        "python": random.getstate(),  # (version, 625 ints, None or a float)
        "numpy": {
            "name": name,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured (CUDA only where the same devices exist)."""
    random.setstate(state["python"])
    n = state["numpy"]
    np.random.set_state(
        (n["name"], n["keys"].numpy().astype(np.uint32), n["position"], n["has_gauss"], n["cached_gaussian"])
    )
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextmanager
def rng_kept() -> Iterator[None]:
    """Every global random state as it was when the block began (``rng_state``), whatever the block drew."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def loader_generators(loader: Any) -> list[torch.Generator]:
    """The seeded generators that decide a DataLoader's order, wherever it keeps them.

    A DataLoader's ``generator`` (shuffle=True), its sampler's (RandomSampler,
    DistributedSampler has none: its order is a function of seed and epoch) and a custom
    batch sampler's (e.g. length-bucketed batches). Each appears once.
    """
    found: dict[int, torch.Generator] = {}
    holders: Iterable[Any] = (
        loader,
        getattr(loader, "sampler", None),
        getattr(loader, "batch_sampler", None),
        getattr(getattr(loader, "batch_sampler", None), "sampler", None),
    )
    for holder in holders:
        generator = getattr(holder, "generator", None)
        if isinstance(generator, torch.Generator):
            found.setdefault(id(generator), generator)
    return list(found.values())
