"""The checkpoint files of a run, all in one place: what each holds, how it is written and read.

- ``best.pt`` (``BEST``): the model's ``state_dict`` at its best validation score, what ``job=evaluate``,
  ``job=compress`` and the other jobs that take ``job.checkpoint`` load (``write_weights`` / ``read_weights``);
- ``last.pt`` (``LAST``): what a killed run continues from (``LAST_FIELDS``: weights, optimizer, schedule, counters,
  data position, every rank's random states, the callbacks' states; ``write_last`` / ``read_last``);
- ``pretrained.pt`` (``PRETRAINED``): the weights and record fields of a finished self-pretraining
  (``write_pretrained`` / ``read_pretrained``).

Every file is written atomically (a crash leaves the old file whole) and holds tensors, numbers, strings and tuples
only, so each loads with ``torch.load(..., weights_only=True)``: reading a checkpoint never unpickles code, whatever
file it is given.
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

BEST = "best.pt"  # <run dir>/checkpoints/best.pt: the best validation weights
LAST = "last.pt"  # <run dir>/checkpoints/last.pt: what a re-run continues from
PRETRAINED = "pretrained.pt"  # <run dir>/pretrain/pretrained.pt: the embedding and backbone after pretraining
FORMAT = 2  # 2: random states as tensors and plain values, so the file loads with weights_only=True
LAST_FIELDS = (
    "identity",  # the settings it must be resumed with (task, model, seed, trainer; a difference is refused)
    "model",  # state_dict
    "optimizer",  # state_dict
    "scheduler",  # state_dict
    "total",  # the steps the schedule plans for
    "planned",  # the steps planned before any budget cut
    "step",
    "epoch",
    "train_seconds",
    "tokens",  # real tokens trained on so far (throughput)
    "items",
    "stop_reason",
    "position",  # {'epoch', 'batch', 'generators'}: where in the data to continue
    "rng",  # every rank's random states (rng_state)
    "callbacks",  # [{'type', 'state'}] in the order they run
)
"""What ``last.pt`` holds besides its ``format``: the trainer writes exactly these (``write_last`` checks)."""


def write_last(path: Path, fields: dict[str, Any]) -> Path:
    """Write a ``last.pt`` (exactly ``LAST_FIELDS``: weights, optimizer, schedule, counters, random states),
    atomically."""
    if tuple(fields) != LAST_FIELDS:
        raise ValueError(f"a {LAST} holds {LAST_FIELDS}, in that order; got {tuple(fields)}")
    return atomic_save({"format": FORMAT, **fields}, path)


def write_weights(weights: dict[str, Any], path: Path) -> Path:
    """A model's ``state_dict`` (``best.pt``), atomically."""
    return atomic_save(weights, path)


def read_weights(path: Path, device: torch.device) -> dict[str, Any]:
    """A ``best.pt`` written by ``write_weights`` (tensors only), or a ``FileNotFoundError`` naming the path and what
    writes it."""
    if not Path(path).is_file():
        raise FileNotFoundError(
            f"no checkpoint at {path}: a training run writes its best weights to <run dir>/checkpoints/{BEST}"
        )
    return torch.load(path, map_location=device, weights_only=True)


def write_pretrained(weights: dict[str, Any], fields: dict[str, Any], path: Path) -> Path:
    """The weights a self-pretraining changed and its record fields (``pretrained.pt``), atomically."""
    return atomic_save({"format": FORMAT, "weights": weights, "fields": fields}, path)


def read_pretrained(path: Path, device: torch.device) -> tuple[dict[str, Any], dict[str, Any]]:
    """(weights, record fields) of a ``pretrained.pt``; a ``ValueError`` for a file of an older format (pretrain
    again: remove it)."""
    try:
        saved = torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as err:
        raise ValueError(f"{path} holds more than tensors and plain values; remove it to pretrain again") from err
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {PRETRAINED} of this suite's format {FORMAT}; remove it to pretrain again")
    return saved["weights"], saved["fields"]


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
