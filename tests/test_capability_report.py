"""The capability map's report (tasks/capabilities/cells.py, map_report.py), from synthetic records: a cell is the
rate chosen on seed 0's validation score with every seed at it, a still-learning seed is marked, a failed run shows its
status, bold only where the paired test finds the best model ahead of the runner-up (on the training length's
positions alone), and the figures are drawn."""

from __future__ import annotations

import random

from suite.report.significance import Outputs
from suite.runtime.record import ResultRecord
from suite.runtime.verdicts import PLATEAUED, STILL_LEARNING
from tasks.capabilities.cells import best_rate, cells, owes, planned, size
from tasks.capabilities.map_report import capability_map, extrapolation, knob_groups, knobs, map_rows

PLAN = {"sizes": [100_000, 400_000], "tasks": ["mqar", "parity"]}


def run(model: str, task: str, lr: float, seed: int, accuracy: float | None, val: float | None = None,
        verdict: str = PLATEAUED, params: int = 98_000, **metrics: float) -> ResultRecord:  # fmt: skip
    config = {
        "benchmark": "capabilities",
        "capability_map": PLAN,
        "trainer": {"optimizer": {"lr": lr}},
        "task": {"seq_len": 32},
        "model": {"d_model": 40},
    }
    done = accuracy is not None
    return ResultRecord(
        status="ok" if done else "diverged",
        task=task,
        dataset=task,
        model=model,
        seed=seed,
        job="train",
        seq_len=128,
        declaration={"parameters": params, "state_numbers": 320, "state_at_length": 128},
        metrics=({"accuracy": accuracy, "val_accuracy": val if val is not None else accuracy} | metrics)
        if done
        else {},
        convergence={"verdict": verdict},
        config=config,
    )


def records() -> list[ResultRecord]:
    return [
        run("lstm", "parity", 1e-3, 0, 0.6),
        run("lstm", "parity", 3e-3, 0, 1.0, accuracy_at_64=0.9, accuracy_at_128=0.7),  # the better rate
        run("lstm", "parity", 3e-3, 1, 0.98, verdict=STILL_LEARNING, accuracy_at_64=0.8, accuracy_at_128=0.6),
        run("lstm", "parity", 3e-3, 2, None),  # diverged
        run("transformer", "parity", 1e-3, 0, 0.5, accuracy_at_64=0.5, accuracy_at_128=0.5),
        run("transformer", "parity", 3e-3, 0, None),  # a failed run never wins the rate
        run("transformer", "parity", 1e-3, 1, 0.52, accuracy_at_64=0.5, accuracy_at_128=0.49),
        run("lstm", "mqar", 1e-3, 0, 0.3),
        run("transformer", "mqar", 1e-3, 0, 0.31),
        run("transformer", "mqar", 1e-3, 0, 0.9, params=390_000),  # the other size
    ]


def test_a_cell_is_every_seed_at_the_rate_seed_zero_chose_on_validation():
    found = cells(records())
    lstm = found[(100_000, "lstm", "parity")]
    assert lstm.rate == 3e-3 and sorted(r.seed for r in lstm.runs) == [0, 1, 2]
    assert lstm.accuracies() == [1.0, 0.98] and lstm.still_learning == 1 and lstm.failed == ["diverged"]
    assert found[(100_000, "transformer", "parity")].rate == 1e-3
    assert (400_000, "transformer", "mqar") in found and size(records()[-1]) == 400_000
    assert best_rate([run("x", "t", 1e-3, 1, 0.9)]) is None  # no seed-0 run: no rate chosen


def test_a_transformer_with_another_attention_core_is_a_row_named_as_the_map_names_it():
    local = [run("transformer", "parity", 1e-3, 0, 0.7), run("transformer", "parity", 1e-3, 0, 0.6)]
    local[1].attention = "local"
    found = cells(local)
    assert found[(100_000, "transformer", "parity")].accuracies() == [0.7]
    assert found[(100_000, "transformer-local", "parity")].accuracies() == [0.6]  # capability_map.models' name


def test_a_tie_on_validation_goes_to_the_lower_loss_then_the_lower_rate():
    """Several rates often solve a task's validation set; the highest rate used to win every such tie."""
    tied = [run("x", "t", 3e-3, 0, 1.0, val_loss=0.02), run("x", "t", 1e-3, 0, 1.0, val_loss=0.01)]
    assert best_rate(tied) == 1e-3
    assert best_rate([run("x", "t", 3e-3, 0, 1.0, val_loss=0.005), *tied[1:]]) == 3e-3  # the surer solution
    assert best_rate([run("x", "t", lr, 0, 1.0, val_loss=0.01) for lr in (3e-4, 1e-3, 3e-3)]) == 3e-4
    assert best_rate([run("x", "t", 3e-3, 0, 0.99, val_loss=0.001), *tied[1:]]) == 1e-3  # accuracy first
    assert best_rate([run("x", "t", lr, 0, 1.0) for lr in (1e-3, 3e-3)]) == 1e-3  # no loss recorded: the lower rate


