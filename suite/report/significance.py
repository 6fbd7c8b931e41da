"""Is one model's test score higher than another's by more than chance? Paired tests on the same test examples.

Two runs scored on the same test split are paired example by example (their ``predictions_test.jsonl``, or a
sequence-to-sequence run's ``outputs_<test set>.jsonl``). The difference of the metric (A minus B) gets:

- a 95 % paired bootstrap interval: the examples resampled with replacement, the same resample for both models, the
  metric recomputed on each resample (``scipy.stats.bootstrap``, ``paired=True``, percentile; seeded);
- a two-sided p-value from a paired permutation test: each example's two outputs swapped between the models at random
  (``scipy.stats.permutation_test``, ``permutation_type='samples'``; seeded; for BLEU and chrF sacrebleu's own,
  approximate randomization, ``sacrebleu.significance.PairedTest``).

Accuracy, macro-F1 and MCC are recomputed by scikit-learn on every resample; BLEU and chrF from sacrebleu's own
per-sentence sufficient statistics (the corpus score of each resample, as sacrebleu's paired bootstrap computes it;
the tests check the two bootstraps agree); ROUGE, a mean over examples, from each example's score (written beside
its output); a language model's perplexity and bits per byte from each test document's summed token losses, the
metric recomputed from the resample's sums.
A difference is called a win only when its interval excludes zero and the permutation test agrees (p < 0.05): on
a few examples the two can disagree, and neither alone is then trusted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

RESAMPLES = 1000
SEED = 0
ALPHA = 0.05  # the permutation test's level, beside the 95 % interval


@dataclass(frozen=True)
class Difference:
    """Metric of A minus metric of B on the same ``n`` test examples, its 95 % interval and p-value."""

    metric: str
    delta: float
    low: float
    high: float
    p_value: float
    n: int

    @property
    def significant(self) -> bool:
        """The interval excludes zero and the permutation test rejects no difference at 5 %."""
        return (self.low > 0 or self.high < 0) and self.p_value < ALPHA

    def __str__(self) -> str:
        # With 1,000 resamples the smallest p-value a test can give is about 0.001 (0.002 two-sided): printed as is.
        return f"{self.delta:+.3g} [{self.low:+.3g}, {self.high:+.3g}], p {self.p_value:.3f}"


class NotPaired(ValueError):
    """Two runs whose test examples are not the same examples."""


def paired_labels(a: list[dict[str, Any]], b: list[dict[str, Any]], names: tuple[str, str]) -> np.ndarray:
    """The labels the two runs' predictions share; refuses runs scored on different examples, naming what differs."""
    if len(a) != len(b):
        raise NotPaired(f"{names[0]} has {len(a)} test predictions, {names[1]} {len(b)}: not the same test split")
    for x, y in zip(a, b):
        if x["id"] != y["id"] or x["label"] != y["label"]:
            raise NotPaired(
                f"test example {x['id']} of {names[0]} (label {x['label']}) is not example {y['id']} of {names[1]} "
                f"(label {y['label']}): not the same test split"
            )
    return np.array([x["label"] for x in a])


def paired_counts(a: list[dict[str, Any]], b: list[dict[str, Any]], names: tuple[str, str]) -> np.ndarray:
    """(N,) the scored positions of each test sequence the two runs share; refuses runs that scored other sequences or
    other positions in them, naming the first that differs."""
    if len(a) != len(b):
        raise NotPaired(f"{names[0]} scored {len(a)} test sequences, {names[1]} {len(b)}: not the same test split")
    for x, y in zip(a, b):
        if x["id"] != y["id"] or x["scored"] != y["scored"]:
            raise NotPaired(
                f"test sequence {x['id']} of {names[0]} ({x['scored']} scored positions) is not sequence {y['id']} of "
                f"{names[1]} ({y['scored']}): not the same test split"
            )
    return np.array([x["scored"] for x in a], dtype=np.float64)


