"""The training loop: schedules, divergence, early stopping and the best checkpoint."""

import math

import pytest
import torch
from torch import nn

from suite.runtime.failures import Diverged
from suite.training.callbacks import BudgetPlan
from suite.training.schedules import inverse_sqrt, warmup_cosine
from suite.training.trainer import Trainer
from tasks.long_range import build


def lrs(make, steps):
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = make(opt, total_steps=steps)
    out = []
    for _ in range(steps):
        out.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return out


def test_warmup_cosine_shape():
    lr = lrs(lambda o, total_steps: warmup_cosine(o, total_steps, warmup_steps=10), 100)
    assert lr[0] == pytest.approx(0.1) and lr[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lr[9:], lr[10:])) and lr[-1] < 0.01


def test_inverse_sqrt_peaks_at_warmup_like_the_paper():
    lr = lrs(lambda o, total_steps: inverse_sqrt(o, total_steps, warmup_steps=16), 64)
    assert max(range(64), key=lr.__getitem__) == 15 and lr[15] == pytest.approx(1.0)
    assert lr[63] == pytest.approx(math.sqrt(16 / 64))  # step^-0.5 decay after warm-up


def test_inverse_sqrt_reproduces_the_paper_formula():
    d, warmup = 512, 16
    lr = lrs(lambda o, total_steps: inverse_sqrt(o, total_steps, warmup_steps=warmup), 64)
    paper = [d**-0.5 * min(s**-0.5, s * warmup**-1.5) for s in range(1, 65)]  # §5.3, steps from 1
    base = (d * warmup) ** -0.5
    assert [base * x for x in lr] == pytest.approx(paper)


def trainer(**kw):
    defaults = dict(
        name="t",
        optimizer=lambda params: torch.optim.AdamW(params, lr=1e-2),
        scheduler=lambda o, total_steps: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0),
        max_epochs=3,
        batch_size=32,
        progress=False,
    )
    return Trainer(**(defaults | kw))


def tiny_task():
    from tests.conftest import compose_config, shrink

    task = build("long_range", problem="recall", seq_len=8, n_train=64, n_val=32, n_test=32)
    task.setup()
    cfg = shrink(compose_config("model=lstm"))
    return task, task.build_model(cfg.model)


def test_divergence_is_detected():
    task, model = tiny_task()
    with torch.no_grad():
        next(model.parameters()).fill_(float("nan"))
    with pytest.raises(Diverged, match="nan"):
        trainer().fit(model, task, torch.device("cpu"), seed=0)


def test_best_checkpoint_is_restored_and_saved(tmp_path):
    task, model = tiny_task()
    result = trainer(max_epochs=4).fit(model, task, torch.device("cpu"), seed=0, checkpoint_dir=tmp_path)
    saved = torch.load(tmp_path / "best.pt")
    assert all(torch.equal(saved[k], v) for k, v in model.state_dict().items())
    assert 1 <= result.best_epoch <= 4 and result.epochs == 4 and result.steps == 8


def test_early_stopping_stops(monkeypatch):
    task, model = tiny_task()
    scores = iter([0.5, 0.4, 0.4, 0.4, 0.4])
    monkeypatch.setattr(task, "evaluate", lambda m, b, d: {"accuracy": next(scores), "loss": 1.0})
    result = trainer(max_epochs=10, patience=2).fit(model, task, torch.device("cpu"), seed=0)
    assert result.stop_reason == "early_stopping" and result.epochs == 3 and result.best_epoch == 1


@pytest.mark.parametrize("stop_at, epochs, reason", [(1.0, 3, "target_reached"), (None, 6, "max_epochs")])
def test_stop_at_ends_the_run_once_validation_reaches_the_target(monkeypatch, stop_at, epochs, reason):
    task, model = tiny_task()
    scores = iter([0.5, 0.9, 1.0, 1.0, 1.0, 1.0])  # the ceiling at the third validation
    monkeypatch.setattr(task, "evaluate", lambda m, b, d: {"accuracy": next(scores), "loss": 1.0})
    result = trainer(max_epochs=6, stop_at=stop_at).fit(model, task, torch.device("cpu"), seed=0)
    assert result.stop_reason == reason and result.epochs == epochs and result.steps == 2 * epochs
    assert result.best_epoch == 3


