"""Has a run converged? A verdict on the end of its validation curve.

A sceptical reader's first question about a comparison is "did you train long enough?". The
test here answers it from the run's own validation curve (``suite.training.callbacks.LearningCurve``):
over the last ``window`` of the run's steps, a straight line is fitted to the primary metric; the
run is **still learning** when the gain that line projects over the window is both

* *significant*: above its one-sided ``1 - alpha`` confidence bound from the residual noise (so a
  flat noisy curve is called still learning at rate ``alpha``), and
* *material*: more than ``noise_multiple`` times one evaluation's noise (the residuals' standard
  deviation), at least ``min_gain`` of the curve's range (first evaluation to its best) and at least
  ``min_relative`` of the metric's best value (2 %: 0.016 of an accuracy of 0.8, 0.02 of a BLEU of 1.1, 10 of a
  perplexity of 500: a smooth curve's creep of a tenth of a point is no reason to doubt a comparison, while a BLEU
  climbing from 0.3 to 1.1 is far from done), so a finely sampled curve does not turn a creep smaller than the
  noise into "still learning".

A curve can also rise in a step: flat, then a jump at its last evaluations (a recall task's phase change). A line
through a window ending in a step fits neither side, so its residuals, and with them the bound, grow with the jump and
the verdict would say plateaued while the curve is rising. So the run is also **still learning** when its last
evaluation beats every evaluation before the last ``recent`` of its steps by more than the same material floors, with
the noise measured from the window's successive differences (their median, which one jump does not move).

Otherwise it has **plateaued**. The window is a fraction of the steps, not a count of
evaluations, so the projected gain, and with it the verdict, does not depend on how often the run
evaluated. A window holding fewer than ``min_evaluations`` evaluations gives **too few
evaluations**, never a plateau. A run stopped by ``trainer.stop_at`` reached a ceiling it cannot
improve on: plateaued. ``tests/test_convergence.py`` measures the rates on synthetic curves.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from suite.runtime.verdicts import DIVERGED, NO_CURVE, PLATEAUED, STILL_LEARNING, TOO_FEW

LOWER_IS_BETTER = ("loss", "perplexity", "bits_per_byte")
"""Metric names (or suffixes) where lower is better; every task's primary metric is higher-is-better."""


@dataclass(frozen=True)
class Verdict:
    """The verdict and the figures behind it (metric units; gains oriented so that positive is better)."""

    verdict: str
    reason: str
    metric: str = ""
    gain: float | None = None  # the fitted line's gain over the window
    needed: float | None = None  # the gain it had to exceed: max(significance bound, material floor)
    evaluations: int = 0  # evaluations in the window
    window_steps: tuple[int, int] | None = None  # first and last step judged
    test: dict[str, Any] | None = None  # the test's parameters

    def record(self) -> dict[str, Any]:
        """The record's ``convergence`` field."""
        out = asdict(self)
        out["window_steps"] = list(self.window_steps) if self.window_steps else None
        return out


def higher_is_better(metric: str) -> bool:
    return not any(metric == m or metric.endswith("_" + m) for m in LOWER_IS_BETTER)


