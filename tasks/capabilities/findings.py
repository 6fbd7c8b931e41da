"""The field's published findings on the capability map's tasks, and whether ours agree, judged from the map's cells.

Each finding states what a paper measured (its source, setting and figures, typed from the paper as its table gives
them) and the shape it claims as a few ``Claim`` s about our cells: a model on a task solves it (accuracy at least
``SOLVED``), fails it (below ``FAILED``), is perfect on every seed (an error-free run, for flip-flop's LSTM), or errs
(an error on some seed of a trained model, for flip-flop's Transformer). Ours agree
where every claim holds at a size, disagree where a cell contradicts a claim for good (a run still learning short of
solving might yet get there; one already past failing will not go back), and are not comparable where a cell is
missing, failed or still short of solving. The published settings differ from ours (longer sequences, GPU budgets,
best-of-N seeds): the setting columns say how.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tasks.capabilities.cells import Cell

SOLVED = 0.9  # a model solves a task at a mean test accuracy of at least this
FAILED = 0.6  # and fails it below this (between the two: neither, which contradicts both)
AGREE, DISAGREE, NOT_COMPARABLE = "agree", "disagree", "not comparable"


def beyond(r_metrics: Mapping[str, float]) -> float | None:
    """The mean accuracy over the lengths tested beyond training (``accuracy_at_<L>``), None where none was."""
    values = [v for k, v in r_metrics.items() if k.startswith("accuracy_at_")]
    return statistics.mean(values) if values else None


def longest(r_metrics: Mapping[str, float]) -> float | None:
    """The accuracy at the longest length tested."""
    tested = {int(k.rsplit("_", 1)[1]): v for k, v in r_metrics.items() if k.startswith("accuracy_at_")}
    return tested[max(tested)] if tested else None


Metric = Callable[[Mapping[str, float]], "float | None"]
AT_TRAINING_LENGTH: Metric = lambda m: m.get("accuracy")  # noqa: E731


@dataclass(frozen=True)
class Claim:
    """``model`` on ``task``: 'solves', 'fails', 'perfect' (every seed without an error) or 'errs' (not perfect: an
    error on some seed), by ``metric``."""

    model: str
    task: str
    shape: str
    metric: Metric = AT_TRAINING_LENGTH
    where: str = ""  # what the metric reads, for the table ('beyond training', 'at 16x')

    def judge(self, cell: Cell | None) -> tuple[str, str]:
        """(agree / disagree / not comparable, our figure or the reason)."""
        name = f"{self.model}{f' ({self.where})' if self.where else ''}"
        if cell is None:
            return NOT_COMPARABLE, f"{name}: no run"
        values = [v for v in (self.metric(r.metrics) for r in cell.ok) if v is not None]
        if not values:
            return NOT_COMPARABLE, f"{name}: " + ("/".join(cell.failed) or "no figure")
        mean = statistics.mean(values)
        text = f"{name} {100 * mean:.1f}"
        seeds, planned = len({r.seed for r in cell.runs}), cell.planned_seeds
        if seeds < planned:  # a cell part way through its seeds: its verdict may yet move
            text += f" from {seeds} of {planned} seeds"
        perfect = min(values) == 1.0
        holds = {"solves": mean >= SOLVED, "fails": mean < FAILED, "perfect": perfect, "errs": not perfect}[self.shape]
        if self.shape == "errs" and (cell.still_learning or cell.failed):
            # an error of a model still learning is not a trained model's glitch, and a failed seed might have erred
            if holds and cell.still_learning:
                return NOT_COMPARABLE, text + " (still learning)"
            if not holds and cell.failed:
                return NOT_COMPARABLE, text + " (a seed failed)"
        if holds:
            return AGREE, text
        if self.shape in ("solves", "perfect") and (cell.still_learning or cell.failed):  # it could still get there
            return NOT_COMPARABLE, text + (" (still learning)" if cell.still_learning else " (a seed failed)")
        return DISAGREE, text


@dataclass(frozen=True)
class Finding:
    """A published result: where, in what setting, what it found; ours on our setting; the claims that judge it."""

    name: str
    source: str
    setting: str
    published: str
    ours: str
    claims: tuple[Claim, ...]


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "selective copying needs selection",
        "Gu and Dao 2023 (Mamba), Table 1",
        "2 layers, D 64; copy 16 data tokens from 4,096 positions, vocabulary 16; 400K steps",
        "S4 (time-invariant) 18.3 %; S6 without gating 97.0 %; Mamba 99.8 %",
        "8 tokens from 64 positions, vocabulary 16; the map's budget",
        (Claim("mamba", "selective_copying", "solves"), Claim("s4d", "selective_copying", "fails")),
    ),
    Finding(
        "induction heads extrapolate in Mamba, not in attention",
        "Gu and Dao 2023 (Mamba), Table 2 (figures in Table 11)",
        "2 layers, vocabulary 16; trained at 256, tested to 2^20",
        "Mamba 100 % at every length to 2^20; MHA with absolute / RoPE / xPos positions 58.6 / 83.6 / 99.6 % at 2x "
        "and 7.8 / 5.5 / 7.8 % at 64x",
        "trained at 64, tested at 2x to 16x",
        (
            Claim("mamba", "induction_heads", "solves", longest, "at 16x"),
            Claim("transformer", "induction_heads", "fails", longest, "at 16x"),
        ),
    ),
    Finding(
        "associative recall: attention at any width, gated convolutions need width",
        "Arora et al. 2023 (Zoology), Figure 2",
        "2 layers, vocabulary 8,192; lengths 64-512 (4-64 pairs), widths 64-512; best of 4 rates",
        "attention near 100 % at every width and length; Hyena, H3, RWKV near chance at width 64-128 from length "
        "512, and below attention at every width (shape read from the figure)",
        "length 64, 8 pairs, vocabulary 64, the map's two sizes",
        (Claim("transformer", "mqar", "solves"), Claim("hyena", "mqar", "fails")),
    ),
    Finding(
        "parity: recurrence generalises in length, the Transformer does not",
        "Delétang et al. 2023, Table 2",
        "trained on lengths 1-40, tested on 41-500; the best of 10 seeds",
        "RNN 100.0 %, LSTM 100.0 %, Transformer 52.0 % (chance 50 %)",
        "trained on lengths 1-32, tested at 64 and 128 (their mean); the mean of 3 seeds",
        (
            Claim("lstm", "parity", "solves", beyond, "beyond training"),
            Claim("transformer", "parity", "fails", beyond, "beyond training"),
        ),
    ),
    Finding(
        "modular counting: recurrence counts, the Transformer does not",
        "Delétang et al. 2023, Table 2 (modular arithmetic, simple)",
        "lengths 1-40, tested 41-500, best of 10 seeds",
        "LSTM 100.0 %, Transformer 24.2 % (chance 20 %)",
        "a running sum modulo 5 scored at every position, trained on lengths 1-32, tested at 64 and 128",
        (
            Claim("lstm", "sum_mod_5", "solves", beyond, "beyond training"),
            Claim("transformer", "sum_mod_5", "fails", beyond, "beyond training"),
        ),
    ),
    Finding(
        "negative eigenvalues let a linear RNN track parity",
        "Grazzi et al. 2024, Table 3",
        "lengths 3-40, tested 40-256, best of 3, scaled accuracy (0 chance, 1 perfect)",
        "parity: Mamba with eigenvalues in [0, 1] 0.000, in [-1, 1] 1.000; DeltaNet in [0, 1] 0.017, in [-1, 1] "
        "1.000; sLSTM 1.000",
        "parity, trained on lengths 1-32, tested at 64 and 128; Mamba and DeltaNet as on main (eigenvalues in "
        "(0, 1]) beside the same models with them in (-1, 1] (conf/model/mamba_negative.yaml, deltanet_negative.yaml)",
        (
            Claim("mamba", "parity", "fails", beyond, "beyond training"),
            Claim("mamba_negative", "parity", "solves", beyond, "beyond training"),
            Claim("deltanet", "parity", "fails", beyond, "beyond training"),
            Claim("deltanet_negative", "parity", "solves", beyond, "beyond training"),
        ),
    ),
    Finding(
        "a non-abelian group's word problem needs depth except in an RNN",
        "Merrill, Petty and Sabharwal 2024, Figure 3",
        "A5, A4xZ5 and Z60 word problems; the fewest layers reaching 90 % at each length up to about 20",
        "one-layer RNNs learn A5 at every length; the Transformer, S4 and Mamba need more layers as the length grows",
        "A4 (solvable and non-abelian, as their A4xZ5, which needs depth as A5 does) at length 16, 2 layers for every "
        "model: S5 separated nothing at our budget (no model past its first position)",
        (
            Claim("lstm", "a4", "solves"),
            Claim("transformer", "a4", "fails"),
            Claim("mamba", "a4", "fails"),
        ),
    ),
    Finding(
        "flip-flop: attention glitches where recurrence does not",
        "Liu et al. 2023, sections 4 and B.2",
        "trained on FFL(0.8), length 512; tested on sparse FFL(0.98) and dense FFL(0.1); a 6-layer 19M Transformer",
        "a 1-layer LSTM makes no error on 100 of 100 runs; Transformers keep a long, seed-dependent tail of sporadic "
        "errors on the sparse and dense sets (shape: the paper's figures; no single figure quoted)",
        "length 64, the sparse test set FFL(0.98) at the training length (Liu et al.'s test; the map also tests "
        "at 2x and 4x)",
        (
            Claim("lstm", "flip_flop_sparse", "perfect"),
            Claim("transformer", "flip_flop_sparse", "errs"),
        ),
    ),
    Finding(
        "fuzzy recall: the recall task where attention's lead is largest",
        "Poli et al. 2024 (MAD), section 3",
        "length 128, vocabulary 16, keys and values of 1-3 tokens; width 128; best of 3 rates x 2 weight decays",
        "no per-architecture figure found in a source we could read: the shape is the task's role in MAD",
        "length 64, keys and values of 1-3 tokens",
        (Claim("transformer", "fuzzy_recall", "solves"), Claim("mamba", "fuzzy_recall", "fails")),
    ),
)


def judged_finding(finding: Finding, found: Mapping[tuple[int, str, str], Cell]) -> tuple[str, str]:
    """(the verdict over every size the map ran, ours in words): agree where every claim holds at a size, disagree
    where a converged cell contradicts one, else not comparable, with the reason."""
    sizes = sorted({k[0] for k in found})
    verdicts, lines = [], []
    for at in sizes:
        results = [claim.judge(found.get((at, claim.model, claim.task))) for claim in finding.claims]
        marks = {v for v, _ in results}
        verdict = DISAGREE if DISAGREE in marks else NOT_COMPARABLE if NOT_COMPARABLE in marks else AGREE
        verdicts.append(verdict)
        lines.append(f"{at:,}: " + "; ".join(text for _, text in results) + f" ({verdict})")
    if not sizes:
        return NOT_COMPARABLE, "no run of the map"
    overall = DISAGREE if DISAGREE in verdicts else AGREE if AGREE in verdicts else NOT_COMPARABLE
    return overall, " · ".join(lines)
