"""Paired significance (suite.report.significance): the bootstrap against a direct recomputation and against
sacrebleu's own paired bootstrap, the tests' verdicts on clear and null differences, and runs that do not pair."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score

from suite.report.significance import (
    NotPaired,
    Outputs,
    classification_difference,
    corpus_bootstrap,
    count_difference,
    loss_difference,
    mean_difference,
    pooled_difference,
    seed_interval,
    text_difference,
)
from suite.runtime.bounds import metric_bounds


def rows(labels, preds):
    return [{"id": i, "label": int(y), "prediction": int(p)} for i, (y, p) in enumerate(zip(labels, preds))]


def noisy(labels: np.ndarray, right: float, rng: np.random.Generator) -> np.ndarray:
    """Predictions that are right on about ``right`` of the examples."""
    return np.where(rng.random(len(labels)) < right, labels, (labels + 1 + rng.integers(0, 2, len(labels))) % 3)


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 600)
    return labels, noisy(labels, 0.8, rng), noisy(labels, 0.7, rng)


def test_accuracy_difference_is_a_direct_recomputation(pair):
    """The difference is sklearn's accuracy of A minus B's; the interval is the one a bootstrap that recomputes
    sklearn's accuracy on every resample gives with the same seed (the fast path changes nothing)."""
    labels, a, b = pair
    diff = classification_difference(rows(labels, a), rows(labels, b), "accuracy", resamples=500, seed=3)
    assert diff.delta == pytest.approx(accuracy_score(labels, a) - accuracy_score(labels, b))
    direct = stats.bootstrap(
        (a, b, labels),
        lambda x, y, t: accuracy_score(t, x) - accuracy_score(t, y),
        paired=True,
        vectorized=False,
        n_resamples=500,
        method="percentile",
        random_state=3,
    ).confidence_interval
    assert (diff.low, diff.high) == pytest.approx((direct.low, direct.high))
    assert diff.low < diff.delta < diff.high and diff.n == len(labels)


def test_a_clear_win_is_significant_and_a_model_against_itself_is_not(pair):
    labels, a, b = pair
    win = classification_difference(rows(labels, a), rows(labels, b), "accuracy")
    assert win.significant and win.low > 0 and win.p_value < 0.01
    same = classification_difference(rows(labels, a), rows(labels, a), "macro_f1", resamples=200)
    assert not same.significant and same.delta == 0 and same.p_value == 1.0
    assert str(win) == f"{win.delta:+.3g} [{win.low:+.3g}, {win.high:+.3g}], p {win.p_value:.3f}"


def test_a_small_difference_on_few_examples_is_not_called_a_win():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 60)
    a, b = noisy(labels, 0.72, rng), noisy(labels, 0.7, rng)
    diff = classification_difference(rows(labels, a), rows(labels, b), "mcc", resamples=300)
    assert diff.low < 0 < diff.high and not diff.significant and diff.p_value > 0.05


def test_runs_on_other_examples_are_refused_by_name(pair):
    labels, a, b = pair
    with pytest.raises(NotPaired, match="600 test predictions, lstm 599"):
        classification_difference(rows(labels, a), rows(labels, b)[:-1], names=("transformer", "lstm"))
    other = rows(labels, b)
    other[5]["label"] = (other[5]["label"] + 1) % 3
    with pytest.raises(NotPaired, match="test example 5 of A"):
        classification_difference(rows(labels, a), other)
    with pytest.raises(ValueError, match="no paired test for the metric 'rougeL'"):
        classification_difference(rows(labels, a), rows(labels, b), "rougeL")


def counts(correct, scored):
    return [{"id": i, "correct": int(c), "scored": int(n)} for i, (c, n) in enumerate(zip(correct, scored))]


