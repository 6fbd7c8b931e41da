"""An LRA of our own: the Table-1-style accuracy table (models x tasks + average), LRA's published row beside ours.

Two benchmarks make one table each, from the runs whose config names it (``benchmark``):

- ``lra`` (``experiment=lra``; ``make bench``'s recall point): every attention variant at LRA's lengths on
  ListOps, recall with the key beyond every window, byte-level BBC News topics (LRA's Text analogue) and
  pixel-by-pixel Fashion-MNIST (LRA's Image analogue): the GPU-size recipe;
- ``lra_cpu`` (``experiment=lra_cpu``, ``make bench-lra``): the same tasks and Pathfinder at lengths up to 1K, for
  every attention variant and every recurrent model, one width, depth and step budget for all.

Each cell is the test accuracy in percent: the mean over seeds with its 95 % interval (Student's t, held within 0
and 100) from three seeds on, and the seeds' range where there are two (``suite.report.significance.seed_interval``);
a run that failed shows its status. A column per task and length, the chance level (a
uniform guess) in a row of its own and, where the runs kept their test predictions, the share of each test set's
commonest class (what a model that learned only the label prior scores), the average over the columns and the
training tokens/s at 1K (the mean over the row's runs of length 1,024, and their range). Under each model that
LRA measured, its published figures (Table 1 of Tay et al. 2021, test accuracy %) stand in the columns whose task
corresponds: ListOps with ListOps, Text with IMDB bytes, Image with grey CIFAR-10 pixels, Pathfinder with
Pathfinder-32 (Recall has no counterpart). They were measured on other data, lengths, models and budgets: a
reference point, not a like-for-like comparison.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from suite.report import formatting as fmt
from suite.report.compare import machine
from suite.report.efficiency import short, variant
from suite.report.plots import family
from suite.report.run_settings import variant_labels
from suite.report.section import Section, register
from suite.report.significance import ALPHA, Difference, Outputs, SeedSpread, seed_interval
from suite.report.verdict import OutputsOf, above_prior, judged
from suite.runtime.bounds import PERCENT
from suite.runtime.record import ResultRecord, trainer_name

BENCHMARK = "lra"  # the config's `benchmark`, set by conf/experiment/lra.yaml
CPU_BENCHMARK = "lra_cpu"  # set by conf/experiment/lra_cpu.yaml (make bench-lra)
PUBLISHED_SOURCE = "LRA Table 1 (Tay et al. 2021, published)"
# Long Range Arena, Table 1 (Tay et al., ICLR 2021): test accuracy % on ListOps, Text, Retrieval,
# Image and Pathfinder, and their average; published reference figures, typed from the paper as
# issue 13 quotes them. Keyed by our variant's name: (LRA's name for it, its figures by task, average).
PUBLISHED: dict[str, tuple[str, dict[str, float], float]] = {
    "full": (
        "Transformer",
        {"ListOps": 36.4, "Text": 64.3, "Retrieval": 57.5, "Image": 42.4, "Pathfinder": 71.4},
        54.4,
    ),
    "local": (
        "Local Attention",
        {"ListOps": 15.8, "Text": 53.0, "Retrieval": 53.4, "Image": 41.5, "Pathfinder": 66.6},
        46.1,
    ),
    "longformer": (
        "Longformer",
        {"ListOps": 35.6, "Text": 62.9, "Retrieval": 56.9, "Image": 42.2, "Pathfinder": 69.7},
        53.5,
    ),
    "linformer": (
        "Linformer",
        {"ListOps": 35.7, "Text": 53.9, "Retrieval": 52.3, "Image": 38.6, "Pathfinder": 76.3},
        51.4,
    ),
    "reformer": (
        "Reformer",
        {"ListOps": 37.3, "Text": 56.1, "Retrieval": 53.4, "Image": 38.1, "Pathfinder": 68.5},
        50.7,
    ),
    "bigbird": ("BigBird", {"ListOps": 36.1, "Text": 64.0, "Retrieval": 59.3, "Image": 40.8, "Pathfinder": 74.9}, 55.0),
    "linear": (
        "Linear Transformer",
        {"ListOps": 16.1, "Text": 65.9, "Retrieval": 53.1, "Image": 42.3, "Pathfinder": 75.3},
        50.6,
    ),
    "performer": (
        "Performer",
        {"ListOps": 18.0, "Text": 65.4, "Retrieval": 53.8, "Image": 42.8, "Pathfinder": 77.1},
        51.4,
    ),
}
TASK_ORDER = ("ListOps", "Text", "Image", "Pathfinder", "Recall")
# Classes of each task as our tasks define them (chance = 1 / classes): ListOps' values 0-9, BBC News' five
# topics, Fashion-MNIST's ten, connected or not; Recall's key tokens come from the run's config (task.n_classes).
CLASSES = {"ListOps": 10, "Text": 5, "Image": 10, "Pathfinder": 2}
COMMONEST = "the test set's commonest class"


def commonest_share(runs: list[ResultRecord], outputs: Callable[[ResultRecord], Outputs | None]) -> float | None:
    """The share of the commonest label among the test labels a run of the column kept (None: none kept any)."""
    for run in runs:
        kept = outputs(run)
        if kept is not None and kept.predictions:
            counts = Counter(p["label"] for p in kept.predictions)
            return max(counts.values()) / sum(counts.values())
    return None


def average_text(values: list[float | None]) -> str:
    """The mean of a row's known cells, saying how many of its columns it covers when not all ('' if none)."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    return f"{statistics.mean(known):.1f}" + ("" if len(known) == len(values) else f" ({len(known)} of {len(values)})")


