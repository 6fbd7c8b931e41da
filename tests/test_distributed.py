"""Multi-process training: 2 gloo processes with batch B/2 each train as 1 process with batch B.

Spawned in-process (torch.multiprocessing), as torchrun would start them; the runner's own
torchrun path is tested through the CLI.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from suite.callbacks import Callback
from suite.distributed import World
from suite.schedules import warmup_cosine
from suite.train import Trainer
from tasks.long_range import build
from tests.conftest import compose_config, shrink


class Losses(Callback):
    """The training loss of every step, averaged over the ranks."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def on_step_end(self, state) -> None:
        self.values.append(state.loss_value())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def train_rank(rank: int, size: int, batch: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=size)
    try:
        task = build("long_range", problem="recall", seq_len=8, n_train=128, n_val=32, n_test=32)
        task.setup()
        cfg = shrink(compose_config("model=transformer", "model.embed_dropout=0", "model.backbone.dropout=0", "model.head.dropout=0"))  # no dropout: ranks would draw other masks
        torch.manual_seed(0)
        model = task.build_model(cfg.model)
        losses = Losses()
        trainer = Trainer(name="t", optimizer=lambda params: torch.optim.AdamW(params, lr=3e-3), scheduler=lambda o, total_steps: warmup_cosine(o, total_steps, warmup_steps=3),
                          max_epochs=2, batch_size=batch, progress=False)
        fit = trainer.fit(model, task, torch.device("cpu"), seed=0, callbacks=[losses], world=World(rank=rank, size=size, backend="gloo"))
        if rank == 0:
            Path(out).write_text(json.dumps({"losses": losses.values, "steps": fit.steps, "val": fit.val, "world_size": fit.world_size,
                                             "items_per_s": fit.speed["train_items_per_s"]}))
    finally:
        dist.destroy_process_group()


def run(size: int, batch: int, tmp_path: Path) -> dict:
    out = tmp_path / f"world{size}.json"
    mp.spawn(train_rank, args=(size, batch, free_port(), str(out)), nprocs=size, join=True)
    return json.loads(out.read_text())


@pytest.mark.slow
def test_two_processes_with_half_batches_train_as_one_with_the_whole_batch(tmp_path):
    one, two = run(1, 16, tmp_path), run(2, 8, tmp_path)
    assert one["steps"] == two["steps"] == 16 and two["world_size"] == 2
    assert two["losses"] == pytest.approx(one["losses"], rel=1e-4, abs=1e-5)  # the same global batches, gradients averaged
    assert two["val"] == pytest.approx(one["val"], rel=1e-4)  # validation: every example once, on rank 0
