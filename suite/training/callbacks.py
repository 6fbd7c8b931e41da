"""Hooks into the training loop, so that a new capability is a callback, not an edit of the loop.

The loop (``suite.training.trainer.Trainer.fit``) calls, in the order the callbacks were given:

    on_fit_start(state)        the model, optimizer and schedule exist (after any resume)
    on_step_end(state)         after each optimizer and schedule step
    on_epoch_end(state)        the epoch's training steps are done, before validation
    on_validation_end(state)   ``state.val`` holds this epoch's validation metrics
    on_fit_end(state)          training is over (not called when it fails)

A callback stops the run by setting ``state.stop_reason``, and asks for a shorter schedule
with ``state.request_total(steps)``; the loop applies both (agreed across ranks). What a
callback must carry over a resume goes in ``state_dict``/``load_state_dict``.
"""

from __future__ import annotations

import copy
import logging
import math
import sys
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from tqdm.auto import tqdm

from suite.runtime.failures import Diverged
from suite.runtime.tracking import Tracker
from suite.runtime.verdicts import PLATEAUED
from suite.training.checkpoint import BEST, write_weights
from suite.training.convergence import ConvergenceTest

if TYPE_CHECKING:
    from pathlib import Path

    from suite.training.state import FitState

log = logging.getLogger("suite.training.trainer")


class Callback:
    """No-op hooks; a callback overrides the ones it needs."""

    def on_fit_start(self, state: FitState) -> None: ...

    def on_step_end(self, state: FitState) -> None: ...

    def on_epoch_end(self, state: FitState) -> None: ...

    def on_validation_end(self, state: FitState) -> None: ...

    def on_fit_end(self, state: FitState) -> None: ...

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class Hooks:
    """A fit's callbacks, in the order they run: ``fire('on_step_end', state)`` calls each one's ``on_step_end``."""

    def __init__(self, callbacks: Sequence[Callback]) -> None:
        self.callbacks = list(callbacks)

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.callbacks)

    def fire(self, event: str, state: FitState) -> None:
        for callback in self.callbacks:
            getattr(callback, event)(state)