SPEED_LENGTH = 1024  # the tokens/s column: training throughput at this length
SPEED_COLUMN = "train tok/s 1K"
MACHINE_COLUMN = "timed on"  # shown only where the table's rows were timed on more than one CPU kind


def lra_task(r: ResultRecord) -> str | None:
    """The LRA task a run of ours stands for ('Recall': ours alone), None for a run of no LRA task."""
    if r.task == "long_range":
        return {"listops": "ListOps", "recall": "Recall"}.get(r.dataset)
    return {"news_topic": "Text", "image": "Image", "pathfinder": "Pathfinder"}.get(r.task)


def is_lra(r: ResultRecord, benchmark: str = BENCHMARK) -> bool:
    """A training run of the named LRA benchmark on one of its tasks."""
    return r.config.get("benchmark") == benchmark and r.job == "train" and lra_task(r) is not None


def chance(task: str, r: ResultRecord) -> float:
    """A uniform guess's accuracy % on ``task`` as run ``r`` set it up."""
    classes = CLASSES.get(task) or int((r.config.get("task") or {}).get("n_classes", 8))
    return 100 / classes


def spread_text(spread: SeedSpread | None) -> str:
    """' [52.8, 55.4]' (the 95 % interval of three seeds or more), ' (range 50.1-52.7)' (two seeds), '' (one)."""
    if spread is None:
        return ""
    if spread.method == "range":
        return f" (range {spread.low:.1f}-{spread.high:.1f})"
    return f" [{spread.low:.1f}, {spread.high:.1f}]"


def percent(records: list[ResultRecord]) -> tuple[str, float | None]:
    """A cell: test accuracy % (the mean over ok seeds; its 95 % interval from three seeds on, the seeds' range from
    two) and the mean; the failures' status beside it, or alone where no seed finished."""
    values = [100 * r.metrics["accuracy"] for r in records if r.status == "ok" and "accuracy" in r.metrics]
    failed = sorted(r.status for r in records if r.status != "ok")
    if not values:
        return "/".join(sorted(set(failed))), None
    mean = statistics.mean(values)
    text = f"{mean:.1f}" + spread_text(seed_interval(values, PERCENT))
    if failed:
        text += f" ({len(values)} of {len(records)} seeds; " + ", ".join(sorted(set(failed))) + ")"
    return text, mean


