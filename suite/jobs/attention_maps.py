"""``job=attention_maps``: trained weights read one test example; every layer's attention drawn with its tokens.

A sentiment classifier: its self-attention per layer over the sentence's tokens ([CLS] first).
A translation model: its encoder's and decoder's self-attention and the cross-attention between
its greedy output and the source (the alignment). The task says what its example looks like
(``suite.types.ShowsAttention``); ``suite.report.captured_attention`` captures and draws.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from suite.jobs.evaluate import load_weights
from suite.jobs.prepare import configured_task, prepare
from suite.models.transformer import MultiHeadAttention
from suite.report.captured_attention import draw, read
from suite.runtime.tracking import Tracker
from suite.types import ShowsAttention


def attention_maps_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    checkpoint: str,
    example: int = 0,
    split: str = "test",
) -> dict[str, Any]:
    """Draw the attention of the weights in ``checkpoint`` on example ``example`` of ``split`` (in loader order);
    returns the record's fields.

    Args:
        checkpoint: a training run's checkpoints/best.pt (composed with that run's task and model overrides).
        example: which example of the split, counted in the loader's order.
        split: 'train', 'val' or 'test'.
    """
    task = configured_task(cfg.task)  # reads no data: a task that cannot show its examples is refused before it loads
    if not isinstance(task, ShowsAttention):
        raise ValueError(
            f"task {task.name!r} cannot show its examples (suite.types.ShowsAttention): "
            "attention maps need a task of tokens"
        )
    prepared = prepare(cfg, device, task)  # the model's vocabulary comes from the data, so it is built after
    model = prepared.model
    if not any(isinstance(m, MultiHeadAttention) for m in model.modules()):
        raise ValueError(f"model {cfg.model.name!r} has no attention layers to draw (a recurrent model?)")
    load_weights(model, checkpoint, device)
    loader = task.loaders(1, cfg.seed, eval_batch_size=1)[split]
    batch = next(islice(iter(loader), example, None), None)
    if batch is None:
        raise ValueError(f"job.example={example}: the {split} split has fewer examples")
    model.eval()
    with torch.no_grad():  # readable may decode (a translation's output); read runs the example itself
        shown = task.readable(model, batch.to(device))
    maps = read(model, shown)
    title = (
        f"{task.name}/{task.dataset} {split} example {example}, {cfg.model.name} "
        f"({(cfg.model.get('attention') or {}).get('_target_', '').rpartition('.')[2]})"
    )
    paths = draw(maps, shown, run_dir, title)
    return {
        **prepared.ok_fields(),
        "steps": 0,
        "stop_reason": "attention maps",
        "artifacts": [str(p.relative_to(run_dir)) for p in paths],
    }