def outputs_for(accuracies: dict[tuple[str, str, int], float]):
    """Per-sequence outputs matching each run's accuracy, on 400 shared test sequences of one scored position at
    length 32 and 100 at 64 (all wrong at 64: the pairing must cut them away)."""

    def outputs(r: ResultRecord) -> Outputs:
        rng = random.Random(f"{r.model}{r.task}{r.seed}")
        right = round(400 * r.metrics["accuracy"])
        hits = [True] * right + [False] * (400 - right)
        rng.shuffle(hits)
        rows = [{"id": i, "length": 32, "correct": int(h), "scored": 1} for i, h in enumerate(hits)]
        rows += [{"id": 400 + i, "length": 64, "correct": 0, "scored": 1} for i in range(100)]
        return Outputs(predictions=rows)

    return outputs


def test_the_table_marks_learning_seeds_failures_and_bolds_only_a_paired_win():
    rows = map_rows(records(), outputs_for({}))
    by = {(r["size"], r["model"]): r for r in rows}
    lstm = by[("100,000", "lstm")]
    # the win over the Transformer's ~51 % is far beyond noise
    assert lstm["parity"] == "**99.0**↗ (2 of 3 seeds; diverged)"
    assert lstm["state"] == "320 after 128" and lstm["parameters"] == "98,000" and lstm["width"] == "40"
    assert by[("100,000", "transformer")]["parity"] == "51.0 (2 of 3 seeds)"
    assert by[("100,000", "lstm")]["mqar"] == "30.0 (1 of 3 seeds)"  # 30 % against 31 %: within the noise, no bold
    winner = by[("100,000", "winner (paired test)")]
    assert winner["parity"] == "lstm" and winner["mqar"] == "≈"
    assert by[("400,000", "transformer")]["mqar"] == "90.0 (1 of 3 seeds)"
    assert by[("400,000", "winner (paired test)")]["mqar"] == "not tested"  # one model at that size


def test_a_variant_has_its_own_tasks_cells_and_never_contends_for_a_column():
    variant = [run("lstm_neg", "parity", 1e-3, seed, 1.0) for seed in (0, 1, 2)]  # better than the LSTM's cell
    for r in variant:
        r.config = {**r.config, "capability_map": {**PLAN, "variants": {"lstm_neg": ["parity"]}}}
    rows = map_rows(records() + variant, outputs_for({}))
    by = {(r["size"], r["model"]): r for r in rows}
    assert by[("100,000", "lstm_neg")]["parity"] == "100.0" and by[("100,000", "lstm_neg")]["mqar"] == ""
    assert by[("100,000", "winner (paired test)")]["parity"] == "lstm"  # the models' own verdict, as without it
    assert by[("100,000", "lstm")]["parity"].startswith("**99.0**")


def test_a_planned_cell_no_run_has_reached_says_so_and_a_planned_row_without_runs_is_listed():
    plan = {**PLAN, "models": ["lstm", "transformer", "gru"], "variants": {"lstm_neg": ["parity"]}}
    found = records()
    for r in found:
        r.config = {**r.config, "capability_map": plan}
    found = [r for r in found if not (r.model == "lstm" and r.task == "mqar")]  # the LSTM's MQAR not yet run
    by = {(r["size"], r["model"]): r for r in map_rows(found, outputs_for({}))}
    assert by[("100,000", "lstm")]["mqar"] == "not run" and by[("100,000", "lstm")]["parity"].startswith("**99.0**")
    gru = by[("100,000", "gru")]  # planned, no run at all: listed, every cell not run, nothing else claimed
    assert (gru["mqar"], gru["parity"], gru["width"], gru["parameters"], gru["state"]) == (
        "not run",
        "not run",
        "",
        "",
        "",
    )
    variant = by[("100,000", "lstm_neg")]
    assert variant["parity"] == "not run" and variant["mqar"] == ""  # a variant owes its own tasks alone
    assert by[("400,000", "lstm")]["parity"] == "not run"  # at a size some run has reached
    assert by[("100,000", "winner (paired test)")]["parity"] == "lstm"  # a row without runs contends for nothing
    # listed right after the plan's model before it that has runs (the Transformer), wherever that one sorts
    order = [r["model"] for r in map_rows(found, outputs_for({})) if r["size"] == "100,000"]
    assert order.index("gru") == order.index("transformer") + 1
    plan["models"] = ["gru", "lstm", "transformer"]  # first in the plan: before every row
    assert [r["model"] for r in map_rows(found, outputs_for({}))][0] == "gru"


