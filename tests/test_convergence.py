"""The convergence verdict: its error rates measured on synthetic curves, its stability when the same run is
evaluated more or less often, and the verdicts a real run's record carries (suite/training/convergence.py).

The rates are printed (``pytest -s``) and bounded: the test is stated in docs/convergence.md with these figures.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from suite.tools.convergence_rates import STEPS, flat, grid, interval_agreement, levelled, rate, rising, stepped
from suite.training.convergence import (
    DIVERGED,
    NO_CURVE,
    PLATEAUED,
    STILL_LEARNING,
    TOO_FEW,
    ConvergenceTest,
    higher_is_better,
)

TEST = ConvergenceTest()


@pytest.mark.parametrize("evaluations", [10, 20, 40])
def test_a_flat_noisy_curve_is_rarely_called_still_learning(evaluations):
    wrong = rate(flat, evaluations, STILL_LEARNING)
    print(f"flat curve, {evaluations} evaluations: 'still learning' {wrong:.1%} (alpha {TEST.alpha})")
    assert wrong <= 0.07  # alpha is 5 %; the material floors only lower it


@pytest.mark.parametrize("evaluations", [10, 20, 40])
def test_a_curve_still_rising_is_rarely_called_plateaued(evaluations):
    missed = rate(rising, evaluations, PLATEAUED)
    print(f"linear rise, {evaluations} evaluations: 'plateaued' {missed:.1%}")
    assert missed <= 0.1


def test_a_curve_that_levelled_off_early_is_plateaued():
    assert rate(levelled, 20, STILL_LEARNING) <= 0.1


def test_a_curve_that_jumped_at_its_last_evaluation_is_still_learning():
    """A step-shaped rise: the line through the window fits neither side, its residuals grow with the jump and so does
    the bound; the ``recent`` check is what calls it learning (off, the line alone calls most such curves plateaued)."""
    caught = rate(stepped, 10, PLATEAUED)
    line_alone = rate(stepped, 10, PLATEAUED, ConvergenceTest(recent=0))
    print(f"a jump at the last of 10 evaluations: 'plateaued' {caught:.1%} ({line_alone:.1%} without the check)")
    assert caught <= 0.01 and line_alone >= 0.5


def test_a_run_judged_where_the_plateau_rule_stopped_it_mid_jump_is_still_learning():
    """The curve a capability run stopped with (results/capabilities_runs, the Transformer at 400,000 parameters on
    noisy recall, 3e-3, seed 2, validated every 75 steps, judged from step 300): near what guessing gives, then up at
    the last validation. The check names the jump; without it, a plateau, and the old rule stopped the run there."""
    x = np.arange(75.0, 601.0, 75.0)
    y = np.array([0.281, 0.297, 0.302, 0.312, 0.304, 0.317, 0.344, 0.761])
    v = TEST.judge(x, y, "accuracy")
    assert v.verdict == STILL_LEARNING and v.gain == pytest.approx(0.761 - 0.312)
    assert "its last evaluation is +0.449 above every one up to step 375" in v.reason
    assert ConvergenceTest(recent=0).judge(x, y, "accuracy").verdict == PLATEAUED
    # the same curve ending at a level within the noise of the ones before it: plateaued with the check on
    assert TEST.judge(x, np.r_[y[:-1], 0.33], "accuracy").verdict == PLATEAUED


def test_the_verdict_does_not_depend_on_how_often_the_run_evaluated():
    """The same noisy runs judged from 40 validations and from every other one of them (20): the verdicts agree on
    runs whose true gain over the judged half is clearly off the boundary."""
    share, compared = interval_agreement()
    print(f"40 vs 20 evaluations of the same runs: the same verdict on {share:.1%} of {compared} clear curves")
    assert compared > 500 and share >= 0.9


def test_the_rates_table_is_written_for_the_docs(tmp_path):
    from suite.tools.convergence_rates import main

    assert main(["--out", str(tmp_path)]) == 0
    text = (tmp_path / "rates.md").read_text()
    assert text.startswith("| curve | wrong verdict | evaluations | how often |") and text.count("\n") == 7


def test_too_few_evaluations_in_the_window_is_never_a_plateau():
    x = np.array([100.0, 200.0, 300.0, 900.0, 1000.0])
    v = TEST.judge(x, [0.5, 0.6, 0.6, 0.6, 0.6], "accuracy")
    assert v.verdict == TOO_FEW and v.evaluations == 2 and "needs 5" in v.reason
    assert TEST.judge([], [], "accuracy").verdict == NO_CURVE


def test_a_non_finite_value_is_divergence_at_its_step():
    v = TEST.judge([10, 20, 30, 40, 50, 60], [0.5, 0.6, float("nan"), 0.6, 0.6, 0.6], "accuracy")
    assert v.verdict == DIVERGED and "step 30" in v.reason


def test_lower_is_better_metrics_are_judged_falling():
    x = grid(20)
    falling = 500 - 300 * x / STEPS  # a perplexity still falling steadily
    assert not higher_is_better("perplexity") and higher_is_better("accuracy") and higher_is_better("bleu")
    assert TEST.judge(x, falling, "perplexity").verdict == STILL_LEARNING
    assert TEST.judge(x, falling, "accuracy").verdict == PLATEAUED  # falling accuracy: nothing left to gain
    v = TEST.judge(x, falling, "perplexity")
    assert v.gain > v.needed > 0 and v.window_steps == (500, 1000) and v.record()["test"]["alpha"] == TEST.alpha


def test_an_exploding_loss_is_measured_against_the_untrained_loss():
    assert TEST.exploded(1e4, untrained=2.3) and not TEST.exploded(200.0, untrained=2.3)
    assert not TEST.exploded(float("inf"), untrained=2.3)  # not finite: the step's own check names it
    assert not TEST.exploded(1e4, untrained=float("nan"))  # before any training loss was seen


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(window=0), "window"),
        (dict(min_evaluations=2), "min_evaluations"),
        (dict(alpha=1.5), "alpha"),
        (dict(recent=1), "recent"),
    ],
)
def test_bad_parameters_are_refused_by_name(kw, message):
    with pytest.raises(ValueError, match=message):
        ConvergenceTest(**kw)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])  # auto gives fp32 on a CPU without AMX: force each
def test_a_run_keeps_its_learning_curve_and_verdict(precision):
    """A real fit validates ``evaluations`` times (and at the end), with the training clock paused."""
    from tests.test_resume import fresh, make_trainer, recall_task

    task, model_cfg = recall_task()
    trainer = make_trainer(evaluations=6, precision=precision)
    fit = trainer.fit(fresh(task, model_cfg), task, torch.device("cpu"), seed=0)
    assert fit.precision == precision
    c = fit.curves
    assert c["step"] == [4.0, 8.0, 12.0, 16.0, 20.0, 24.0]  # 3 epochs of 8 steps; every ceil(24 / 6) = 4 steps
    assert len(c["val_accuracy"]) == 6 and all(0 <= a <= 1 for a in c["val_accuracy"])
    assert c["examples"] == [32.0 * k for k in range(1, 7)] and c["seconds"] == sorted(c["seconds"])
    assert c["seconds"][-1] <= fit.train_seconds + 1e-6  # validation time is not training time
    assert c["train_step"][0] == 1.0 and len(c["train_loss"]) == len(c["train_step"])
    assert fit.convergence["metric"] == "accuracy"
    assert fit.convergence["verdict"] in (PLATEAUED, STILL_LEARNING, TOO_FEW)


def test_an_exploding_loss_stops_the_run_as_diverged_with_its_curve():
    from suite.runtime.failures import Diverged
    from tests.test_resume import fresh, make_trainer, recall_task

    task, model_cfg = recall_task()
    # a threshold below 1: the first loss itself counts as an explosion
    trainer = make_trainer(evaluations=6, log_every=1, convergence=ConvergenceTest(explode=0.5))
    with pytest.raises(Diverged) as err:
        trainer.fit(fresh(task, model_cfg), task, torch.device("cpu"), seed=0)
    assert "at step 1 is over 0.5x the untrained model's training loss" in str(err.value)
    fields = err.value.fields
    assert fields["convergence"]["verdict"] == DIVERGED and fields["curves"]["train_step"][0] == 1.0


def test_a_smooth_creep_under_two_percent_of_the_best_value_is_a_plateau():
    """A curve without noise creeping by half an accuracy point over the judged half: significant, but not material
    (``min_relative``: 2 % of its best, 0.81); a BLEU climbing from 0.3 to 1.1 is far from done though its gain is
    under a point; a perplexity creeping down by 0.5 of 100 is done."""
    x = grid(20)
    wiggle = 1e-4 * np.sin(x)
    v = TEST.judge(x, 0.80 + 0.01 * x / STEPS + wiggle, "accuracy")  # +0.005 over the last half
    assert v.verdict == PLATEAUED and v.needed == pytest.approx(0.0162, abs=1e-3) and "2% of its best 0.81" in v.reason
    assert TEST.judge(x, 0.3 + 0.8 * x / STEPS + wiggle, "bleu").verdict == STILL_LEARNING  # +0.4 BLEU, best 1.1
    assert TEST.judge(x, 100 - 1 * x / STEPS + wiggle, "perplexity").verdict == PLATEAUED
    assert TEST.judge(x, 100 - 20 * x / STEPS + wiggle, "perplexity").verdict == STILL_LEARNING
