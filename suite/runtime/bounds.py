"""The values each metric can take: what an interval over seeds is held within, and the scale the convergence test
measures a material gain on."""

from __future__ import annotations

import math

# The values each metric can take, as the tasks compute it (``val_`` and ``ann_`` prefixes aside): shares in [0, 1],
# Matthews' correlation in [-1, 1], sacrebleu's BLEU and chrF and rouge-score's ROUGE in percent, losses and bits per
# byte from 0, perplexity from 1 (a token's probability is at most 1), negative bits per byte up to 0.
SHARE, PERCENT, FROM_ZERO = (0.0, 1.0), (0.0, 100.0), (0.0, math.inf)
BOUNDS: dict[str, tuple[float, float]] = {
    **dict.fromkeys(("accuracy", "macro_f1", "roc_auc"), SHARE),
    "mcc": (-1.0, 1.0),
    **dict.fromkeys(("bleu", "chrf", "rouge1", "rouge2", "rougeL", "rougeLsum"), PERCENT),
    **dict.fromkeys(("loss", "bits_per_byte"), FROM_ZERO),
    **dict.fromkeys(("perplexity", "unigram_perplexity"), (1.0, math.inf)),
    "neg_bits_per_byte": (-math.inf, 0.0),
}


def metric_bounds(metric: str) -> tuple[float, float]:
    """(lowest, highest) value ``metric`` can take (a class's ``f1_<class>`` a share); (-inf, inf) for a metric
    ``BOUNDS`` does not know."""
    name = metric.removeprefix("val_").removeprefix("ann_")
    return BOUNDS.get(name, SHARE if name.startswith("f1_") else (-math.inf, math.inf))
