"""Which differences of the LRA table hold: best against runner-up and each row against the commonest-class guess,
paired by seed and test example (suite.report.verdict, tasks.lra_report.lra_verdicts), on synthetic runs."""

import numpy as np
import pytest

from suite.report.build import main as report_main
from suite.report.significance import Difference, Outputs
from suite.report.verdict import above_prior, judged, prior_guess
from suite.runtime.predictions import write_predictions
from tasks.lra_report import PRIOR_COLUMN, VERDICT_COLUMN, lra_verdicts, prior_text
from tests.test_attention_tables import lra_cpu_run

N = 200
LABELS = np.random.default_rng(0).choice(5, size=N, p=[0.15, 0.15, 0.4, 0.15, 0.15])  # class 2 commonest


def predicting(correct: float, seed: int = 0) -> Outputs:
    """Predictions right on the first ``correct`` share of the examples; elsewhere a wrong class other than the
    commonest, so that the constant guess is not hit by chance."""
    rng = np.random.default_rng(seed)
    right = np.arange(N) < round(correct * N)
    rng.shuffle(right)
    wrong = np.where(LABELS == 0, 1, 0)
    rows = [
        {"id": i, "label": int(y), "prediction": int(y if ok else w)}
        for i, (y, ok, w) in enumerate(zip(LABELS, right, wrong))
    ]
    return Outputs(predictions=rows)


def commonest_only() -> Outputs:
    return Outputs(predictions=[{"id": i, "label": int(y), "prediction": 2} for i, y in enumerate(LABELS)])


def test_the_prior_guess_is_the_commonest_label_on_the_same_examples():
    guess = prior_guess(predicting(0.9))
    assert {p["prediction"] for p in guess.predictions} == {2}
    assert [p["id"] for p in guess.predictions] == list(range(N))


def test_a_model_above_the_prior_is_called_so_and_one_that_guesses_the_prior_is_not():
    runs = [lra_cpu_run("full", "text", 0.9, 1.0), lra_cpu_run("lstm", "text", 0.4, 1.0)]
    kept = {id(runs[0]): predicting(0.9), id(runs[1]): commonest_only()}
    above = above_prior([runs[0]], lambda r: kept[id(r)])
    assert above.delta == pytest.approx(0.9 - np.mean(LABELS == 2)) and above.significant
    level = above_prior([runs[1]], lambda r: kept[id(r)])
    assert level.delta == 0 and not level.significant
    assert above_prior([runs[0]], lambda r: None) is None


def test_the_best_wins_only_by_more_than_chance():
    runs = {name: [lra_cpu_run(name, "text", acc, 1.0)] for name, acc in (("full", 0.9), ("s4d", 0.6), ("gru", 0.6))}
    kept = {
        id(runs["full"][0]): predicting(0.9),
        id(runs["s4d"][0]): predicting(0.6),
        id(runs["gru"][0]): predicting(0.6, 1),
    }
    outputs = lambda r: kept[id(r)]  # noqa: E731
    winner, text = judged(runs, {"full": 0.9, "s4d": 0.6}, "accuracy", outputs)
    assert winner == "full" and text.startswith("full − s4d: +0.3 [")
    winner, text = judged({k: runs[k] for k in ("s4d", "gru")}, {"s4d": 0.6, "gru": 0.6}, "accuracy", outputs)
    assert winner is None and text.startswith("≈ ")
    assert judged(runs, {"full": 0.9, "s4d": 0.6}, "accuracy", lambda r: None) == (
        None,
        "not tested: no per-example test outputs",
    )


def test_a_column_of_many_rows_holds_its_p_values_to_a_false_discovery_rate():
    one = Difference("accuracy", 0.05, 0.01, 0.09, 0.04, N)
    null = Difference("accuracy", 0.0, -0.03, 0.03, 0.5, N)
    assert prior_text({"a": one}) == "all 1"  # alone, p 0.04 passes
    assert prior_text({"a": one, **{f"n{i}": null for i in range(9)}}) == "none of 10"  # one of ten: adjusted to 0.4
    strong = Difference("accuracy", 0.3, 0.2, 0.4, 0.002, N)
    assert prior_text({"s": strong, "t": strong, "n": null}) == "2 of 3; not: n"
    assert prior_text({"s": strong, "n": null, "m": null}) == "1 of 3: s"
    below = Difference("accuracy", -0.3, -0.4, -0.2, 0.002, N)
    assert prior_text({"b": below}) == "none of 1"  # significant, but below the prior
    assert prior_text({"s": strong, "x": None}) == "not tested: no per-example test outputs"


def test_each_column_gets_its_winner_and_its_rows_above_the_prior():
    cells = [  # (row, task, its predictions)
        ("full", "text", predicting(0.9)),
        ("s4d", "text", predicting(0.6)),
        ("lstm", "text", commonest_only()),
        ("full", "pathfinder", commonest_only()),
        ("lstm", "pathfinder", commonest_only()),
    ]
    accuracy = lambda o: np.mean([p["label"] == p["prediction"] for p in o.predictions])  # noqa: E731
    runs = [lra_cpu_run(name, task, accuracy(outputs), 1.0) for name, task, outputs in cells]
    kept = {id(r): outputs for r, (_, _, outputs) in zip(runs, cells)}
    rows = lra_verdicts(runs, "lra_cpu", lambda r: kept[id(r)])
    assert [r["column"] for r in rows] == ["Text 1K", "Pathfinder 1K"]
    text, pathfinder = rows
    assert text["winner"] == "full" and text[VERDICT_COLUMN].startswith("full − s4d: +0.3")
    assert text[PRIOR_COLUMN] == "2 of 3; not: lstm"
    assert pathfinder["winner"] == "none" and pathfinder[VERDICT_COLUMN].startswith("≈ ")
    assert pathfinder[PRIOR_COLUMN] == "none of 2"
    assert lra_verdicts(runs, "lra") == []  # the GPU-size benchmark has none of these runs


def test_seeds_are_pooled_pair_by_pair():
    runs = []
    for seed in (0, 1):
        for name, acc in (("full", 0.62), ("lstm", 0.55)):
            r = lra_cpu_run(name, "text", acc, 1.0)
            r.seed = seed
            runs.append(r)
    kept = {id(r): predicting(r.metrics["accuracy"], seed=r.seed) for r in runs}
    (row,) = lra_verdicts(runs, "lra_cpu", lambda r: kept[id(r)])
    assert row[VERDICT_COLUMN].startswith("full − lstm: +0.07") and row[VERDICT_COLUMN].endswith(", 2 seeds")
    assert above_prior(runs[::2], lambda r: kept[id(r)]).n == 2 * N  # full's two seeds: every (seed, example) once


def test_the_report_writes_the_verdicts_beside_the_table(tmp_path):
    runs = [lra_cpu_run("full", "text", 0.9, 1.0), lra_cpu_run("lstm", "text", 0.4, 1.0)]
    for i, (r, kept) in enumerate(zip(runs, [predicting(0.9), commonest_only()])):
        r.write(tmp_path / "runs" / f"r{i}")
        write_predictions(kept.predictions, tmp_path / "runs" / f"r{i}")
    assert report_main([str(tmp_path / "runs"), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    text = (tmp_path / "results" / "t" / "lra_cpu_verdicts.md").read_text()
    assert "| Text 1K | full | full − lstm: +0.53 [" in text and "| 1 of 2: full |" in text
