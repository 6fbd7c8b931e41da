"""The one fit / evaluate loop that every task and model goes through.

AdamW (or any injected optimizer), a per-step schedule, gradient clipping, optional bf16
autocast, validation every epoch with the best checkpoint kept, early stopping, and the
test split evaluated once with the best weights. A model without trainable parameters (an
extractive baseline) is only evaluated.
"""
from __future__ import annotations

import copy
import logging
import math
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch
from torch import nn
from tqdm.auto import tqdm

from suite import numerics
from suite.failures import Diverged
from suite.tracking import NullTracker, Tracker
from suite.types import Batch, Task

log = logging.getLogger("suite.train")


@dataclass
class FitResult:
    """What a fit produced, for the result record."""

    val: dict[str, float]
    test: dict[str, float]
    steps: int
    epochs: int
    best_epoch: int
    stop_reason: str
    train_seconds: float
    speed: dict[str, float] = field(default_factory=dict)
    precision: str = "fp32"
    planned_steps: int | None = None  # the steps the schedule was planned for, before any budget cut


def sync(device: torch.device) -> None:
    """Wait for queued device work, so a clock read afterwards means something."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def limited(batches: Iterable[Batch], limit: int | None) -> Iterator[Batch]:
    """At most ``limit`` batches (all when None)."""
    for i, batch in enumerate(batches):
        if limit is not None and i >= limit:
            return
        yield batch


class BudgetPlan:
    """How many steps fit in a time budget, from the time of the first steps.

    The first ``skip`` steps (allocation, caches) are not timed; after ``skip + timed`` steps the
    rate gives the steps that fit. A plan only ever shortens the run.
    """

    def __init__(self, budget_s: float, planned: int, skip: int = 2, timed: int = 10) -> None:
        self.budget_s, self.planned, self.skip, self.timed = budget_s, planned, skip, timed
        self.mark: float | None = None
        self.fits: int | None = None

    def _fits(self, step: int, seconds: float, per_step: float) -> int:
        """The total steps that fit: those done, and those the time left allows at ``per_step``."""
        return step + int((self.budget_s - seconds) / per_step) if per_step > 0 else self.planned

    def observe(self, step: int, seconds: float) -> int | None:
        """Record ``seconds`` of training after ``step`` steps; returns the new total once, if shorter."""
        if step == self.skip:
            self.mark = seconds
        elif step == self.skip + self.timed and self.mark is not None:
            fits = self._fits(step, seconds, (seconds - self.mark) / self.timed)
            if fits < self.planned:
                self.fits = max(step + 1, fits)
                return self.fits
        return None

    def revise(self, step: int, seconds: float, slack: float = 0.02) -> int | None:
        """Re-estimate from every step timed so far (e.g. at an epoch's end); returns a total shorter by over ``slack``.

        One early estimate can be optimistic (another job started on the same cores later);
        without this, the clock would end the run before its schedule had decayed.
        """
        if self.mark is None or step <= self.skip + self.timed:
            return None
        fits = self._fits(step, seconds, (seconds - self.mark) / (step - self.skip))
        current = self.fits if self.fits is not None else self.planned
        if fits < current * (1 - slack):
            self.fits = max(step + 1, fits)
            return self.fits
        return None

    def ends(self, step: int) -> bool:
        return self.fits is not None and step >= self.fits


class Trainer:
    """Fits a model on a task.

    Args:
        name: profile name shown in the progress bar (smoke, quick, full).
        optimizer: factory ``params -> Optimizer`` (Hydra ``_partial_``).
        scheduler: factory ``(optimizer, total_steps) -> LRScheduler``.
        max_epochs: passes over the training split.
        max_steps: stop after this many optimizer steps (None: no cap).
        batch_size, eval_batch_size: examples per batch.
        grad_clip: max gradient norm (0: off).
        precision: 'auto' (bf16 autocast where the device has fast bf16, else fp32), 'fp32' or 'bf16'.
        patience: epochs without validation improvement before stopping (0: never stop early).
        time_budget_s: a cap on the seconds of training (None: no cap). The work is set by
            ``max_steps``/``max_epochs``, so a command gives the same figures on any machine; only
            when the first timed steps predict the cap will be hit is the schedule re-planned to
            end with it (a cosine cut off by the clock would stop at a high learning rate), and
            the result says so (``stop_reason='time_budget'``, fewer steps than planned).
        limit_train_batches, limit_eval_batches: cap batches per epoch / per evaluation (smoke tests).
        log_every: steps between loss logs to the tracker.
        progress: show a progress bar.
    """

    def __init__(
        self,
        name: str,
        optimizer: Callable[..., torch.optim.Optimizer],
        scheduler: Callable[..., Any],
        max_epochs: int = 10,
        max_steps: int | None = None,
        batch_size: int = 64,
        eval_batch_size: int = 256,
        grad_clip: float = 1.0,
        precision: str = "auto",
        patience: int = 0,
        time_budget_s: float | None = None,
        limit_train_batches: int | None = None,
        limit_eval_batches: int | None = None,
        log_every: int = 50,
        progress: bool = True,
    ) -> None:
        if precision not in numerics.PRECISIONS:
            raise ValueError(f"trainer.precision must be one of {numerics.PRECISIONS}, got {precision!r}")
        self.name = name
        self.make_optimizer, self.make_scheduler = optimizer, scheduler
        self.max_epochs, self.max_steps = max_epochs, max_steps
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.grad_clip, self.precision, self.patience = grad_clip, precision, patience
        self.time_budget_s = time_budget_s
        self.limit_train_batches, self.limit_eval_batches = limit_train_batches, limit_eval_batches
        self.log_every, self.progress = log_every, progress

    def replan(self, optimizer: torch.optim.Optimizer, total: int, done: int) -> Any:
        """A fresh schedule over ``total`` steps, advanced to step ``done``."""
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        scheduler = self.make_scheduler(optimizer, total_steps=total)
        with warnings.catch_warnings():  # fast-forwarding steps the schedule without the optimizer
            warnings.simplefilter("ignore")
            for _ in range(done):
                scheduler.step()
        return scheduler

    def autocast(self, device: torch.device):
        return numerics.autocast(numerics.resolve_precision(self.precision, device), device)

    def evaluate(self, model: nn.Module, task: Task, batches: Iterable[Batch], device: torch.device) -> tuple[dict[str, float], dict[str, float]]:
        """Task metrics on a split, and inference throughput (real tokens and items per second)."""
        model.eval()
        counted = _Counted(limited(batches, self.limit_eval_batches), device)
        with torch.inference_mode(), self.autocast(device):
            sync(device)
            start = time.perf_counter()
            metrics = task.evaluate(model, counted, device)
            sync(device)
            seconds = time.perf_counter() - start
        return metrics, counted.rates(seconds)

    def fit(self, model: nn.Module, task: Task, device: torch.device, seed: int, checkpoint_dir: Path | None = None, tracker: Tracker | None = None) -> FitResult:
        """Train with validation each epoch; restore the best weights; evaluate test once."""
        tracker = tracker or NullTracker()
        loaders = task.loaders(self.batch_size, seed, eval_batch_size=self.eval_batch_size)
        if not any(p.requires_grad for p in model.parameters()):
            return self.evaluate_only(model, task, loaders, device)
        steps_per_epoch = len(loaders["train"]) if self.limit_train_batches is None else min(len(loaders["train"]), self.limit_train_batches)
        total = steps_per_epoch * self.max_epochs if self.max_steps is None else min(self.max_steps, steps_per_epoch * self.max_epochs)
        planned = total
        optimizer = self.make_optimizer(params=[p for p in model.parameters() if p.requires_grad])
        scheduler = self.make_scheduler(optimizer, total_steps=max(1, total))
        budget_plan = BudgetPlan(self.time_budget_s, total) if self.time_budget_s is not None else None

        best_score, best_state, best_val, best_epoch = -math.inf, None, {}, 0
        step, epoch, bad_epochs, stop_reason = 0, 0, 0, "max_epochs"
        train_seconds, tokens, items = 0.0, 0, 0
        bar = tqdm(total=total, desc=f"{task.name}/{self.name}", disable=not self.progress, dynamic_ncols=True, leave=False)
        for epoch in range(1, self.max_epochs + 1):
            model.train()
            sync(device)
            start = time.perf_counter()
            for batch in limited(loaders["train"], self.limit_train_batches):
                batch = batch.to(device)
                with self.autocast(device):
                    loss = task.loss(model, batch)
                if not torch.isfinite(loss):
                    raise Diverged(f"loss became {loss.item()} at step {step}")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.grad_clip:
                    nn.utils.clip_grad_norm_(model.parameters(), self.grad_clip)
                optimizer.step()
                scheduler.step()
                step, tokens, items = step + 1, tokens + batch.n_tokens, items + batch.n_items
                if budget_plan is not None and (fits := budget_plan.observe(step, train_seconds + time.perf_counter() - start)) is not None:
                    total, scheduler = fits, self.replan(optimizer, fits, step)
                    bar.total = total
                if step % self.log_every == 0 or step == 1:
                    loss_value = loss.item()
                    tracker.log({"train/loss": loss_value, "train/lr": scheduler.get_last_lr()[0]}, step)
                    bar.set_postfix(loss=f"{loss_value:.3f}", tok_s=f"{tokens / max(1e-9, train_seconds + time.perf_counter() - start):.0f}")
                bar.update(1)
                if self.max_steps is not None and step >= self.max_steps:
                    stop_reason = "max_steps"
                    break
                if self.time_budget_s is not None and (train_seconds + time.perf_counter() - start > self.time_budget_s or budget_plan.ends(step)):
                    stop_reason = "time_budget"
                    break
            sync(device)
            train_seconds += time.perf_counter() - start
            if budget_plan is not None and stop_reason == "max_epochs" and (fits := budget_plan.revise(step, train_seconds)) is not None:
                total, scheduler = fits, self.replan(optimizer, fits, step)
                bar.total = total

            val, _ = self.evaluate(model, task, loaders["val"], device)
            tracker.log({f"val/{k}": v for k, v in val.items()} | {"epoch": epoch}, step)
            bar.set_postfix(loss=f"{loss.item():.3f}", **{f"val_{task.primary_metric}": f"{val[task.primary_metric]:.3f}"})
            score = val[task.primary_metric]
            log.info("epoch %d, step %d, %.0fs: val %s", epoch, step, train_seconds, ", ".join(f"{k}={v:.4f}" for k, v in val.items()))
            if score > best_score:
                best_score, best_val, best_epoch, bad_epochs = score, val, epoch, 0
                best_state = copy.deepcopy(model.state_dict())
                if checkpoint_dir is not None:
                    checkpoint_dir.mkdir(parents=True, exist_ok=True)
                    torch.save(best_state, checkpoint_dir / "best.pt")
            else:
                bad_epochs += 1
            if stop_reason in ("max_steps", "time_budget"):
                break
            if self.patience and bad_epochs >= self.patience:
                stop_reason = "early_stopping"
                break
        bar.close()

        if best_state is not None:
            model.load_state_dict(best_state)
        test, infer = self.evaluate(model, task, loaders["test"], device)
        speed = {
            "train_tokens_per_s": tokens / train_seconds if train_seconds else 0.0,
            "train_items_per_s": items / train_seconds if train_seconds else 0.0,
            **infer,
        }
        return FitResult(val=best_val, test=test, steps=step, epochs=epoch, best_epoch=best_epoch, stop_reason=stop_reason, train_seconds=train_seconds,
                         speed=speed, precision=numerics.resolve_precision(self.precision, device), planned_steps=planned)

    def evaluate_only(self, model: nn.Module, task: Task, loaders: dict[str, Iterable[Batch]], device: torch.device) -> FitResult:
        """A model with nothing to train (e.g. Lead-k): validation and test metrics, no steps."""
        val, _ = self.evaluate(model, task, loaders["val"], device)
        test, infer = self.evaluate(model, task, loaders["test"], device)
        return FitResult(val=val, test=test, steps=0, epochs=0, best_epoch=0, stop_reason="no_parameters", train_seconds=0.0, speed=infer,
                         precision=numerics.resolve_precision(self.precision, device), planned_steps=0)


class _Counted:
    """Wraps batches: moves each to the device and counts real tokens and items for throughput."""

    def __init__(self, batches: Iterable[Batch], device: torch.device) -> None:
        self.batches, self.device = batches, device
        self.tokens = self.items = 0

    def __iter__(self) -> Iterator[Batch]:
        for batch in self.batches:
            self.tokens += batch.n_tokens
            self.items += batch.n_items
            yield batch.to(self.device)

    def rates(self, seconds: float) -> dict[str, float]:
        seconds = max(seconds, 1e-9)
        return {"infer_tokens_per_s": self.tokens / seconds, "infer_items_per_s": self.items / seconds}
