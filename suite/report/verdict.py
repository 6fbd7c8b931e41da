"""When a report calls a difference a win: the paired test of ``suite.report.significance`` applied to runs.

Two rules every table shares:

- ``judged``: the best mean against the runner-up's, paired by seed and test example (pooled over the seeds both
  ran); a winner only where the difference is significant (its 95 % interval excludes zero and the permutation
  test agrees), '≈' where it is not;
- ``above_prior``: a classifier against the constant guess of its test set's commonest class (what a model that
  learned only the label prior scores), paired the same way: did it learn anything beyond the prior?
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from suite.report.significance import Difference, Outputs, pooled_difference, row_kind
from suite.runtime.record import ResultRecord

OutputsOf = Callable[[ResultRecord], Outputs | None]  # a run's per-example test outputs (None: it kept none)


def judged(
    ok: Mapping[str, Sequence[ResultRecord]], means: Mapping[str, float], metric: str, outputs: OutputsOf
) -> tuple[str | None, str]:
    """(the winner, or None; the verdict in words) among the finished runs ``ok`` of each name, by ``means``.

    Where the runs kept no per-example outputs (older runs): no winner and no test."""
    if len(means) < 2:
        return None, ""
    top, second = sorted(means, key=means.get, reverse=True)[:2]
    a, b = ({r.seed: r for r in ok[m]} for m in (top, second))
    seeds = sorted(set(a) & set(b))
    kept = [(outputs(a[s]), outputs(b[s])) for s in seeds]
    if not seeds or any(x is None or y is None for x, y in kept):
        return None, "not tested: no per-example test outputs"
    try:
        diff = pooled_difference([x for x, _ in kept], [y for _, y in kept], metric, (top, second))
    except ValueError as err:  # NotPaired, or a metric without a paired test
        return None, f"not tested: {err}"
    seeds_note = f", {len(seeds)} seeds" if len(seeds) > 1 else ""
    text = f"{top} − {second}: {diff}{seeds_note}"
    return (top, text) if diff.significant else (None, f"≈ {text}")


def prior_guess(kept: Outputs) -> Outputs:
    """The constant guess of the commonest label among ``kept``'s test predictions, on the same examples."""
    commonest = Counter(p["label"] for p in kept.predictions).most_common(1)[0][0]
    return Outputs(predictions=[{**p, "prediction": commonest} for p in kept.predictions])


def above_prior(runs: Sequence[ResultRecord], outputs: OutputsOf) -> Difference | None:
    """Accuracy of ``runs`` (one model's seeds) minus the commonest-class guess's, pooled over the seeds; None where
    a run kept no per-example labelled predictions."""
    kept = [outputs(r) for r in runs]
    if not kept or any(k is None or not k.predictions or row_kind(k.predictions) != "examples" for k in kept):
        return None  # no predictions, or rows without labels to take the commonest of
    return pooled_difference(kept, [prior_guess(k) for k in kept], "accuracy", ("model", "commonest class"))
