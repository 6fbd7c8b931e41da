"""How often the convergence verdict is wrong, measured on synthetic curves (``suite.training.convergence``).

    python -m suite.tools.convergence_rates --out results/convergence

Noisy samples of known curves over a 1,000-step run, judged with the test's defaults: a flat curve called still
learning, a rising one called plateaued, one that levelled off early called plateaued (right), one that jumped at its
last evaluation called plateaued, and the same runs
judged from 40 validations and from every other one of them (20). ``tests/test_convergence.py`` bounds the same
figures; ``docs/convergence.md`` includes the table this writes.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Callable

import numpy as np

from suite.report.tables import markdown
from suite.training.convergence import PLATEAUED, STILL_LEARNING, ConvergenceTest

STEPS = 1000
TRIALS = 1000
NOISE = 0.02  # one evaluation's noise, in accuracy
Curve = Callable[[np.ndarray], np.ndarray]


def grid(evaluations: int) -> np.ndarray:
    """Steps of ``evaluations`` validations spread over the run, as ``trainer.evaluations`` places them."""
    every = math.ceil(STEPS / evaluations)
    return np.unique(np.r_[np.arange(every, STEPS + 1, every), STEPS]).astype(float)


def flat(x: np.ndarray) -> np.ndarray:
    return np.full_like(x, 0.7)


def rising(x: np.ndarray) -> np.ndarray:
    return 0.5 + 0.3 * x / STEPS  # still climbing at 0.03 per tenth of the run: 1.5 times the noise


def levelled(x: np.ndarray) -> np.ndarray:
    return 0.9 - 0.4 * np.exp(-x / (STEPS / 20))  # done by a fifth of the run


def stepped(x: np.ndarray) -> np.ndarray:
    return np.where(x >= x[-1], 0.9, 0.5)  # flat, then up by 0.4 at the last evaluation (a phase change)


def rate(
    curve: Curve, evaluations: int, verdict: str, test: ConvergenceTest = ConvergenceTest(), seed: int = 0
) -> float:
    """How often noisy samples of ``curve`` (step -> accuracy) are given ``verdict``."""
    rng = np.random.default_rng(seed)
    x = grid(evaluations)
    hits = sum(
        test.judge(x, curve(x) + rng.normal(0, NOISE, x.size), "accuracy").verdict == verdict for _ in range(TRIALS)
    )
    return hits / TRIALS


def interval_agreement(test: ConvergenceTest = ConvergenceTest(), runs: int = 2000, seed: int = 1) -> tuple[float, int]:
    """(share of same verdicts, curves compared): saturating runs (time constants a twentieth of the run to four times
    it, heights 0.1 to 0.4) judged from 40 validations and from every other one, on the runs whose true gain over the
    judged half is clearly off the boundary (outside half to twice what the test asks for)."""
    rng = np.random.default_rng(seed)
    fine = grid(40)
    agree = total = 0
    for _ in range(runs):
        tau = STEPS * math.exp(rng.uniform(math.log(1 / 20), math.log(4)))
        truth = 0.5 + rng.uniform(0.1, 0.4) * (1 - np.exp(-fine / tau))
        true_gain = truth[-1] - truth[fine >= STEPS * (1 - test.window)][0]
        floor = max(test.noise_multiple * NOISE, test.min_gain * (truth[-1] - truth[0]), test.min_relative * truth[-1])
        if floor / 2 < true_gain < 2 * floor:
            continue  # near the boundary either verdict is fair
        y = truth + rng.normal(0, NOISE, fine.size)
        agree += test.judge(fine, y, "accuracy").verdict == test.judge(fine[1::2], y[1::2], "accuracy").verdict
        total += 1
    return agree / total, total


def table(test: ConvergenceTest = ConvergenceTest()) -> list[dict[str, str]]:
    """The rates, one row a case."""
    counts = (10, 20, 40)

    def each(curve: Curve, verdict: str) -> str:
        return " / ".join(f"{rate(curve, n, verdict, test):.1%}" for n in counts)

    share, compared = interval_agreement(test)
    cases = [
        ("flat at 0.7", "still learning", "10 / 20 / 40", each(flat, STILL_LEARNING)),
        ("rising by 0.3 over the run", "plateaued", "10 / 20 / 40", each(rising, PLATEAUED)),
        ("levelled off by a fifth of the run", "still learning", "10 / 20 / 40", each(levelled, STILL_LEARNING)),
        ("flat, up by 0.4 at its last evaluation", "plateaued", "10 / 20 / 40", each(stepped, PLATEAUED)),
        (
            f"saturating, {compared} clear of the boundary",
            "another verdict from 20",
            "40 against 20",
            f"{1 - share:.1%}",
        ),
    ]
    return [dict(zip(("curve", "wrong verdict", "evaluations", "how often"), case)) for case in cases]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("results/convergence"), help="folder for rates.md")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    text = markdown(table())
    (args.out / "rates.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