@dataclass(frozen=True)
class ConvergenceTest:
    """The stated test (module docstring). Its parameters are in the config (``convergence:``) and every record.

    Args:
        window: the last fraction of the run's steps that is judged.
        min_evaluations: evaluations the window must hold for any verdict but ``too few evaluations``.
        min_gain: the smallest gain over the window called learning, as a fraction of the curve's range.
        alpha: the one-sided significance level of the slope (the false ``still learning`` rate on a flat curve).
        noise_multiple: the gain must exceed this many times one evaluation's noise; unlike the significance bound,
            this does not shrink as evaluations are added, which keeps the verdict from flipping with the interval.
        min_relative: the smallest gain called learning as a share of the magnitude of the curve's best value.
        recent: a last evaluation beating every evaluation before this last fraction of the steps by more than the
            material floors is still learning (a step-shaped rise the line does not fit); 0 turns the check off.
        explode: a loss more than this many times its first value is divergence, even while finite.
    """

    window: float = 0.5
    min_evaluations: int = 5
    min_gain: float = 0.05
    alpha: float = 0.05
    noise_multiple: float = 2.0
    min_relative: float = 0.02
    recent: float = 0.25
    explode: float = 100.0

    def __post_init__(self) -> None:
        if not 0 < self.window <= 1:
            raise ValueError(f"convergence.window must be in (0, 1], got {self.window}")
        if self.min_evaluations < 3:
            raise ValueError(
                f"convergence.min_evaluations must be at least 3 (a line and its noise), got {self.min_evaluations}"
            )
        if not 0 <= self.recent < 1:
            raise ValueError(f"convergence.recent must be in [0, 1), got {self.recent}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"convergence.alpha must be in (0, 1), got {self.alpha}")

    def judge(self, steps: Sequence[float], values: Sequence[float], metric: str = "") -> Verdict:
        """The verdict on a validation curve: ``values[i]`` measured after ``steps[i]`` steps (ascending)."""
        params = asdict(self)
        if len(steps) != len(values):
            raise ValueError(f"a curve needs as many steps as values, got {len(steps)} and {len(values)}")
        if not len(steps):
            return Verdict(NO_CURVE, "no validation curve recorded", metric, test=params)
        sign = 1.0 if higher_is_better(metric) else -1.0
        x, y = np.asarray(steps, dtype=float), sign * np.asarray(values, dtype=float)
        if not np.isfinite(y).all():
            at = int(x[~np.isfinite(y)][0])
            return Verdict(DIVERGED, f"validation {metric or 'metric'} is not finite at step {at}", metric, test=params)
        start = x[-1] * (1 - self.window)
        inside = x >= start
        n = int(inside.sum())
        window = (int(x[inside][0]), int(x[-1])) if n else None
        if n < self.min_evaluations:
            return Verdict(
                TOO_FEW,
                f"{n} evaluation(s) in the last {self.window:.0%} of the steps; the test needs {self.min_evaluations}",
                metric,
                evaluations=n,
                window_steps=window,
                test=params,
            )
        xs, ys = x[inside], y[inside]
        slope, intercept = np.polyfit(xs, ys, 1)
        span = xs[-1] - xs[0]
        residual = ys - (slope * xs + intercept)
        sxx = float(((xs - xs.mean()) ** 2).sum())
        noise = math.sqrt(float((residual**2).sum()) / (n - 2))
        bound = stats.t.ppf(1 - self.alpha, n - 2) * noise / math.sqrt(sxx) * span
        floor = self.min_gain * float(y.max() - y[0])
        scale = self.min_relative * abs(float(y.max()))
        gain = float(slope * span)
        needed = max(float(bound), self.noise_multiple * noise, floor, scale)
        learning = gain > needed and gain > 0
        how = (
            f"the last {self.window:.0%} of steps ({window[0]}-{window[1]}, {n} evaluations) gained "
            f"{gain:+.3g} {metric}; learning needs more than {needed:.3g} (the largest of its {1 - self.alpha:.0%} "
            f"bound {bound:.3g}, {self.noise_multiple:g}x the noise {noise:.3g}, {self.min_gain:.0%} of the "
            f"curve's range {floor / self.min_gain if self.min_gain else 0:.3g} and {self.min_relative:.0%} of its "
            f"best {abs(float(y.max())):.3g})"
        )
        jump = None if learning else self.recent_jump(x, y, ys, max(floor, scale))
        if jump is not None:
            gain, needed, why = jump
            learning, how = True, f"{why}; {how}"
        return Verdict(
            STILL_LEARNING if learning else PLATEAUED,
            how,
            metric,
            gain=gain,
            needed=needed,
            evaluations=n,
            window_steps=window,
            test=params,
        )

    def recent_jump(
        self, x: np.ndarray, y: np.ndarray, ys: np.ndarray, floor: float
    ) -> tuple[float, float, str] | None:
        """(jump, needed, reason) when the curve's last evaluation beats every evaluation before the last ``recent`` of
        its steps by more than ``noise_multiple`` times the window's noise and ``floor``; else None. The last one, not
        the best of the recent ones: on a flat noisy curve the best of several is often high, the last one seldom.

        ``x``, ``y``: the whole curve (oriented higher-is-better); ``ys``: the judged window's values."""
        late = x >= x[-1] * (1 - self.recent)
        if not self.recent or late.all():
            return None
        # median of successive differences (/ 0.6745 for a normal's deviation, / sqrt 2 for a difference of two):
        # one step in the window moves one difference, not the median, as it moves a fitted line's residuals
        noise = float(np.median(np.abs(np.diff(ys)))) / (0.6745 * math.sqrt(2))
        needed = max(self.noise_multiple * noise, floor)
        jump = float(y[-1] - y[~late].max())
        if jump <= needed:
            return None
        before = int(x[~late][-1])
        return (
            jump,
            needed,
            (
                f"its last evaluation is {jump:+.3g} above every one up to step {before} (before the last "
                f"{self.recent:.0%} of steps): a rise, more than {needed:.3g} ({self.noise_multiple:g}x the noise "
                f"{noise:.3g} from successive differences, or the floors below)"
            ),
        )

    def reached(self, target: float, metric: str) -> Verdict:
        """A run stopped at its target (``trainer.stop_at``): nothing left to learn on this metric."""
        return Verdict(
            PLATEAUED, f"reached its target {metric} {target:g} (trainer.stop_at)", metric, test=asdict(self)
        )

    def exploded(self, loss: float, untrained: float) -> bool:
        """Whether a finite loss has exploded: over ``explode`` times the untrained model's training loss (its first
        step's: about ln(classes) for a classifier, never near zero as a later loss can be)."""
        return math.isfinite(loss) and untrained > 0 and loss > self.explode * untrained
