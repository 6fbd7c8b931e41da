"""An LRA of our own: the Table-1-style accuracy table (variants x tasks + average), LRA's published row beside ours.

Our runs are those whose config says ``benchmark: lra`` (``experiment=lra``; ``make bench``'s recall point): one model
size
and one step budget for every attention variant on ListOps, recall with the key beyond every
window, byte-level BBC News topics (LRA's Text analogue) and pixel-by-pixel Fashion-MNIST (LRA's
Image analogue). Each cell is the test accuracy in percent (mean ± std over seeds), a column per
task and length. Under each variant that LRA measured, its published figures (Table 1 of Tay et
al. 2021, test accuracy %) stand in the columns whose task corresponds: ListOps with ListOps,
Text with IMDB bytes, Image with grey CIFAR-10 pixels (the row is left out where none of our
columns corresponds; Recall has no counterpart). They were measured on other data, lengths, models and budgets: a
reference point, not a like-for-like
comparison.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from suite.report import formatting as fmt
from suite.report.efficiency import short, variant
from suite.report.run_settings import variant_labels
from suite.runtime.record import ResultRecord, trainer_name

BENCHMARK = "lra"  # the config's `benchmark`, set by conf/experiment/lra.yaml
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
TASK_ORDER = ("ListOps", "Text", "Image", "Recall")


def lra_task(r: ResultRecord) -> str | None:
    """The LRA task a run of ours stands for ('Recall': ours alone), None for a run of no LRA task."""
    if r.task == "long_range":
        return {"listops": "ListOps", "recall": "Recall"}.get(r.dataset)
    return {"news_topic": "Text", "image": "Image"}.get(r.task)


def is_lra(r: ResultRecord) -> bool:
    """A training run of experiment=lra on one of its tasks."""
    return r.config.get("benchmark") == BENCHMARK and r.job == "train" and lra_task(r) is not None


def percent(records: list[ResultRecord]) -> tuple[str, float | None]:
    """A cell: test accuracy % (mean ± std over ok seeds) and the mean, or the failures' status."""
    values = [100 * r.metrics["accuracy"] for r in records if r.status == "ok" and "accuracy" in r.metrics]
    if not values:
        return "/".join(sorted({r.status for r in records})), None
    return fmt.mean_std(values, lambda v: f"{v:.1f}"), statistics.mean(values)


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


def lra_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """The table: a row per variant (ours), its published LRA row under it where LRA measured it."""
    runs = [r for r in records if is_lra(r)]
    if not runs:
        return []
    columns = sorted({(lra_task(r), r.seq_len or 0) for r in runs}, key=lambda c: (TASK_ORDER.index(c[0]), c[1]))
    header = {c: f"{c[0]} {short(c[1])}" for c in columns}
    cells: dict[tuple[str, str], dict[tuple, list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
    for r, name in zip(runs, row_names(runs)):
        cells[(name, trainer_name(r))][(lra_task(r), r.seq_len or 0)].append(r)
    order = lambda key: (key[0].split(" (")[0] != "full", key[0], key[1])  # noqa: E731 - full attention first, with its settings' rows
    rows, published_shown = [], set()
    for name, trainer in sorted(cells, key=order):
        row = {"model": name, "source": f"ours: {trainer}"}
        means = []
        for c in columns:
            text, mean = percent(cells[(name, trainer)].get(c, []))
            row[header[c]] = text
            means.append(mean)
        known = [m for m in means if m is not None]
        row["average"] = (
            ""
            if not known
            else f"{statistics.mean(known):.1f}"
            + ("" if len(known) == len(columns) else f" ({len(known)} of {len(columns)})")
        )
        rows.append(row)
        base = name.split(" (")[0]
        if base in PUBLISHED and base not in published_shown and any(c[0] in PUBLISHED[base][1] for c in columns):
            published_shown.add(base)
            lra_name, figures, average = PUBLISHED[base]
            rows.append(
                {
                    "model": "",
                    "source": f"{PUBLISHED_SOURCE}: {lra_name}",
                    **{header[c]: (f"{figures[c[0]]:.1f}" if c[0] in figures else "—") for c in columns},
                    "average": f"{average:.1f} (its 5 tasks)",
                }
            )
    return rows