@pytest.mark.parametrize(
    "curve, after, reason, epochs",
    [
        ("flat", 0, "plateaued", 8),  # epoch 8 (step 16): the first whose judged half (steps 8-16) holds 5 validations
        ("flat", 30, "plateaued", 15),  # not before step 30 (epoch 15)
        ("flat", 50, "max_epochs", 20),  # not before step 50, past the 40 steps: the run goes on to its end
        ("rising", 0, "max_epochs", 20),  # a curve still climbing is never stopped
    ],
)
def test_stop_on_plateau_ends_the_run_once_the_convergence_test_calls_it_plateaued(
    monkeypatch, curve, after, reason, epochs
):
    task, model = tiny_task()
    values = [0.3, 0.6, 0.9] + [0.9] * 17 if curve == "flat" else [0.02 * k for k in range(20)]
    scores = iter(values)
    monkeypatch.setattr(task, "evaluate", lambda m, b, d: {"accuracy": next(scores), "loss": 1.0})
    result = trainer(max_epochs=20, stop_on_plateau=after).fit(model, task, torch.device("cpu"), seed=0)
    assert result.stop_reason == reason and result.epochs == epochs
    assert result.convergence["verdict"] == ("still learning" if curve == "rising" else "plateaued")


def test_stop_on_plateau_must_be_a_step_count():
    with pytest.raises(ValueError, match="trainer.stop_on_plateau"):
        trainer(stop_on_plateau=-1)


def test_budget_plan_shortens_the_run_once_from_the_timed_steps():
    plan = BudgetPlan(budget_s=10.0, planned=1000, skip=2, timed=10)
    assert plan.observe(2, 1.0) is None
    assert plan.observe(12, 2.0) == 12 + 80  # 0.1 s a step, 8 s left
    assert not plan.ends(91) and plan.ends(92)
    roomy = BudgetPlan(budget_s=1000.0, planned=50, skip=2, timed=10)
    roomy.observe(2, 1.0)
    assert roomy.observe(12, 2.0) is None and not roomy.ends(10_000)  # everything fits: the plan stands


def test_budget_plan_shortens_again_when_the_steps_slow_down():
    plan = BudgetPlan(budget_s=10.0, planned=1000, skip=2, timed=10)
    plan.observe(2, 1.0)
    assert plan.observe(12, 2.0) == 92  # 0.1 s a step
    assert plan.revise(42, 5.0) is None  # still 0.1 s a step: the plan stands
    assert plan.revise(52, 7.0) == 52 + 25  # 0.12 s a step since the mark, 3 s left
    assert plan.ends(77) and not plan.ends(76)
    assert plan.revise(55, 7.3) is None  # the same 77: only a shorter plan (by over 2%) replaces it


def test_time_budget_ends_the_schedule_with_the_budget(monkeypatch):
    import suite.training.trainer as train_module

    clock = iter(x * 0.01 for x in range(10**6))  # every clock reading advances 10 ms
    monkeypatch.setattr(train_module.time, "perf_counter", lambda: next(clock))
    made = []

    def schedule(o, total_steps):
        made.append(warmup_cosine(o, total_steps, warmup_steps=2))
        return made[-1]

    task, model = tiny_task()
    result = trainer(max_epochs=100, scheduler=schedule, time_budget_s=1.0).fit(
        model, task, torch.device("cpu"), seed=0
    )
    assert result.stop_reason == "time_budget" and result.steps < 200  # 2 steps an epoch, 100 epochs planned
    assert result.planned_steps == 200  # the record can say the cap cut the run short
    assert (
        len(made) >= 2 and made[-1].get_last_lr()[0] < 1e-2 * 0.05
    )  # re-planned (epoch ends may shorten it again), and decayed at the end


def test_quick_recipes_plan_their_work_and_keep_the_budget_as_a_cap():
    # Every quick recipe sets epochs or steps; the time budget is a cap well above the planned time,
    # so a run gives the same figures on any machine of this kind (only a slow one hits the cap).
    from tests.conftest import CONF, compose_config

    for recipe in sorted((CONF / "recipe").glob("*_quick.yaml")):
        cfg = compose_config(f"task={recipe.stem.removesuffix('_quick')}", "trainer=quick", tiny=False)
        assert cfg.trainer.max_epochs and cfg.trainer.time_budget_s >= 600, recipe.name
        assert cfg.trainer.precision == "auto"


def test_the_trainer_label_names_a_stop_target():
    """Runs with and without a stop target are different experiments in the report: their labels differ."""
    from types import SimpleNamespace

    from suite.runtime.record import trainer_name

    def label(**trainer):
        return trainer_name(SimpleNamespace(job="train", config={"trainer": {"name": "quick", **trainer}}))

    assert label(max_steps=600) == "quick (600 steps)"
    assert label(max_steps=600, stop_at=1.0) == "quick (600 steps, stop at 1)"
    assert label(max_steps=600, stop_on_plateau=300) == "quick (600 steps, stop at a plateau from 300)"
