"""Multi-process training through torch.distributed (torchrun sets the environment).

    torchrun --nproc_per_node=2 -m suite.run task=sentiment model=transformer

One process per device; gloo on the CPU, NCCL on CUDA. Rank 0 alone writes records,
checkpoints and W&B; every rank trains on its shard of each epoch and the gradients are
averaged by ``DistributedDataParallel``. Nothing here is home-made distribution: it only
reads what torchrun provides and wraps torch's own pieces.
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Sampler


@dataclass(frozen=True)
class World:
    """This process's place among the training processes (rank 0 of 1 when not distributed)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    backend: str | None = None

    @property
    def distributed(self) -> bool:
        """More than one process: gradients are averaged, files written by rank 0 only."""
        return self.size > 1

    @property
    def launched(self) -> bool:
        """Under torchrun (even with one process): the data order is then a function of (seed, epoch) alone."""
        return self.backend is not None

    @property
    def main(self) -> bool:
        """The process that writes files and logs."""
        return self.rank == 0


SINGLE = World()


def launched_by_torchrun() -> bool:
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def join(device_name: str, timeout_s: float = 600.0) -> tuple[World, str]:
    """Join the process group torchrun set up (if any); returns the world and the device this rank uses.

    ``device_name`` 'auto' becomes ``cuda:<local rank>`` when CUDA is present. The timeout bounds
    how long a collective waits for a rank that died, so a lost rank fails the job instead of hanging it.
    """
    if not launched_by_torchrun():
        return SINGLE, device_name
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    cuda = torch.cuda.is_available() and device_name in ("auto", "cuda")
    backend = "nccl" if cuda else "gloo"
    if cuda:
        torch.cuda.set_device(local_rank)
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        atexit.register(leave)  # once per process: a sweep's later jobs reuse the group
    world = World(rank=dist.get_rank(), size=dist.get_world_size(), local_rank=local_rank, backend=backend)
    return world, (f"cuda:{local_rank}" if cuda else ("cpu" if device_name == "auto" else device_name))


def leave() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def current() -> World:
    """The world of an initialised process group, else a single process."""
    if not dist.is_initialized():
        return SINGLE
    return World(
        rank=dist.get_rank(),
        size=dist.get_world_size(),
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
        backend=dist.get_backend(),
    )


def fingerprint(config: Any) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def require_same_config(config: Any, world: World) -> None:
    """Fail fast, on every rank, when the ranks were started with different configurations."""
    if not world.distributed:
        return
    prints: list[str | None] = [None] * world.size
    dist.all_gather_object(prints, fingerprint(config))
    if len(set(prints)) > 1:
        groups = {p: [r for r, q in enumerate(prints) if q == p] for p in set(prints)}
        raise ValueError(
            f"the {world.size} ranks were started with different configurations (ranks grouped by config: "
            f"{sorted(groups.values())}); start every rank with the same overrides"
        )


def broadcast(obj: Any, world: World) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not world.distributed:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather(obj: Any, world: World) -> list[Any]:
    """Every rank's ``obj``, in rank order (on every rank)."""
    if not world.distributed:
        return [obj]
    out: list[Any] = [None] * world.size
    dist.all_gather_object(out, obj)
    return out


def reduce(values: Sequence[float], op: str, world: World, device: torch.device) -> list[float]:
    """Element-wise 'sum', 'max' or 'min' of ``values`` over the ranks."""
    if not world.distributed:
        return list(values)
    tensor = torch.tensor(list(values), dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[op])
    return tensor.tolist()


def barrier(world: World) -> None:
    if world.distributed:
        dist.barrier()


class ShardedBatches(Sampler[list[int]]):
    """Every ``size``-th batch of a batch sampler, from ``rank``; all ranks get the same number.

    For tasks that form their own batches (e.g. length-bucketed): every rank draws the same
    seeded batch list and keeps its share, so no example is read twice in an epoch.
    """

    def __init__(self, batches: Sampler[list[int]], rank: int, size: int) -> None:
        self.batches, self.rank, self.size = batches, rank, size

    def __len__(self) -> int:
        return len(self.batches) // self.size  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[list[int]]:
        every = list(self.batches)
        yield from every[self.rank : len(self) * self.size : self.size]


def shard(loader: DataLoader, world: World, seed: int) -> DataLoader:
    """The training loader with this rank's share of each epoch (the task's own loader outside torchrun).

    A loader of examples gets a seeded ``DistributedSampler`` (rank r reads positions r, r + size,
    ... of one shared permutation, so the ranks' batches together are the single-process batch of
    the same global size); a loader of ready-made batches is sharded batch by batch.
    """
    if not world.launched:
        return loader
    if loader.batch_size is None:
        sampler = ShardedBatches(loader.batch_sampler, world.rank, world.size)
        return DataLoader(
            loader.dataset,
            batch_sampler=sampler,
            collate_fn=loader.collate_fn,
            num_workers=loader.num_workers,
            pin_memory=loader.pin_memory,
        )
    sampler = DistributedSampler(loader.dataset, num_replicas=world.size, rank=world.rank, shuffle=True, seed=seed)
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=sampler,
        collate_fn=loader.collate_fn,
        num_workers=loader.num_workers,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
    )


def set_epoch(loader: DataLoader, epoch: int) -> None:
    """A DistributedSampler's permutation is a function of (seed, epoch): tell it the epoch."""
    if isinstance(loader.sampler, DistributedSampler):
        loader.sampler.set_epoch(epoch)