def train_speed(records: list[ResultRecord]) -> str:
    """The mean training tokens/s of the ok runs of length ``SPEED_LENGTH`` and, of two runs or more, their range
    ('32.8k (24.9k-35.2k)'); '' where none. The range is shown because these runs share the machine with whatever
    job runs beside them, so one run's rate says less than the row's spread."""
    rates = [
        r.speed["train_tokens_per_s"]
        for r in records
        if r.status == "ok" and r.seq_len == SPEED_LENGTH and "train_tokens_per_s" in r.speed
    ]
    if not rates:
        return ""
    spread = f" ({fmt.rate(min(rates))}-{fmt.rate(max(rates))})" if len(rates) > 1 else ""
    return fmt.rate(statistics.mean(rates)) + spread


def timed_runs(records: list[ResultRecord]) -> dict[str, list[ResultRecord]]:
    """A row's ok runs that carry speed figures, by the CPU kind (or GPU) each was timed on, kinds sorted."""
    by_kind: dict[str, list[ResultRecord]] = defaultdict(list)
    for r in records:
        if r.status == "ok" and r.speed:
            by_kind[machine(r)].append(r)
    return dict(sorted(by_kind.items()))


def speed_by_kind(kinds: dict[str, list[ResultRecord]]) -> str:
    """A row's tokens/s cell from its runs by CPU kind (``timed_runs``). Runs timed on several kinds are never
    averaged together (a kind's rate says nothing of another's): one figure a kind, ' / ' between them, in the order
    of the kinds."""
    return " / ".join(f for f in (train_speed(runs) for runs in kinds.values()) if f)


def row_names(records: list[ResultRecord]) -> list[str]:
    """Each run's row: its variant, and the model or trainer settings that set it apart from the variant's other
    runs."""
    names = [variant(r) for r in records]
    by_variant: dict[str, list[int]] = defaultdict(list)
    for i, name in enumerate(names):
        by_variant[name].append(i)
    for name, idx in by_variant.items():
        configs = [{k: records[i].config.get(k) for k in ("model", "trainer")} for i in idx]
        for i, label in zip(idx, variant_labels(configs)):
            names[i] = f"{name} ({label})" if label else name
    return names


Column = tuple[str, int, int | None]  # (LRA task, length, the image task's permute_seed or None)
RowKey = tuple[str, str]  # (row name, trainer)


def column(r: ResultRecord) -> Column:
    """A run's column: its task and length, and apart from the rest an image task whose pixels are permuted."""
    return lra_task(r), r.seq_len or 0, (r.config.get("task") or {}).get("permute_seed")