def test_a_count_difference_resamples_sequences_and_is_a_direct_recomputation():
    """Accuracy over scored positions, A minus B; the interval the one a bootstrap over sequences that recomputes
    correct / scored on every resample gives with the same seed."""
    rng = np.random.default_rng(1)
    scored = rng.integers(1, 9, 300)
    a, b = rng.binomial(scored, 0.8), rng.binomial(scored, 0.7)
    diff = count_difference(counts(a, scored), counts(b, scored), resamples=400, seed=2)
    assert diff.delta == pytest.approx((a.sum() - b.sum()) / scored.sum()) and diff.n == 300
    direct = stats.bootstrap(
        (a, b, scored), lambda x, y, n: (x.sum() - y.sum()) / n.sum(), paired=True, vectorized=False,
        n_resamples=400, method="percentile", random_state=2,
    ).confidence_interval  # fmt: skip
    assert (diff.low, diff.high) == pytest.approx((direct.low, direct.high))
    assert diff.significant


def test_positions_of_one_sequence_are_not_counted_as_independent_examples():
    """Where a sequence's ten positions are all right or all wrong together, resampling sequences gives an interval
    about sqrt(10) wider than resampling the positions one by one would: a difference that a test over positions
    would call a win is within the noise over sequences."""
    rng = np.random.default_rng(0)
    a, b = rng.random(120) < 0.6, rng.random(120) < 0.5
    scored = np.full(120, 10)
    by_sequence = count_difference(counts(10 * a, scored), counts(10 * b, scored), resamples=500)
    flat = [{"id": i, "label": 1, "prediction": int(x)} for i, x in enumerate(np.repeat(a, 10))]
    other = [{"id": i, "label": 1, "prediction": int(x)} for i, x in enumerate(np.repeat(b, 10))]
    by_position = classification_difference(flat, other, resamples=500)
    assert by_sequence.delta == pytest.approx(by_position.delta)
    ratio = (by_sequence.high - by_sequence.low) / (by_position.high - by_position.low)
    assert 2.4 < ratio < 4.2  # sqrt(10) = 3.16, up to the bootstrap's own error
    assert by_position.significant and not by_sequence.significant


def test_counts_of_other_sequences_or_another_kind_of_row_are_refused_by_name():
    scored = [4] * 10
    with pytest.raises(NotPaired, match="A scored 10 test sequences, B 9"):
        count_difference(counts([2] * 10, scored), counts([2] * 9, scored[:9]))
    other = counts([2] * 10, [4] * 9 + [5])
    with pytest.raises(NotPaired, match="test sequence 9 of A .4 scored positions. is not sequence 9 of B .5."):
        count_difference(counts([2] * 10, scored), other)
    with pytest.raises(ValueError, match="accuracy only"):
        count_difference(counts([2] * 10, scored), counts([2] * 10, scored), "macro_f1")
    labelled = Outputs(predictions=rows([1] * 10, [1] * 10))
    with pytest.raises(NotPaired, match="different kinds of test rows .examples, sequences."):
        pooled_difference([labelled], [Outputs(predictions=counts([2] * 10, scored))], "accuracy")


def sentences(seed: int = 0, n: int = 300):
    rng = random.Random(seed)
    words = "the cat sat on a mat with the dog in red and blue".split()
    refs = [" ".join(rng.choice(words) for _ in range(9)) for _ in range(n)]

    def system(right: float) -> list[str]:
        return [r if rng.random() < right else " ".join(rng.choice(words) for _ in range(9)) for r in refs]

    return refs, system(0.8), system(0.3)