class BestCheckpoint(Callback):
    """Keeps the weights of the best validation score (``state.primary``), writes them to ``best.pt``, restores them at
    the end."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.score, self.val, self.epoch, self.weights = -math.inf, {}, 0, None

    def on_validation_end(self, state: FitState) -> None:
        score = state.val[state.primary]
        state.improved = state.best_eligible and score > self.score
        if state.improved:
            self.score, self.val, self.epoch = score, state.val, state.epoch
            self.weights = copy.deepcopy(state.model.state_dict())
            if self.directory is not None and state.world.main:
                write_weights(self.weights, self.directory / BEST)

    def on_fit_end(self, state: FitState) -> None:
        if self.weights is not None:
            state.model.load_state_dict(self.weights)

    def state_dict(self) -> dict[str, Any]:
        return {"score": self.score, "val": self.val, "epoch": self.epoch, "weights": self.weights}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.score, self.val, self.epoch, self.weights = state["score"], state["val"], state["epoch"], state["weights"]


class EarlyStopping(Callback):
    """Stops after ``patience`` validations without improvement (runs after ``BestCheckpoint``, which judges
    improvement)."""

    def __init__(self, patience: int) -> None:
        self.patience, self.bad_epochs = patience, 0

    def on_validation_end(self, state: FitState) -> None:
        if (
            not state.best_eligible
        ):  # epochs that could not be the best (a schedule still running) do not count against patience
            return
        self.bad_epochs = 0 if state.improved else self.bad_epochs + 1
        if self.patience and self.bad_epochs >= self.patience and state.stop_reason is None:
            state.stop_reason = "early_stopping"

    def state_dict(self) -> dict[str, Any]:
        return {"bad_epochs": self.bad_epochs}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.bad_epochs = state["bad_epochs"]


class TargetReached(Callback):
    """Stops once the validation metric that picks the best epoch reaches ``target`` (higher is better).

    For a metric with a ceiling (recall's accuracy 1.0), an epoch that reaches it cannot be improved on,
    so the rest of the budget would buy nothing. The rule is the same for every model: each is offered the
    same steps, and the record says where it stopped (``stop_reason='target_reached'``, ``steps``).
    """

    def __init__(self, target: float) -> None:
        self.target = target

    def on_validation_end(self, state: FitState) -> None:
        if state.val.get(state.primary, -math.inf) >= self.target and state.stop_reason is None:
            state.stop_reason = "target_reached"


class PlateauReached(Callback):
    """Stops at the first validation, from step ``after`` on, where the convergence test calls the curve so far
    plateaued (``ConvergenceTest.judge`` on ``curve``, the run's ``LearningCurve``, which must run before this).

    The rule is the same for every model: each is offered the same steps and stops once its own curve has
    flattened, so a model that learns fast does not spend the budget a slow one needs. ``after`` keeps a
    model whose curve is flat before a late rise (recall's LSTM at chance for hundreds of steps) from being
    stopped there. The run's final verdict is the same test on the same curve: plateaued.
    """

    def __init__(self, curve: LearningCurve, test: ConvergenceTest, after: int) -> None:
        self.curve, self.test, self.after = curve, test, after

    def on_validation_end(self, state: FitState) -> None:
        if state.step < self.after or state.stop_reason is not None:
            return
        columns = self.curve.columns()
        verdict = self.test.judge(columns["step"], columns[f"val_{state.primary}"], state.primary)
        if verdict.verdict == PLATEAUED:
            state.stop_reason = "plateaued"


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


class TimeBudget(Callback):
    """A cap on training seconds: re-plans the schedule to end with it, and stops at it.

    The plan (``BudgetPlan``) times the first steps; when they predict the cap, the schedule is
    re-planned over the steps that fit (a cosine cut off by the clock would stop at a high
    learning rate), and re-estimated at each epoch's end.
    """

    def __init__(self, budget_s: float) -> None:
        self.budget_s, self.plan = budget_s, None

    def on_fit_start(self, state: FitState) -> None:
        if self.plan is None:
            self.plan = BudgetPlan(self.budget_s, state.total)

    def on_step_end(self, state: FitState) -> None:
        elapsed = state.elapsed()
        if (fits := self.plan.observe(state.step, elapsed)) is not None:
            state.request_total(fits)
        if state.stop_reason is None and (elapsed > self.budget_s or self.plan.ends(state.step)):
            state.stop_reason = "time_budget"

    def on_epoch_end(self, state: FitState) -> None:
        if state.stop_reason is None and (fits := self.plan.revise(state.step, state.train_seconds)) is not None:
            state.request_total(fits)

    def state_dict(self) -> dict[str, Any]:
        return {"mark": self.plan.mark, "fits": self.plan.fits, "planned": self.plan.planned} if self.plan else {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            self.plan = BudgetPlan(self.budget_s, state["planned"])
            self.plan.mark, self.plan.fits = state["mark"], state["fits"]


class TrackerLog(Callback):
    """Training loss and learning rate every ``every`` steps, validation metrics every epoch, to the tracker (rank
    0)."""

    def __init__(self, tracker: Tracker, every: int) -> None:
        self.tracker, self.every = tracker, every

    def on_step_end(self, state: FitState) -> None:
        if state.step % self.every == 0 or state.step == 1:
            loss = state.loss_value()
            if state.world.main:
                self.tracker.log({"train/loss": loss, "train/lr": state.scheduler.get_last_lr()[0]}, state.step)

    def on_validation_end(self, state: FitState) -> None:
        if state.world.main:
            self.tracker.log({f"val/{k}": v for k, v in state.val.items()} | {"epoch": state.epoch}, state.step)


class LearningCurve(Callback):
    """The run's learning curve, for its record (``curves``): at every validation the step, examples seen, training
    seconds and each validation metric; the training loss every ``every`` steps.

    A loss that explodes while staying finite stops the run as diverged (``ConvergenceTest.exploded``: over
    ``explode`` times the untrained model's loss), naming the step; a NaN is caught by the step itself. The curve is
    part of ``last.pt``: a resumed run continues one curve.
    """

    def __init__(self, every: int, test: ConvergenceTest) -> None:
        self.every, self.test = max(1, every), test
        self.val: list[dict[str, float]] = []
        self.train: list[tuple[int, float]] = []

    def on_step_end(self, state: FitState) -> None:
        if state.step % self.every == 0 or state.step == 1:
            loss = state.loss_value()  # every rank: the value is averaged over them
            self.train.append((state.step, loss))
            self.check("training loss", loss, state.step)

    def on_validation_end(self, state: FitState) -> None:
        point = {"step": float(state.step), "examples": float(state.items), "seconds": state.elapsed()}
        self.val.append(point | {f"val_{k}": float(v) for k, v in state.val.items()})
        if "loss" in state.val:
            self.check("validation loss", float(state.val["loss"]), state.step)

    def check(self, what: str, loss: float, step: int) -> None:
        untrained = self.train[0][1] if self.train else math.nan
        if self.test.exploded(loss, untrained):
            raise Diverged(
                f"{what} {loss:.3g} at step {step} is over {self.test.explode:g}x the untrained model's training "
                f"loss {untrained:.3g} (convergence.explode)"
            )

    def columns(self) -> dict[str, list[float]]:
        """The curve as the record keeps it: one list per quantity (``step``, ``examples``, ``seconds``,
        ``val_<metric>``, and ``train_step``, ``train_loss``)."""
        keys = list(dict.fromkeys(k for point in self.val for k in point))
        out = {k: [point.get(k, math.nan) for point in self.val] for k in keys}
        if self.train:
            out["train_step"] = [float(step) for step, _ in self.train]
            out["train_loss"] = [loss for _, loss in self.train]
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"val": self.val, "train": self.train}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.val, self.train = list(state["val"]), [tuple(p) for p in state["train"]]


class Progress(Callback):
    """A progress bar on a terminal; a log line per epoch always (a redirected log stays readable)."""

    def __init__(self, desc: str, enabled: bool = True, every: int = 50) -> None:
        self.desc, self.enabled, self.every, self.bar = desc, enabled, every, None

    def on_fit_start(self, state: FitState) -> None:
        show = self.enabled and state.world.main and sys.stderr.isatty()
        self.bar = tqdm(
            total=state.total, initial=state.step, desc=self.desc, disable=not show, dynamic_ncols=True, leave=False
        )

    def on_step_end(self, state: FitState) -> None:
        self.bar.total = state.total
        if state.step % self.every == 0 or state.step == 1:
            self.bar.set_postfix(
                loss=f"{state.loss_value():.3f}", tok_s=f"{state.tokens / max(1e-9, state.elapsed()):.0f}"
            )
        self.bar.update(1)

    def on_validation_end(self, state: FitState) -> None:
        self.bar.set_postfix(**{f"val_{state.primary}": f"{state.val[state.primary]:.3f}"})
        if state.world.main:
            log.info(
                "epoch %d, step %d/%d, %.0fs: val %s",
                state.epoch,
                state.step,
                state.total,
                state.elapsed(),
                ", ".join(f"{k}={v:.4f}" for k, v in state.val.items()),
            )

    def on_fit_end(self, state: FitState) -> None:
        self.bar.close()
