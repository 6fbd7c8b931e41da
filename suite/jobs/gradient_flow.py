"""``job=gradient_flow``: how much the loss can feel an input at distance d from the output.

For each position t of the input, the norm of d(loss)/d(x_t), where x_t is the embedded input
(before positions), averaged over sequences and over independently initialised models. For
an RNN read at its last state the norm decays with the distance d = L - 1 - t (the vanishing
gradient); attention reaches every position in one step.
"""

from __future__ import annotations

from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from suite.jobs.prepare import Prepared, model_on, ready
from suite.models.classifier import count_parameters
from suite.types import Batch


def input_gradient_norms(model: torch.nn.Module, task: Any, batch: Batch) -> torch.Tensor:
    """(L,) mean over the batch of ||d loss / d x_t||, x the content embedding's output (B, L, D)."""
    captured: dict[str, torch.Tensor] = {}

    def keep(_module, _inputs, output: torch.Tensor) -> None:
        output.retain_grad()
        captured["x"] = output

    handle = model.content.register_forward_hook(keep)
    try:
        model.zero_grad(set_to_none=True)
        task.loss(model, batch).backward()
    finally:
        handle.remove()
    grad = captured["x"].grad  # (B, L, D)
    return grad.norm(dim=-1).mean(dim=0)  # (L,)


def gradient_flow_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Any,
    tracker: Any,
    n_models: int = 3,
    batch_size: int = 32,
    train_mode: bool = False,
) -> dict[str, Any]:
    """Average input-gradient norm by distance from the output over ``n_models`` fresh initialisations.

    Args:
        n_models: independently seeded models averaged (seed, seed + 1, ...).
        batch_size: sequences per model.
        train_mode: measure with dropout on (default off: the clean signal path).
    """
    task = ready(instantiate(cfg.task))
    batch = next(iter(task.loaders(batch_size, cfg.seed, eval_batch_size=batch_size)["test"])).to(device)
    norms = []
    for k in range(n_models):
        torch.manual_seed(cfg.seed + k)  # each model its own initialisation, the same on every run
        model = model_on(task, cfg.model, device).train(train_mode)
        norms.append(input_gradient_norms(model, task, batch))
    by_position = torch.stack(norms).mean(dim=0)  # (L,)
    by_distance = by_position.flip(0)  # distance 0 = the last position, where a recurrent reader is read out
    relative = by_distance / by_distance[0].clamp(min=1e-30)
    tracker.summary({"grad_norm_at_max_distance_relative": relative[-1].item()})
    return {
        **Prepared(task, model, count_parameters(model)).ok_fields(),
        "steps": 0,
        "metrics": {"grad_norm_relative_at_max_distance": relative[-1].item()},
        "curves": {"grad_norm_by_distance": by_distance.tolist(), "grad_norm_relative_by_distance": relative.tolist()},
    }