@dataclass
class LraTable:
    """One benchmark's runs by row and column: ``cells[row][column]`` holds the row's runs (its seeds) there."""

    columns: list[Column]
    header: dict[Column, str]
    cells: dict[RowKey, dict[Column, list[ResultRecord]]]
    attention: set[str]  # the rows of attention variants

    @classmethod
    def of(cls, records: list[ResultRecord], benchmark: str) -> LraTable | None:
        """The benchmark's training runs grouped; None where it has none."""
        runs = [r for r in records if is_lra(r, benchmark)]
        if not runs:
            return None
        columns = sorted(
            {column(r) for r in runs}, key=lambda c: (TASK_ORDER.index(c[0]), c[1], c[2] is not None, c[2] or 0)
        )
        cells: dict[RowKey, dict[Column, list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
        attention: set[str] = set()
        for r, name in zip(runs, row_names(runs)):
            cells[(name, trainer_name(r))][column(r)].append(r)
            if family(r) == "attention":
                attention.add(name)
        header = {c: f"{c[0]} {short(c[1])}" + ("" if c[2] is None else f" permuted ({c[2]})") for c in columns}
        return cls(columns, header, cells, attention)

    def in_column(self, c: Column) -> list[ResultRecord]:
        """Every row's runs in column ``c``."""
        return [r for row in self.cells.values() for r in row.get(c, [])]

    def row_keys(self) -> list[RowKey]:
        """The rows in table order: attention variants (full first), then the recurrent models, by name."""
        return sorted(self.cells, key=lambda k: (k[0] not in self.attention, k[0].split(" (")[0] != "full", k[0], k[1]))

    def row_label(self, key: RowKey) -> str:
        """A row's name, with its trainer where the table has rows of more than one."""
        return key[0] if len({t for _, t in self.cells}) == 1 else f"{key[0]} ({key[1]})"


def lra_rows(
    records: list[ResultRecord],
    benchmark: str = BENCHMARK,
    outputs: Callable[[ResultRecord], Outputs | None] = lambda record: None,
) -> list[dict[str, str]]:
    """The table of one benchmark: chance first (and the commonest class, from the runs' kept test predictions
    through ``outputs``), then a row per model (attention variants, full first, then the recurrent models), its
    published LRA row under it where LRA measured it."""
    table = LraTable.of(records, benchmark)
    if table is None:
        return []
    columns, header, cells = table.columns, table.header, table.cells
    chances = {c: chance(c[0], table.in_column(c)[0]) for c in columns}
    rows = [
        {
            "model": "chance",
            "source": "a uniform guess",
            **{header[c]: f"{chances[c]:.1f}" for c in columns},
            "average": f"{statistics.mean(chances.values()):.1f}",
            SPEED_COLUMN: "",
        }
    ]
    shares = {c: commonest_share(table.in_column(c), outputs) for c in columns}
    if any(s is not None for s in shares.values()):
        rows.append(
            {
                "model": "commonest class",
                "source": COMMONEST,
                **{header[c]: ("" if shares[c] is None else f"{100 * shares[c]:.1f}") for c in columns},
                "average": average_text([None if s is None else 100 * s for s in shares.values()]),
                SPEED_COLUMN: "",
            }
        )
    published_shown, machines = set(), set()
    for name, trainer in table.row_keys():
        row = {"model": name, "source": f"ours: {trainer}"}
        means = []
        for c in columns:
            text, mean = percent(cells[(name, trainer)].get(c, []))
            row[header[c]] = text
            means.append(mean)
        row["average"] = average_text(means)
        runs = [r for group in cells[(name, trainer)].values() for r in group]
        kinds = timed_runs(runs)
        row[SPEED_COLUMN], row[MACHINE_COLUMN] = speed_by_kind(kinds), "; ".join(kinds)
        machines.update(kinds)
        rows.append(row)
        base = name.split(" (")[0]
        if base in PUBLISHED and base not in published_shown and any(c[0] in PUBLISHED[base][1] for c in columns):
            published_shown.add(base)
            lra_name, figures, average = PUBLISHED[base]
            rows.append(
                {
                    "model": "",
                    "source": f"{PUBLISHED_SOURCE}: {lra_name}",
                    **{
                        header[c]: (f"{figures[c[0]]:.1f}" if c[0] in figures and c[2] is None else "—")
                        for c in columns
                    },
                    "average": f"{average:.1f} (its 5 tasks)",
                    SPEED_COLUMN: "",
                }
            )
    if not any(row[SPEED_COLUMN] for row in rows):
        rows = [{k: v for k, v in row.items() if k != SPEED_COLUMN} for row in rows]
    if len(machines) > 1:  # rows timed on different CPU kinds: their tokens/s say so, and compare within a kind only
        rows = [row | {MACHINE_COLUMN: row.get(MACHINE_COLUMN, "")} for row in rows]
    else:
        rows = [{k: v for k, v in row.items() if k != MACHINE_COLUMN} for row in rows]
    return rows


VERDICT_COLUMN = "best − runner-up (accuracy as a fraction, 95 % CI, p)"
PRIOR_COLUMN = "rows above the commonest class"


def lra_verdicts(
    records: list[ResultRecord], benchmark: str = BENCHMARK, outputs: OutputsOf = lambda record: None
) -> list[dict[str, str]]:
    """Which of the table's differences hold, a row per column: its best row against the runner-up
    (``suite.report.verdict.judged``) and the rows that beat the guess of the test set's commonest class
    (``above_prior``; false discovery rate 5 % over the column's rows, Benjamini-Hochberg), each paired by seed and
    test example."""
    table = LraTable.of(records, benchmark)
    if table is None:
        return []
    rows = []
    for c in table.columns:
        ok = {
            table.row_label(k): [r for r in table.cells[k].get(c, []) if r.status == "ok" and "accuracy" in r.metrics]
            for k in table.row_keys()
        }
        ok = {name: runs for name, runs in ok.items() if runs}
        means = {name: statistics.mean(r.metrics["accuracy"] for r in runs) for name, runs in ok.items()}
        winner, verdict = judged(ok, means, "accuracy", outputs)
        rows.append(
            {
                "column": table.header[c],
                "winner": winner or "none",
                VERDICT_COLUMN: verdict,
                PRIOR_COLUMN: prior_text({name: above_prior(runs, outputs) for name, runs in ok.items()}),
            }
        )
    return rows


def prior_text(differences: dict[str, Difference | None]) -> str:
    """'2 of 14: local, linformer' / '12 of 14; not: lstm, gru' / 'none of 14' / 'all 14': the rows whose accuracy
    is above the commonest-class guess's, the column's p-values adjusted for its false discovery rate."""
    if not differences:
        return ""
    if any(d is None for d in differences.values()):
        return "not tested: no per-example test outputs"
    from scipy import stats

    names = list(differences)
    adjusted = stats.false_discovery_control([differences[n].p_value for n in names], method="bh")
    above = [
        n
        for n, p in zip(names, adjusted)
        if p < ALPHA and differences[n].low > 0  # the interval above zero too
    ]
    below = [n for n in names if n not in above]
    if not above:
        return f"none of {len(names)}"
    if not below:
        return f"all {len(names)}"
    listed = f": {', '.join(above)}" if len(above) <= len(below) else f"; not: {', '.join(below)}"
    return f"{len(above)} of {len(names)}{listed}"


HELD = (
    "A row per column of the table above: its best row against the runner-up, paired by seed and test "
    "example (the difference's 95 % paired bootstrap interval and permutation p-value; a winner only "
    "where the interval excludes zero and p < 0.05, '≈' otherwise), and the rows whose accuracy is above "
    "the guess of the test set's commonest class, tested the same way with the column's p-values held to "
    "a 5 % false discovery rate (Benjamini-Hochberg)."
)
register(
    Section(
        title="lra",
        table="lra",
        order=40,
        rows=lambda records, outputs: lra_rows(records, BENCHMARK, outputs),
        intro=(
            "An LRA of our own (experiment=lra): test accuracy % of every attention variant, one model size and "
            "one step budget, a column per task and length (Text: BBC News bytes; Image: Fashion-MNIST pixels; "
            "Recall: the key at the end, beyond every window; chance 12.5%). Under a variant LRA measured, its "
            "published Table 1 figures (Tay et al. 2021: other data, lengths, models and budgets) stand where a "
            "task corresponds: a reference, not a like-for-like comparison."
        ),
    )
)
register(
    Section(
        title="lra: which differences hold",
        table="lra_verdicts",
        order=41,
        rows=lambda records, outputs: lra_verdicts(records, BENCHMARK, outputs),
        intro=HELD,
    )
)
register(
    Section(
        title="lra at cpu scale",
        table="lra_cpu",
        order=42,
        rows=lambda records, outputs: lra_rows(records, CPU_BENCHMARK, outputs),
        intro=(
            "The LRA at CPU scale (experiment=lra_cpu, make bench-lra): test accuracy % of every attention "
            "variant and every recurrent model on ListOps, BBC News bytes, Fashion-MNIST pixels and "
            "Pathfinder-32, lengths up to 1K, one width, depth and step budget for all (the mean over seeds, with "
            "its 95 % interval from three seeds on and the seeds' range from two; a failed run shows its status). "
            "Chance in the first row; training tokens/s at 1K from the training runs themselves (the mean over the "
            "row's 1K runs and their range: two jobs at a time on one thread each, so a run's rate depends on the "
            "job beside it). LRA's published Table 1 row "
            "stands under each model it measured: other data, lengths, widths and budgets."
        ),
    )
)
register(
    Section(
        title="lra at cpu scale: which differences hold",
        table="lra_cpu_verdicts",
        order=43,
        rows=lambda records, outputs: lra_verdicts(records, CPU_BENCHMARK, outputs),
        intro=HELD,
    )
)