def paired_test(
    metric: str,
    x: np.ndarray,
    y: np.ndarray,
    diff: Callable[..., Any],
    fixed: tuple[np.ndarray, ...] = (),
    vectorized: bool = True,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Difference:
    """``diff(x, y, *fixed)``, two models' per-example values (x, y) and what the examples fix (labels, sizes), with its
    paired bootstrap interval (x, y and ``fixed`` resampled together) and permutation p-value (each example's x and y
    swapped at random; ``fixed`` stays). ``vectorized``: ``diff`` takes ``axis`` and scores many resamples at once."""
    from scipy import stats

    boot = stats.bootstrap(
        (x, y, *fixed), diff, paired=True, vectorized=vectorized, n_resamples=resamples, method="percentile",
        random_state=seed,
    )  # fmt: skip
    perm = stats.permutation_test(
        (x, y), lambda u, v, **axis: diff(u, v, *fixed, **axis), permutation_type="samples", vectorized=vectorized,
        n_resamples=resamples, random_state=seed,
    )  # fmt: skip
    interval = boot.confidence_interval
    return Difference(
        metric, float(diff(x, y, *fixed)), float(interval.low), float(interval.high), float(perm.pvalue), len(x)
    )


def classification_score(metric: str) -> Callable[[np.ndarray, np.ndarray], float]:
    """(labels, predictions) -> the metric, as the task computes it."""
    from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

    scores = {
        "accuracy": accuracy_score,
        "macro_f1": lambda y, p: f1_score(y, p, average="macro", zero_division=0),
        "mcc": matthews_corrcoef,
    }
    if metric not in scores:
        raise ValueError(f"no paired test for the metric {metric!r} (classification: {sorted(scores)})")
    return scores[metric]


def classification_difference(
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    metric: str = "accuracy",
    names: tuple[str, str] = ("A", "B"),
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Difference:
    """The paired difference of ``metric`` between two runs' per-example predictions (rows of
    ``predictions_test.jsonl``)."""
    labels = paired_labels(a, b, names)
    pa, pb = np.array([x["prediction"] for x in a]), np.array([x["prediction"] for x in b])
    if metric == "accuracy":  # the share of correct predictions, over a batch of resamples at once

        def diff(x: np.ndarray, y: np.ndarray, truth: np.ndarray, axis: int = -1) -> np.ndarray:
            return np.mean(x == truth, axis=axis) - np.mean(y == truth, axis=axis)

        vectorized = True
    else:  # recomputed by scikit-learn on every resample
        score = classification_score(metric)

        def diff(x: np.ndarray, y: np.ndarray, truth: np.ndarray) -> float:
            return score(truth, x) - score(truth, y)

        vectorized = False
    return paired_test(metric, pa, pb, diff, (labels,), vectorized, resamples, seed)


def count_difference(
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    metric: str = "accuracy",
    names: tuple[str, str] = ("A", "B"),
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Difference:
    """The paired difference of accuracy over scored positions between two runs' per-sequence counts (rows of
    ``predictions_test.jsonl``: id, correct, scored). Sequences are resampled, not positions: the positions of one
    sequence (a running sum, a word problem, MQAR's queries) are not independent draws, and resampling them one by one
    would narrow the interval by as much as they are alike. Accuracy is recomputed as the resample's correct over its
    scored positions."""
    if metric != "accuracy":
        raise ValueError(f"no paired test for the metric {metric!r} on per-sequence counts (accuracy only)")
    scored = paired_counts(a, b, names)
    x, y = (np.array([r["correct"] for r in rows], dtype=np.float64) for rows in (a, b))

    def diff(u: np.ndarray, v: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
        return (np.sum(u, axis=axis) - np.sum(v, axis=axis)) / np.sum(n, axis=axis)

    return paired_test(metric, x, y, diff, (scored,), True, resamples, seed)


def row_kind(rows: list[dict[str, Any]]) -> str:
    """What a run's per-example rows hold: 'documents' (a language model's losses), 'sequences' (correct and scored
    positions a sequence) or 'examples' (a label and a prediction each)."""
    first = rows[0] if rows else {}
    return "documents" if "nll" in first else "sequences" if "scored" in first else "examples"


def paired_documents(a: list[dict[str, Any]], b: list[dict[str, Any]], names: tuple[str, str]) -> np.ndarray:
    """(2, N) the tokens and bytes of each document the two language models scored; refuses runs that scored other
    documents or other targets in them (another split, tokenizer or stride), naming the first that differs."""
    if len(a) != len(b):
        raise NotPaired(f"{names[0]} scored {len(a)} test documents, {names[1]} {len(b)}: not the same test split")
    for x, y in zip(a, b):
        if (x["id"], x["tokens"], x["bytes"]) != (y["id"], y["tokens"], y["bytes"]):
            raise NotPaired(
                f"test document {x['id']} of {names[0]} ({x['tokens']} targets, {x['bytes']} bytes) is not document "
                f"{y['id']} of {names[1]} ({y['tokens']} targets, {y['bytes']} bytes): not the same test targets"
            )
    return np.array([[x["tokens"] for x in a], [x["bytes"] for x in a]], dtype=np.float64)


LOSS_METRICS = {  # (summed nats, summed tokens, summed bytes) -> the metric, as tasks.next_token.Tally computes it
    "loss": lambda nll, tokens, size: nll / tokens,
    "perplexity": lambda nll, tokens, size: np.exp(nll / tokens),
    "bits_per_byte": lambda nll, tokens, size: nll / (np.log(2) * size),
    "neg_bits_per_byte": lambda nll, tokens, size: -nll / (np.log(2) * size),
}


def loss_difference(
    a: list[dict[str, Any]],
    b: list[dict[str, Any]],
    metric: str = "neg_bits_per_byte",
    names: tuple[str, str] = ("A", "B"),
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Difference:
    """The paired difference of a language model's test ``metric`` between two runs' per-document losses (rows of
    ``predictions_test.jsonl``: id, nll, tokens, bytes): documents resampled, the metric recomputed from the
    resample's sums (a ratio of sums, not a mean of per-document ratios)."""
    if metric not in LOSS_METRICS:
        raise ValueError(f"no paired test for the metric {metric!r} (language models: {sorted(LOSS_METRICS)})")
    score = LOSS_METRICS[metric]
    tokens, size = paired_documents(a, b, names)
    na, nb = np.array([x["nll"] for x in a]), np.array([x["nll"] for x in b])

    def diff(x: np.ndarray, y: np.ndarray, t: np.ndarray, n: np.ndarray, axis: int = -1) -> np.ndarray:
        t, n = t.sum(axis=axis), n.sum(axis=axis)
        return score(x.sum(axis=axis), t, n) - score(y.sum(axis=axis), t, n)

    return paired_test(metric, na, nb, diff, (tokens, size), True, resamples, seed)


def mean_difference(
    a: Sequence[float], b: Sequence[float], metric: str, resamples: int = RESAMPLES, seed: int = SEED
) -> Difference:
    """The paired difference of a metric that is the mean of per-example scores (ROUGE F1: ``scores`` in a
    sequence-to-sequence run's outputs), from those scores."""
    if len(a) != len(b):
        raise NotPaired(f"{len(a)} and {len(b)} per-example {metric} scores: not the same test set")
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)

    def diff(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(u, axis=axis) - np.mean(v, axis=axis)

    return paired_test(metric, x, y, diff, (), True, resamples, seed)


def corpus_metric(metric: str):
    """sacrebleu's metric object for 'bleu' or 'chrf'."""
    from sacrebleu.metrics import BLEU, CHRF

    makers = {"bleu": BLEU, "chrf": CHRF}
    if metric not in makers:
        raise ValueError(f"no paired test for the metric {metric!r} (text: {sorted(makers)})")
    return makers[metric]()


def corpus_bootstrap(
    a: Sequence[str], b: Sequence[str], references: Sequence[str], metric: str, resamples: int, seed: int
) -> tuple[float, Any]:
    """(corpus score of A minus B; scipy's bootstrap result of that difference, the sentences resampled together)."""
    from scipy import stats

    if not len(a) == len(b) == len(references):
        raise NotPaired(f"{len(a)} and {len(b)} outputs for {len(references)} references: not the same test set")
    scorer = corpus_metric(metric)
    # sacrebleu's own per-sentence statistics: a resample's corpus score is computed from their sums
    sa = np.array(scorer._extract_corpus_statistics(list(a), [list(references)]))
    sb = np.array(scorer._extract_corpus_statistics(list(b), [list(references)]))

    def corpus(rows: np.ndarray) -> float:
        return scorer._compute_score_from_stats(list(rows.sum(axis=0))).score

    boot = stats.bootstrap(
        (np.arange(len(references)),), lambda i: corpus(sa[i]) - corpus(sb[i]), vectorized=False,
        n_resamples=resamples, method="percentile", random_state=seed,
    )  # fmt: skip
    return corpus(sa) - corpus(sb), boot


def text_difference(
    a: Sequence[str],
    b: Sequence[str],
    references: Sequence[str],
    metric: str = "bleu",
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Difference:
    """The paired difference of corpus BLEU or chrF between two systems' outputs for the same references."""
    from sacrebleu.significance import PairedTest

    delta, boot = corpus_bootstrap(a, b, references, metric, resamples, seed)
    test = PairedTest(  # approximate randomization: each sentence's two outputs swapped at random, two-sided
        [("baseline", list(b)), ("system", list(a))],
        {metric: corpus_metric(metric)},
        [list(references)],
        test_type="ar",
        n_samples=resamples,
    )
    _, results = test()
    p_value = next(v for k, v in results.items() if k != "System")[1].p_value  # the system against the baseline
    interval = boot.confidence_interval
    return Difference(metric, delta, float(interval.low), float(interval.high), float(p_value), len(references))


def run_predictions(run_dir: Path) -> list[dict[str, Any]] | None:
    """A run's per-example test predictions, or None when it kept none."""
    from suite.runtime.predictions import PREDICTIONS_FILE, read_predictions

    return read_predictions(run_dir) if (Path(run_dir) / PREDICTIONS_FILE).is_file() else None


@dataclass(frozen=True)
class Outputs:
    """A run's per-example test outputs: a classifier's predictions (``id``, ``label``, ``prediction``), or a
    sequence-to-sequence run's texts (``source``, ``reference``, ``output``)."""

    predictions: list[dict[str, Any]] | None = None
    texts: list[dict[str, Any]] | None = None


TEXT_FILE = "outputs_test.jsonl"  # a sequence-to-sequence run's main test set (suite.types: the task's write_artifacts)


def run_outputs(run_dir: Path) -> Outputs | None:
    """What ``run_dir`` kept of its test scoring, or None when it kept nothing to pair."""
    import json

    if (predictions := run_predictions(run_dir)) is not None:
        return Outputs(predictions=predictions)
    path = Path(run_dir) / TEXT_FILE
    if path.is_file():
        with path.open(encoding="utf-8") as f:
            return Outputs(texts=[json.loads(line) for line in f])
    return None


def pooled_difference(
    a: list[Outputs], b: list[Outputs], metric: str, names: tuple[str, str] = ("A", "B")
) -> Difference:
    """The paired difference over several seeds' runs (``a[i]`` and ``b[i]``: one seed): every (seed, example) pair is
    one paired observation, the metric computed over all of them (for one seed, the plain paired test)."""
    if len(a) != len(b) or not a:
        raise NotPaired(f"{len(a)} runs of {names[0]} against {len(b)} of {names[1]}: pair them by seed")
    if all(o.predictions is not None for o in a + b):
        kinds = {row_kind(o.predictions) for o in a + b}
        if len(kinds) > 1:
            raise NotPaired(f"{names[0]} and {names[1]} kept different kinds of test rows ({', '.join(sorted(kinds))})")
        pair, difference = {
            "documents": (paired_documents, loss_difference),
            "sequences": (paired_counts, count_difference),
            "examples": (paired_labels, classification_difference),
        }[kinds.pop()]
        rows_a, rows_b = [], []
        for seed, (x, y) in enumerate(zip(a, b)):
            pair(x.predictions, y.predictions, names)  # each seed's pair on the same examples
            rows_a += [{**r, "id": (seed, r["id"])} for r in x.predictions]
            rows_b += [{**r, "id": (seed, r["id"])} for r in y.predictions]
        return difference(rows_a, rows_b, metric, names)
    if all(o.texts is not None for o in a + b):
        refs, out_a, out_b = [], [], []
        for x, y in zip(a, b):
            if [r["reference"] for r in x.texts] != [r["reference"] for r in y.texts]:
                raise NotPaired(f"{names[0]} and {names[1]} wrote outputs for different references")
            refs += [r["reference"] for r in x.texts]
            out_a += x.texts
            out_b += y.texts
        if all(metric in r.get("scores", {}) for r in out_a + out_b):  # a mean of per-example scores (ROUGE)
            return mean_difference([r["scores"][metric] for r in out_a], [r["scores"][metric] for r in out_b], metric)
        return text_difference([r["output"] for r in out_a], [r["output"] for r in out_b], refs, metric)
    raise NotPaired(f"{names[0]} and {names[1]} kept different kinds of test outputs")


T_FROM = 3  # seeds from which the mean gets a t-interval; fewer get their range


class SeedSpread(NamedTuple):
    """Where the mean over seeds may lie: its 95 % t-interval, or with fewer than ``T_FROM`` seeds their range.

    ``method``: 't' (Student's t, held within the metric's bounds) or 'range' (the lowest and highest seed).
    """

    low: float
    high: float
    seeds: int
    method: str

    def text(self, number: Callable[[float], str] = lambda x: f"{x:.3g}") -> str:
        """'95 % CI [0.794, 0.818]' or 'range [0.61, 0.74] (2 seeds)', each number written by ``number``."""
        span = f"[{number(self.low)}, {number(self.high)}]"
        return f"95 % CI {span}" if self.method == "t" else f"range {span} ({self.seeds} seeds)"


def seed_interval(
    values: Sequence[float], bounds: tuple[float, float] = (-math.inf, math.inf), confidence: float = 0.95
) -> SeedSpread | None:
    """Where the mean of ``values`` (one a seed) may lie; None below two seeds.

    From ``T_FROM`` seeds on, the ``confidence`` interval of the mean (Student's t, ``scipy.stats.t``) cut to
    ``bounds``, the values the metric can take (``suite.runtime.bounds``): the mean cannot lie outside them, so the cut
    interval covers it exactly as often as the whole one, and it never shows an accuracy above 1. With two seeds
    the t quantile of one degree of freedom is 12.7 (95 %): the interval is mostly wider than the metric's whole
    range and says nothing the two values do not, so their range is given instead.
    """
    from scipy import stats

    if len(values) < 2:
        return None
    if len(values) < T_FROM:
        return SeedSpread(float(min(values)), float(max(values)), len(values), "range")
    sem = stats.sem(values)
    mean = float(np.mean(values))
    low, high = (mean, mean) if sem == 0 else stats.t.interval(confidence, len(values) - 1, loc=mean, scale=sem)
    return SeedSpread(max(float(low), bounds[0]), min(float(high), bounds[1]), len(values), "t")