def test_bleu_bootstrap_agrees_with_sacrebleus_paired_bootstrap():
    """The same corpus BLEU difference as sacrebleu's scores, and a bootstrap whose spread and centre match
    sacrebleu's paired bootstrap resampling of the same two systems (its own resamples, its own seed)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    refs, a, b = sentences()
    delta, boot = corpus_bootstrap(a, b, refs, "bleu", resamples=1000, seed=0)
    bleu = BLEU()
    assert delta == pytest.approx(bleu.corpus_score(a, [refs]).score - bleu.corpus_score(b, [refs]).score)
    _, results = PairedTest([("b", b), ("a", a)], {"bleu": BLEU()}, [refs], test_type="bs", n_samples=1000)()
    base, system = next(v for k, v in results.items() if k != "System")
    theirs = system.mean - base.mean  # sacrebleu's paired resamples: the mean of each system's scores
    ours = float(np.mean(boot.bootstrap_distribution))
    assert ours == pytest.approx(theirs, abs=0.5)  # two seeds' Monte Carlo error on a ~15-point difference
    assert float(np.std(boot.bootstrap_distribution)) < system.ci + base.ci  # sacrebleu's ci: each system's 95 % half
    diff = text_difference(a, b, refs, "bleu", resamples=500)
    assert diff.significant and diff.p_value < 0.01 and diff.low < delta < diff.high


def test_seeds_are_pooled_pair_by_pair(pair):
    labels, a, b = pair
    one = Outputs(predictions=rows(labels, a)), Outputs(predictions=rows(labels, b))
    pooled = pooled_difference([one[0], one[0]], [one[1], one[1]], "accuracy")
    assert pooled.n == 2 * len(labels) and pooled.delta == pytest.approx(
        classification_difference(rows(labels, a), rows(labels, b)).delta
    )
    refs, x, y = sentences(n=40)
    texts = lambda outs: Outputs(texts=[{"reference": r, "output": o} for r, o in zip(refs, outs)])  # noqa: E731
    assert pooled_difference([texts(x)], [texts(y)], "bleu").n == 40
    with pytest.raises(NotPaired, match="different kinds"):
        pooled_difference([one[0]], [texts(y)], "accuracy")
    with pytest.raises(NotPaired, match="pair them by seed"):
        pooled_difference([one[0]], [], "accuracy")


def documents(seed: int, n: int = 200, worse: float = 0.0):
    """Per-document rows of a language model's test scoring: ~3.5 nats a token, ``worse`` more for a weaker one."""
    rng = np.random.default_rng(seed)
    tokens = np.random.default_rng(99).integers(5, 80, n)  # the same documents for every model
    nll = tokens * (3.5 + worse + rng.normal(0, 0.4, n))
    return [
        {"id": i, "nll": float(x), "tokens": int(t), "bytes": int(4 * t + i % 3)}
        for i, (x, t) in enumerate(zip(nll, tokens))
    ]


def bits_per_byte(rows) -> float:
    return sum(r["nll"] for r in rows) / (np.log(2) * sum(r["bytes"] for r in rows))


@pytest.mark.parametrize("metric", ["bits_per_byte", "perplexity"])
def test_a_language_models_difference_recomputes_the_metric_from_each_resamples_sums(metric):
    """Documents resampled; per resample the metric is the ratio of the resample's sums, as the task computes it over
    the split (not a mean of per-document ratios): the same interval as a direct recomputation per resample."""
    a, b = documents(0), documents(1, worse=0.3)
    diff = loss_difference(a, b, metric, resamples=300, seed=5)
    score = {
        "bits_per_byte": bits_per_byte,
        "perplexity": lambda rows: np.exp(sum(r["nll"] for r in rows) / sum(r["tokens"] for r in rows)),
    }[metric]
    assert diff.delta == pytest.approx(score(a) - score(b))
    direct = stats.bootstrap(
        (np.arange(len(a)),),
        lambda i: score([a[k] for k in i]) - score([b[k] for k in i]),
        vectorized=False,
        n_resamples=300,
        method="percentile",
        random_state=5,
    ).confidence_interval
    assert (diff.low, diff.high) == pytest.approx((direct.low, direct.high))
    assert diff.significant and diff.high < 0 and diff.p_value < 0.01  # A is the better model: fewer bits
    same = loss_difference(a, documents(2), "bits_per_byte")
    assert not same.significant and same.p_value > 0.05