def test_the_heatmap_draws_a_planned_row_without_runs_as_the_table_lists_it(tmp_path, monkeypatch):
    import tasks.capabilities.map_report as map_report

    drawn = []
    monkeypatch.setattr(map_report, "save", lambda fig, out: drawn.append(fig) or out)
    found = records()
    for r in found:
        r.config = {**r.config, "capability_map": {**PLAN, "models": ["lstm", "transformer", "gru"]}}
    map_report.capability_map(found, tmp_path / "map.png")
    panel = drawn[0].axes[0]  # 100,000
    assert {t.get_text() for t in panel.get_yticklabels()} == {"transformer", "lstm", "gru"}
    assert sum(t.get_text() == "not run" for t in panel.texts) == 2  # the GRU's two planned cells
    map_report.plt.close(drawn[0])


def test_a_rows_state_is_declared_at_the_longest_length_its_runs_reached():
    """A cache grows with the length: the row gives it at the longest length of any of its runs, not the first's."""
    short = run("transformer", "mqar", 1e-3, 1, 0.4)
    short.declaration = {"parameters": 98_000, "state_numbers": 64, "state_at_length": 16}
    long = run("transformer", "induction_heads", 1e-3, 0, 0.4)
    long.declaration = {"parameters": 98_000, "state_numbers": 4096, "state_at_length": 1024}
    rows = map_rows([short, long, *records()[:2]], outputs_for({}))
    by = {(r["size"], r["model"]): r for r in rows}
    assert by[("100,000", "transformer")]["state"] == "4,096 after 1024"
    assert by[("100,000", "lstm")]["state"] == "320 after 128"


def test_the_figures_are_drawn(tmp_path):
    assert capability_map(records(), tmp_path / "map.png").stat().st_size > 0
    assert extrapolation(records(), tmp_path / "ext.png").stat().st_size > 0
    assert knobs(records(), tmp_path / "knobs.png") is None  # no knob-stage runs
    swept = []
    for pairs in (4, 16):
        for seed in (0, 1):
            r = run("lstm", "mqar", 1e-3, seed, 1.0 / pairs + seed / 100)
            r.config = r.config | {"capability_stage": "knob", "capability_knob": "n_pairs", "task": {"n_pairs": pairs}}
            swept.append(r)
    own = run("lstm", "mqar", 1e-3, 0, 0.5)  # the map's own cell, at the task's own value (8 pairs)
    own.config["task"] = {"n_pairs": 8, "seq_len": 32}
    groups = knob_groups([own, *swept])
    assert set(groups) == {("mqar", "n_pairs", 100_000)}
    assert dict(groups[("mqar", "n_pairs", 100_000)]["lstm"].points) == {4.0: [0.25, 0.26], 8.0: [0.5],
                                                                          16.0: [0.0625, 0.0725]}  # fmt: skip
    assert knobs(records() + swept, tmp_path / "knobs.png").stat().st_size > 0
    longer = run("lstm", "mqar", 1e-3, 0, 0.4)  # the same task along a second setting: a group of its own
    longer.config = longer.config | {"capability_stage": "knob", "capability_knob": "seq_len",
                                     "task": {"n_pairs": 8, "seq_len": 128}}  # fmt: skip
    groups = knob_groups([own, *swept, longer])
    assert set(groups) == {("mqar", "n_pairs", 100_000), ("mqar", "seq_len", 100_000)}
    assert dict(groups[("mqar", "seq_len", 100_000)]["lstm"].points) == {32.0: [0.5], 128.0: [0.4]}
    assert dict(groups[("mqar", "n_pairs", 100_000)]["lstm"].points)[8.0] == [0.5]  # not the longer run
    assert map_rows([], outputs_for({})) == [] and capability_map([], tmp_path / "none.png") is None


def test_the_plan_is_the_union_of_the_records_plans():
    early, late = run("lstm", "parity", 1e-3, 0, 0.6), run("gru", "parity", 1e-3, 0, 0.6)
    early.config = {**early.config, "capability_map": {"models": ["lstm"], "variants": {"v": ["parity"]}}}
    late.config = {**late.config, "capability_map": {"models": ["lstm", "gru"], "variants": {"v": ["a4"]}}}
    plan = planned([early, late])
    assert plan == {"lstm": None, "gru": None, "v": ["parity", "a4"]}
    assert owes(plan, "gru", "mqar") and owes(plan, "v", "a4") and not owes(plan, "v", "mqar")
    assert not owes(plan, "rnn", "parity")
