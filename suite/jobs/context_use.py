"""``job=context_use``: how much context a trained language model really uses (Khandelwal et al. 2018).

The same test targets are scored again and again, each time given only the last c tokens
before each of them, for every c in ``contexts`` up to the model's training context (which is
always measured too). Perplexity falls as c grows until the model stops using what lies further
back; the record gives the curve and the shortest c whose perplexity is within ``tolerance``
(1 %) of the best on the curve: where the model stops improving. (The best, not the longest
context's: a weak model can do slightly worse with more context than with some, and the longest
context's figure would then credit it with needing none.)

    python -m suite.run -m experiment=context_use                                  # trains, then measures each model
    python -m suite.run task=language_model job=context_use job.checkpoint=<run dir>/checkpoints/best.pt
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from suite.jobs.checkpoint_or_train import trained_model
from suite.runtime import numerics
from suite.runtime.tracking import Tracker


def saturation(contexts: list[int], perplexities: list[float], tolerance: float) -> int:
    """The shortest context whose perplexity is within ``tolerance`` (relative) of the best one's."""
    best = min(perplexities)
    return next(c for c, p in zip(contexts, perplexities) if p <= best * (1 + tolerance))


def context_use_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    checkpoint: str | None = None,
    contexts: list[int] = (10, 25, 50, 100, 200, 400, 800),
    n_targets: int = 2000,
    batch_size: int = 64,
    split: str = "test",
    tolerance: float = 0.01,
) -> dict[str, Any]:
    """Perplexity of ``n_targets`` fixed targets of ``split`` given exactly c tokens of context, for each c.

    Args:
        checkpoint: a training run's ``checkpoints/best.pt``; None trains the configured model first.
        contexts: context lengths; those beyond the task's ``seq_len`` (the trained context) are left
            out, and ``seq_len`` itself is always measured.
        n_targets: targets drawn (seeded by ``cfg.seed``) among those with the longest context available.
        batch_size: windows per forward pass.
        split: 'test' or 'val'.
        tolerance: relative gap to the best perplexity on the curve that counts as "no longer improving".
    """
    task, model, fields = trained_model(cfg, device, run_dir, tracker, checkpoint, job="context_use")
    trained_for = task.seq_len()
    lengths = sorted({int(c) for c in contexts if 0 < int(c) < trained_for} | {trained_for})
    batches = task.exact_context_batches(split, lengths, n_targets, batch_size, int(cfg.seed))
    curves: dict[str, list[float]] = {"context": [float(c) for c in lengths], "perplexity": [], "bits_per_byte": []}
    choice = numerics.choose(cfg.trainer.precision, device, model)
    with torch.inference_mode(), numerics.autocast(choice.precision, device):
        for c in lengths:
            scores = task.evaluate(model, (b.to(device) for b in batches[c]), device)
            curves["perplexity"].append(scores["perplexity"])
            curves["bits_per_byte"].append(scores["bits_per_byte"])
            tracker.log(
                {"context_use/perplexity": scores["perplexity"], "context_use/bits_per_byte": scores["bits_per_byte"]},
                c,
            )
    enough = saturation(lengths, curves["perplexity"], tolerance)
    found = {
        "context_saturation": float(enough),
        f"{split}_perplexity_at_{trained_for}": curves["perplexity"][-1],
        f"{split}_perplexity_at_{lengths[0]}": curves["perplexity"][0],
    }
    tracker.summary({f"context_use/{k}": v for k, v in found.items()})
    return {
        **fields,
        "metrics": {**fields.get("metrics", {}), **found},
        "curves": {**fields.get("curves", {}), **curves},
        **choice.fields(),
    }