def test_language_models_scored_on_other_targets_are_refused_by_name():
    a, b = documents(0), documents(1)
    b[7] = {**b[7], "tokens": b[7]["tokens"] + 1}
    with pytest.raises(NotPaired, match="test document 7 .* not the same test targets"):
        loss_difference(a, b)
    with pytest.raises(NotPaired, match="200 test documents"):
        loss_difference(a, b[:-1])
    with pytest.raises(ValueError, match="no paired test for the metric 'accuracy'"):
        loss_difference(a, a, "accuracy")


def test_per_example_scores_are_paired_as_a_mean_and_pooled_by_kind(pair):
    rng = np.random.default_rng(4)
    x, y = rng.normal(30, 10, 400), rng.normal(28, 10, 400)
    diff = mean_difference(x, y, "rougeL", resamples=300, seed=1)
    direct = stats.bootstrap(
        (x, y), lambda u, v: u.mean() - v.mean(), paired=True, vectorized=False, n_resamples=300,
        method="percentile", random_state=1,
    ).confidence_interval  # fmt: skip
    assert diff.delta == pytest.approx(x.mean() - y.mean())
    assert (diff.low, diff.high) == pytest.approx((direct.low, direct.high))
    texts = lambda s: Outputs(  # noqa: E731
        texts=[{"reference": f"r{i}", "output": "o", "scores": {"rougeL": v}} for i, v in enumerate(s)]
    )
    assert pooled_difference([texts(x)], [texts(y)], "rougeL").delta == pytest.approx(diff.delta)
    lm = pooled_difference([Outputs(predictions=documents(0))] * 2, [Outputs(predictions=documents(1))] * 2, "loss")
    assert lm.n == 400 and lm.metric == "loss"


# --- the interval over seeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric, values",
    [
        ("accuracy", [1.0, 1.0, 0.4]),  # Student's t of two degrees of freedom alone: [-0.061, 1.66]
        ("accuracy", [0.02, 0.0, 0.3]),
        ("macro_f1", [0.99, 0.2, 1.0, 1.0]),
        ("bleu", [99.0, 100.0, 40.0]),
        ("perplexity", [1.01, 1.0, 9.0]),
        ("neg_bits_per_byte", [-0.01, -0.0, -2.0]),
    ],
)
def test_an_interval_over_seeds_stays_within_its_metric_s_bounds(metric, values):
    low_bound, high_bound = metric_bounds(metric)
    spread = seed_interval(values, metric_bounds(metric))
    assert spread.method == "t" and low_bound <= spread.low <= spread.high <= high_bound
    unbounded = seed_interval(values)  # what the tables printed before: outside the bounds
    assert unbounded.low < low_bound or unbounded.high > high_bound


def test_random_seeds_never_give_an_accuracy_interval_outside_0_and_1():
    rng = random.Random(0)
    for _ in range(500):
        values = [rng.choice([0.0, 1.0, rng.random()]) for _ in range(rng.randint(2, 6))]
        spread = seed_interval(values, metric_bounds("accuracy"))
        assert 0.0 <= spread.low <= spread.high <= 1.0


def test_fewer_than_three_seeds_give_their_range_and_one_gives_none():
    spread = seed_interval([0.61, 0.74], metric_bounds("accuracy"))
    assert (spread.low, spread.high, spread.method) == (0.61, 0.74, "range")
    assert spread.text() == "range [0.61, 0.74] (2 seeds)"
    assert seed_interval([0.7], metric_bounds("accuracy")) is None
    assert seed_interval([0.7, 0.8, 0.9]).text().startswith("95 % CI [")


def test_each_metric_has_the_bounds_of_how_the_tasks_compute_it():
    assert metric_bounds("accuracy") == metric_bounds("f1_EI") == metric_bounds("val_macro_f1") == (0.0, 1.0)
    assert metric_bounds("bleu") == metric_bounds("ann_rougeL") == metric_bounds("chrf") == (0.0, 100.0)
    assert metric_bounds("mcc") == (-1.0, 1.0)
    assert metric_bounds("perplexity") == (1.0, math.inf) and metric_bounds("bits_per_byte") == (0.0, math.inf)
    assert metric_bounds("a_metric_of_ones_own") == (-math.inf, math.inf)
