"""The one fit / evaluate loop that every task and model goes through.

AdamW (or any injected optimizer), a per-step schedule, gradient clipping, optional bf16
autocast and validation every epoch, or ``evaluations`` times over the planned steps (the learning curve that the
convergence verdict reads: ``suite.training.convergence``). Everything else hooks in as a callback
(``suite/training/callbacks.py``): the best checkpoint, early stopping, the time budget, logging and
progress. The loop itself owns what a resumed run needs to continue exactly: ``last.pt``
(model, optimizer, schedule, counters, callback states, every random state and the position
in the epoch's data order) at each epoch end, every ``checkpoint_every_s`` seconds and on a
stop signal; and, under torchrun, the data shards and the ranks' agreement. The job scores
the test split with the fitted model afterwards. A model without trainable parameters (an
extractive baseline) is only evaluated.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch
from torch import nn

from suite.runtime import distributed, numerics
from suite.runtime.device import sync
from suite.runtime.differences import config_differences
from suite.runtime.failures import Diverged, Interrupted
from suite.runtime.moved import current
from suite.runtime.preemption import StopSignals
from suite.runtime.tracking import NullTracker, Tracker
from suite.runtime.verdicts import DIVERGED
from suite.training.callbacks import (
    BestCheckpoint,
    Callback,
    EarlyStopping,
    Hooks,
    LearningCurve,
    PlateauReached,
    Progress,
    TargetReached,
    TimeBudget,
    TrackerLog,
)
from suite.training.checkpoint import LAST, loader_generators, read_last, rng_state, set_rng_state, write_last
from suite.training.convergence import ConvergenceTest, Verdict
from suite.training.optim import decay_groups
from suite.training.state import FitState
from suite.training.step import Update, optimizer_step
from suite.types import Batch, Task

log = logging.getLogger("suite.training.trainer")


def limited(batches: Iterable[Batch], limit: int | None) -> Iterator[Batch]:
    """At most ``limit`` batches (all when None)."""
    for i, batch in enumerate(batches):
        if limit is not None and i >= limit:
            return
        yield batch


RESUME_MAY_CHANGE = (
    "progress",
    "log_every",
    "checkpoint_every_s",
    "resume",
    "time_budget_s",
    "eval_batch_size",
    "convergence",
)
"""Trainer settings a resumed run may change (they do not change what is computed); any other difference refuses the
checkpoint."""


@dataclass
class FitResult:
    """What a fit produced: the fitted model (best weights restored) and the figures for the record."""

    model: nn.Module = field(repr=False)
    val: dict[str, float]
    steps: int
    epochs: int
    best_epoch: int
    stop_reason: str
    train_seconds: float
    speed: dict[str, float] = field(default_factory=dict)  # training throughput (summed over ranks)
    precision: str = "fp32"
    precision_reason: str | None = None  # why ``precision`` (suite.runtime.numerics.choose)
    planned_steps: int | None = None  # the steps the schedule was planned for, before any budget cut
    resumed_at: int | None = None  # the step a resumed run continued from
    world_size: int = 1
    curves: dict[str, list[float]] = field(default_factory=dict)  # the learning curve (``LearningCurve.columns``)
    convergence: dict[str, Any] = field(default_factory=dict)  # the verdict on it (``Verdict.record``)


@dataclass
class Saves:
    """Where a fit writes ``last.pt``, what the file must match to be resumed, and when it was last written."""

    directory: Path | None
    identity: dict[str, Any]
    last: float = field(default_factory=time.perf_counter)


class Trainer:
    """Fits a model on a task.

    Args:
        name: profile name shown in the progress bar (smoke, quick, full).
        optimizer: factory ``params -> Optimizer`` (Hydra ``_partial_``).
        scheduler: factory ``(optimizer, total_steps) -> LRScheduler``.
        max_epochs: passes over the training split.
        max_steps: stop after this many optimizer steps (None: no cap).
        batch_size, eval_batch_size: examples per batch (per process under torchrun).
        grad_clip: max gradient norm (0: off).
        precision: 'auto' (bf16 autocast where this device runs the model's family faster: ``numerics.choose``), 'fp32'
            or 'bf16'.
        patience: epochs without validation improvement before stopping (0: never stop early).
        stop_at: stop once the validation primary metric reaches this (None: never); for a metric with a
            ceiling, e.g. 1.0 for recall's accuracy (``callbacks.TargetReached``).
        stop_on_plateau: from this step on, stop at the first validation whose curve ``convergence`` calls plateaued
            (None: never; ``callbacks.PlateauReached``). Its verdicts need ``min_evaluations`` in the judged window,
            so give the run enough ``evaluations`` (20 lets it stop from a little past half of ``max_steps``).
        time_budget_s: a cap on the seconds of training (None: no cap). The work is set by
            ``max_steps``/``max_epochs``, so a command gives the same figures on any machine; only
            when the first timed steps predict the cap will be hit is the schedule re-planned to
            end with it, and the result says so (``stop_reason='time_budget'``, fewer steps than planned).
        limit_train_batches, limit_eval_batches: cap batches per epoch / per evaluation (smoke tests).
        log_every: steps between loss logs to the tracker.
        progress: show a progress bar (on a terminal only; logs get a line per epoch).
        checkpoint_every_s: seconds between mid-epoch ``last.pt`` writes (also written at each epoch end; None: epoch
            ends only).
        resume: 'auto' (continue from ``<checkpoint dir>/last.pt`` when it exists), 'never', or a path to a ``last.pt``.
        decay: 'matrices' (weight decay on layers' weight matrices only: not on biases, norms,
            embeddings, positions; ``suite/training/optim.py``) or 'all' (every parameter).
        callbacks: more callbacks for every fit, after the standard ones (from config, e.g. ``experiment=tune``'s
            report to the study).
        evaluations: validate this many times, evenly over the planned steps, and at the end (None: at every epoch's
            end). Patience counts validations.
        convergence: the test that judges the learning curve at the end and stops a run whose loss explodes
            (``suite.training.convergence.ConvergenceTest``; its defaults when None).
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
        stop_at: float | None = None,
        stop_on_plateau: int | None = None,
        time_budget_s: float | None = None,
        limit_train_batches: int | None = None,
        limit_eval_batches: int | None = None,
        log_every: int = 50,
        progress: bool = True,
        checkpoint_every_s: float | None = 600.0,
        resume: str = "auto",
        decay: str = "matrices",
        callbacks: Sequence[Callback] = (),
        evaluations: int | None = None,
        convergence: ConvergenceTest | None = None,
    ) -> None:
        if precision not in numerics.PRECISIONS:
            raise ValueError(f"trainer.precision must be one of {numerics.PRECISIONS}, got {precision!r}")
        self.name = name
        self.make_optimizer, self.make_scheduler = optimizer, scheduler
        self.max_epochs, self.max_steps = max_epochs, max_steps
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.grad_clip, self.precision, self.patience = grad_clip, precision, patience
        self.time_budget_s, self.stop_at = time_budget_s, stop_at
        if stop_on_plateau is not None and (isinstance(stop_on_plateau, bool) or stop_on_plateau < 0):
            raise ValueError(f"trainer.stop_on_plateau must be a step count >= 0 or null, got {stop_on_plateau!r}")
        self.stop_on_plateau = stop_on_plateau
        self.limit_train_batches, self.limit_eval_batches = limit_train_batches, limit_eval_batches
        self.log_every, self.progress = log_every, progress
        self.checkpoint_every_s, self.resume = checkpoint_every_s, str(resume)
        if decay not in ("matrices", "all"):
            raise ValueError(f"trainer.decay must be 'matrices' or 'all', got {decay!r}")
        self.decay = decay
        self.injected = list(callbacks)
        if evaluations is not None and evaluations < 1:
            raise ValueError(f"trainer.evaluations must be a positive count or null (every epoch), got {evaluations}")
        self.evaluations = evaluations
        self.convergence = convergence or ConvergenceTest()

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

    def choice(self, device: torch.device, model: nn.Module) -> numerics.Choice:
        """The precision this trainer runs ``model`` in on ``device`` ('auto' decides per model family)."""
        return numerics.choose(self.precision, device, model)

    def autocast(self, device: torch.device, model: nn.Module):
        return numerics.autocast(self.choice(device, model).precision, device)

    def evaluate(
        self, model: nn.Module, task: Task, batches: Iterable[Batch], device: torch.device
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Task metrics on a split, and inference throughput (real tokens and items per second)."""
        model.eval()
        counted = _Counted(limited(batches, self.limit_eval_batches), device)
        with torch.inference_mode(), self.autocast(device, model):
            sync(device)
            start = time.perf_counter()
            metrics = task.evaluate(model, counted, device)
            sync(device)
            seconds = time.perf_counter() - start
        return metrics, counted.rates(seconds)

    def score(
        self, model: nn.Module, task: Task, device: torch.device, seed: int, split: str = "test"
    ) -> tuple[dict[str, float], dict[str, float]]:
        """Metrics and inference throughput of ``model`` on a whole split (the job scores test with the fitted
        model)."""
        loaders = task.loaders(self.batch_size, seed, eval_batch_size=self.eval_batch_size)
        return self.evaluate(model, task, loaders[split], device)

    def callbacks(self, task: Task, checkpoint_dir: Path | None, tracker: Tracker) -> list[Callback]:
        """The standard ones, in the order they run: budget, best weights, early stopping, logging, progress."""
        out: list[Callback] = [TimeBudget(self.time_budget_s)] if self.time_budget_s is not None else []
        out += [BestCheckpoint(checkpoint_dir)] + ([EarlyStopping(self.patience)] if self.patience else [])
        out += [TargetReached(self.stop_at)] if self.stop_at is not None else []
        curve = LearningCurve(self.log_every, self.convergence)
        out += [curve]
        if self.stop_on_plateau is not None:
            out += [PlateauReached(curve, self.convergence, self.stop_on_plateau)]
        return out + [
            TrackerLog(tracker, self.log_every),
            Progress(f"{task.name}/{self.name}", self.progress, self.log_every),
        ]

    def resume_from(self, checkpoint_dir: Path | None) -> Path | None:
        """The ``last.pt`` to continue from, per ``resume``; None to start afresh."""
        if self.resume == "never":
            return None
        if self.resume == "auto":
            path = checkpoint_dir / LAST if checkpoint_dir is not None else None
            return path if path is not None and path.is_file() else None
        path = Path(self.resume)
        if not path.is_file():
            raise FileNotFoundError(
                f"trainer.resume={self.resume}: no such checkpoint (a run writes <run dir>/checkpoints/{LAST}; "
                "trainer.resume=auto continues from the run directory's own)"
            )
        return path

    def fit(
        self,
        model: nn.Module,
        task: Task,
        device: torch.device,
        seed: int,
        checkpoint_dir: Path | None = None,
        tracker: Tracker | None = None,
        callbacks: Sequence[Callback] = (),
        identity: dict[str, Any] | None = None,
        world: distributed.World = distributed.SINGLE,
    ) -> FitResult:
        """Train with validation each epoch; return the model with its best validation weights.

        Args:
            checkpoint_dir: where ``best.pt`` and ``last.pt`` go (None: nothing written, no resume).
            callbacks: run after the standard ones (``callbacks()``) and the configured ones, e.g. a pruning schedule.
            identity: what a checkpoint must have been written with to be resumed (the job passes
                task, model, seed and trainer settings); a difference is refused, naming it.
            world: this process's rank and the number of processes (torchrun); rank 0 writes files.
        """
        tracker = tracker or NullTracker()
        loaders = task.loaders(self.batch_size, seed, eval_batch_size=self.eval_batch_size)
        if not any(p.requires_grad for p in model.parameters()):
            return self.evaluate_only(model, task, loaders, device)
        train = distributed.shard(loaders["train"], world, seed)
        steps_per_epoch = len(train) if self.limit_train_batches is None else min(len(train), self.limit_train_batches)
        total = (
            steps_per_epoch * self.max_epochs
            if self.max_steps is None
            else min(self.max_steps, steps_per_epoch * self.max_epochs)
        )
        update = self.update(model, total)
        state = FitState(
            model,
            update.optimizer,
            update.scheduler,
            task,
            device,
            world,
            total=total,
            planned=total,
            primary=task.primary_metric,
            loader=train,
            precision=self.choice(device, model),  # once: the model's declared family does not change while it trains
        )
        hooks = Hooks(self.callbacks(task, checkpoint_dir, tracker) + self.injected + list(callbacks))
        saves = Saves(checkpoint_dir, (identity or {}) | {"world_size": world.size})
        position: dict[str, Any] | None = None
        if (path := self.resume_from(checkpoint_dir)) is not None:
            position = self.restore(path, state, hooks, saves.identity)
            log.info("resumed from %s at epoch %d, step %d", path, position["epoch"], state.step)
        resumed_at = state.step if position is not None else None
        state.eval_every = self.eval_every(state.planned)
        # The wrapper averages gradients over ranks; evaluation and checkpoints use the plain model.
        stepped = (
            model if not world.distributed else nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        )
        hooks.fire("on_fit_start", state)
        try:
            with StopSignals() as signals:
                for epoch in range(position["epoch"] if position else 1, self.max_epochs + 1):
                    if state.stop_reason is not None:  # resumed from the end of the epoch that stopped it
                        break
                    self.train_epoch(stepped, state, hooks, saves, signals, epoch, position, loaders["val"])
                    position = None
                    self.end_epoch(state, hooks, saves, loaders["val"])
                    if state.stop_reason is not None:
                        break
        except Diverged as err:  # the record keeps the curve up to where it diverged
            curve = learning_curve(hooks)
            err.fields = {
                "curves": curve.columns() if curve else {},
                "convergence": Verdict(DIVERGED, str(err), state.primary, test=asdict(self.convergence)).record(),
            }
            raise
        hooks.fire("on_fit_end", state)
        if checkpoint_dir is not None and world.main:  # a finished run needs no resume state; best.pt stays
            (checkpoint_dir / LAST).unlink(missing_ok=True)
        return self.result(state, hooks, resumed_at)

    def train_epoch(
        self,
        stepped: nn.Module,
        state: FitState,
        hooks: Hooks,
        saves: Saves,
        signals: StopSignals,
        epoch: int,
        position: dict[str, Any] | None,
        val_batches: Iterable[Batch] = (),
    ) -> None:
        """The epoch's steps, each followed by the callbacks and, when one is due (``evaluations``), a validation;
        ``last.pt`` when a signal stops the run (then ``Interrupted``) or when one is due."""
        state.epoch = epoch
        state.model.train()
        distributed.set_epoch(state.loader, epoch)
        batches = self.epoch_batches(state.loader, state, position)
        sync(state.device)
        state.clock = time.perf_counter()
        for batch in batches:
            self.train_step(stepped, state, batch.to(state.device))
            if self.max_steps is not None and state.step >= self.max_steps:
                state.stop_reason = "max_steps"
            hooks.fire("on_step_end", state)
            if state.eval_every is not None and state.step % state.eval_every == 0 and state.stop_reason is None:
                self.validate_now(state, hooks, val_batches)
                stepped.train()
            if self.agree(state, signals.received is not None):
                self.save(saves, state, hooks, at_epoch_end=False)
                raise Interrupted(
                    f"stopped by signal {signals.received} at epoch {epoch}, step {state.step}; "
                    f"{LAST} saved: re-run the same command (same run directory) to resume",
                    forward=signals.forward,
                )
            if self.checkpoint_every_s is not None and time.perf_counter() - saves.last > self.checkpoint_every_s:
                self.save(saves, state, hooks, at_epoch_end=False)
            if state.stop_reason is not None:
                break
        sync(state.device)
        state.train_seconds += time.perf_counter() - state.clock
        state.clock = None

    def end_epoch(self, state: FitState, hooks: Hooks, saves: Saves, val_batches: Iterable[Batch]) -> None:
        """After an epoch: its callbacks, validation (every epoch, or at the end of a run that validates at
        ``evaluations`` points) and theirs, then ``last.pt`` at the epoch's end."""
        hooks.fire("on_epoch_end", state)
        self.agree(state, False)
        ending = state.stop_reason is not None or state.epoch == self.max_epochs
        if (state.eval_every is None or ending) and state.validated_at != state.step:
            self.validate_now(state, hooks, val_batches)
        self.save(saves, state, hooks, at_epoch_end=True)

    def eval_every(self, planned: int) -> int | None:
        """Steps between validations: ``evaluations`` spread over the planned steps (None: at every epoch's end)."""
        return None if self.evaluations is None else max(1, math.ceil(planned / self.evaluations))

    def validate_now(self, state: FitState, hooks: Hooks, val_batches: Iterable[Batch]) -> None:
        """Validate (the training clock paused: ``train_seconds`` counts training alone), then the callbacks."""
        running = state.clock is not None
        if running:
            state.train_seconds += time.perf_counter() - state.clock
            state.clock = None
        state.val = self.validate(state.model, state.task, val_batches, state.device, state.world)
        state.validated_at = state.step
        hooks.fire("on_validation_end", state)
        self.agree(state, False)
        if running:
            sync(state.device)
            state.clock = time.perf_counter()

    def result(self, state: FitState, hooks: Hooks, resumed_at: int | None) -> FitResult:
        """The fit's figures: the best validation epoch's (``BestCheckpoint``), throughput summed over ranks."""
        best = next((h for h in hooks if isinstance(h, BestCheckpoint)), None)
        curve = learning_curve(hooks)
        tokens, items = distributed.reduce([state.tokens, state.items], "sum", state.world, state.device)
        seconds = max(distributed.reduce([state.train_seconds], "max", state.world, state.device)[0], 1e-9)
        return FitResult(
            model=state.model,
            val=best.val if best else state.val,
            steps=state.step,
            epochs=state.epoch,
            best_epoch=best.epoch if best else state.epoch,
            stop_reason=state.stop_reason or "max_epochs",
            train_seconds=state.train_seconds,
            speed={"train_tokens_per_s": tokens / seconds, "train_items_per_s": items / seconds},
            **state.precision.fields(),
            planned_steps=state.planned,
            resumed_at=resumed_at,
            world_size=state.world.size,
            curves=curve.columns() if curve else {},
            convergence=self.verdict(state, curve).record(),
        )

    def verdict(self, state: FitState, curve: LearningCurve | None) -> Verdict:
        """The convergence verdict on the primary validation metric's curve (``suite.training.convergence``)."""
        if state.stop_reason == "target_reached" and self.stop_at is not None:
            return self.convergence.reached(self.stop_at, state.primary)
        columns = curve.columns() if curve else {}
        return self.convergence.judge(columns.get("step", []), columns.get(f"val_{state.primary}", []), state.primary)

    def parameter_groups(self, model: nn.Module) -> list[dict[str, Any]] | list[nn.Parameter]:
        """What the optimizer updates: every trainable parameter, or (``decay='matrices'``) two groups, decayed and
        not."""
        if self.decay == "all":
            return [p for p in model.parameters() if p.requires_grad]
        return decay_groups(model)

    def update(self, model: nn.Module, total_steps: int) -> Update:
        """This trainer's optimizer (over ``parameter_groups``), its schedule over ``total_steps`` and its gradient
        clip."""
        optimizer = self.make_optimizer(params=self.parameter_groups(model))
        return Update(optimizer, self.make_scheduler(optimizer, total_steps=max(1, total_steps)), self.grad_clip)

    def train_step(self, model: nn.Module, state: FitState, batch: Batch) -> None:
        """One optimizer and schedule step on ``batch`` (``optimizer_step``); counts it."""
        try:
            loss = optimizer_step(
                model,
                state.task,
                batch,
                Update(state.optimizer, state.scheduler, self.grad_clip),
                state.precision.precision,
                state.device,
            )
        except Diverged as err:
            raise Diverged(f"{err} at step {state.step}") from None
        state.loss = loss
        state.step, state.batch = state.step + 1, state.batch + 1
        state.tokens, state.items = state.tokens + batch.n_tokens, state.items + batch.n_items

    def epoch_batches(self, loader: Any, state: FitState, position: dict[str, Any] | None) -> Iterator[Batch]:
        """The epoch's training batches; a resumed epoch restarts its order and skips the batches already trained on.

        The order is set by the loader's generators at the epoch's start (kept in ``state`` for
        ``last.pt``). The random states are restored where the uninterrupted run stood: before the
        epoch's iterator is made at an epoch's start, after the skipped batches mid-epoch.
        """
        generators = loader_generators(loader)
        state.batch = 0
        if position is not None:
            for generator, saved in zip(generators, position["generators"]):
                generator.set_state(saved)
            if position["batch"] == 0:
                set_rng_state(position["rng"])
        state.epoch_generators = [g.get_state() for g in generators]
        batches = iter(limited(loader, self.limit_train_batches))
        if position is not None and position["batch"]:
            for _ in range(position["batch"]):
                next(batches)
            state.batch = position["batch"]
            set_rng_state(position["rng"])
        return batches

    def agree(self, state: FitState, interrupted: bool) -> bool:
        """Apply the callbacks' requests, agreed over ranks: the shortest schedule, a stop if any rank stops. Returns
        whether to interrupt."""
        if state.world.distributed:
            # One collective a step: the maximum of -total is minus the shortest requested schedule.
            stop, interrupted_anywhere, neg_total = distributed.reduce(
                [float(state.stop_reason is not None), float(interrupted), -float(state.requested_total or math.inf)],
                "max",
                state.world,
                state.device,
            )
            state.requested_total, interrupted = (
                (None if math.isinf(neg_total) else int(-neg_total)),
                bool(interrupted_anywhere),
            )
            if stop:  # every rank stops, for the first reason any rank had
                state.stop_reason = next(r for r in distributed.gather(state.stop_reason, state.world) if r is not None)
        if state.requested_total is not None and state.requested_total != state.total:
            state.total, state.scheduler = (
                state.requested_total,
                self.replan(state.optimizer, state.requested_total, state.step),
            )
        state.requested_total = None
        return interrupted

    def validate(
        self, model: nn.Module, task: Task, batches: Iterable[Batch], device: torch.device, world: distributed.World
    ) -> dict[str, float]:
        """Validation metrics from rank 0 on the whole split (each example once), shared with every rank."""
        val = self.evaluate(model, task, batches, device)[0] if world.main else None
        return distributed.broadcast(val, world)

    def save(self, saves: Saves, state: FitState, hooks: Hooks, at_epoch_end: bool) -> None:
        """Write ``last.pt`` (rank 0; every rank's random state gathered into it)."""
        saves.last = time.perf_counter()
        if saves.directory is None:  # the same on every rank: nothing to gather either
            return
        checkpoint_dir, identity = saves.directory, saves.identity
        rng = distributed.gather(rng_state(), state.world)
        if not state.world.main:
            return
        generators = (
            [g.get_state() for g in loader_generators(state.loader)] if at_epoch_end else state.epoch_generators
        )
        write_last(
            checkpoint_dir / LAST,
            {
                "identity": identity,
                "model": state.model.state_dict(),
                "optimizer": state.optimizer.state_dict(),
                "scheduler": state.scheduler.state_dict(),
                "total": state.total,
                "planned": state.planned,
                "step": state.step,
                "epoch": state.epoch,
                "train_seconds": state.train_seconds if at_epoch_end else state.elapsed(),
                "tokens": state.tokens,
                "items": state.items,
                "stop_reason": state.stop_reason,
                "position": {
                    "epoch": state.epoch + 1 if at_epoch_end else state.epoch,
                    "batch": 0 if at_epoch_end else state.batch,
                    "generators": generators,
                },
                "rng": rng,
                "callbacks": [{"type": type(h).__name__, "state": h.state_dict()} for h in hooks],
            },
        )

    def restore(self, path: Path, state: FitState, hooks: Hooks, identity: dict[str, Any]) -> dict[str, Any]:
        """Load ``last.pt`` into ``state`` and the callbacks, or refuse it with the reason; returns the data position to
        continue from."""
        saved = read_last(path, state.device)
        if differences := config_differences(
            current(saved["identity"]), identity
        ):  # current: paths from before the package move
            raise ValueError(
                f"{path} was written by another configuration ({'; '.join(differences[:5])}); "
                "re-run with the overrides that wrote it, "
                "or start afresh with trainer.resume=never or another run directory"
            )
        try:
            state.model.load_state_dict(saved["model"])
        except RuntimeError as err:
            raise ValueError(f"{path} does not fit this model: {err}") from err
        state.scheduler = self.make_scheduler(state.optimizer, total_steps=max(1, saved["total"]))
        state.optimizer.load_state_dict(
            saved["optimizer"]
        )  # after the schedule is made: it restores the learning rate the schedule had set
        state.scheduler.load_state_dict(saved["scheduler"])
        state.total, state.planned, state.step, state.epoch = (
            saved["total"],
            saved["planned"],
            saved["step"],
            saved["epoch"],
        )
        state.train_seconds, state.tokens, state.items = saved["train_seconds"], saved["tokens"], saved["items"]
        state.stop_reason = saved["stop_reason"]
        kept = {
            key: c["state"] for key, c in zip(callback_keys(c["type"] for c in saved["callbacks"]), saved["callbacks"])
        }
        for hook, key in zip(hooks, callback_keys(type(h).__name__ for h in hooks)):
            if key in kept:  # a callback new to this run starts afresh
                hook.load_state_dict(kept[key])
        return saved["position"] | {"rng": saved["rng"][state.world.rank]}

    def evaluate_only(
        self, model: nn.Module, task: Task, loaders: dict[str, Iterable[Batch]], device: torch.device
    ) -> FitResult:
        """A model with nothing to train (e.g. Lead-k): validation metrics, no steps."""
        val, _ = self.evaluate(model, task, loaders["val"], device)
        return FitResult(
            model=model,
            val=val,
            steps=0,
            epochs=0,
            best_epoch=0,
            stop_reason="no_parameters",
            train_seconds=0.0,
            **self.choice(device, model).fields(),
            planned_steps=0,
        )


def learning_curve(hooks: Hooks) -> LearningCurve | None:
    """The fit's learning-curve callback."""
    return next((h for h in hooks if isinstance(h, LearningCurve)), None)


def callback_keys(names: Iterable[str]) -> list[tuple[str, int]]:
    """(type name, occurrence): how a callback's saved state is found again."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        out.append((name, seen.get(name, 0)))
        seen[name] = seen.get(name, 0) + 1
    return out


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
