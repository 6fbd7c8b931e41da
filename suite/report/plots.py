"""The report's figures, each drawn from result records (nothing typed by hand).

Every function takes records and an output path, draws one PNG, and returns the path, or
None when the records hold nothing for that figure.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Callable

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

from suite.report.section import claimed  # noqa: E402
from suite.runtime.names import model_id  # noqa: E402
from suite.runtime.record import ResultRecord, trainer_name  # noqa: E402

FAMILIES = (
    "attention",
    "backbone",
    "other",
)  # the order models appear in: attention, other backbones (recurrent), none (Lead-k)


def family(r: ResultRecord) -> str:
    """What a run's model is, from its composed config (never its name): 'attention' (it has an
    attention node), 'backbone' (a backbone without attention: the recurrent baselines) or 'other'."""
    model = r.config.get("model") or {}
    if model.get("attention") is not None:
        return "attention"
    return "backbone" if model.get("backbone") is not None else "other"


def model_order(records: list[ResultRecord]) -> Callable[[str], tuple[int, str]]:
    """A sort key for model labels (a label may carry the size after the name): family, then name."""
    rank = {name: FAMILIES.index(family(r)) for r in records for name in (r.model, model_id(r.model, r.attention))}
    return lambda label: (rank.get(label.split(" ")[0], len(FAMILIES)), label)


def is_speed(r: ResultRecord) -> bool:
    """A speed point, whatever its status (a timeout or oom point is one too)."""
    return r.job == "speed"


def is_training(r: ResultRecord) -> bool:
    """A training run that finished."""
    return r.status == "ok" and r.job == "train"


def primary(r: ResultRecord) -> tuple[str, float] | None:
    """The headline test metric of a run: the task's primary metric (the record names it), else its first test
    metric."""
    tests = {k: v for k, v in r.metrics.items() if not k.startswith("val_") and k != "loss"}
    if not tests:
        return None
    key = r.primary_metric if r.primary_metric in tests else sorted(tests)[0]
    return key, tests[key]


def length_studies(records: list[ResultRecord]) -> set[tuple[str, str]]:
    """The (task, dataset) pairs trained at more than one length: their accuracy is plotted against length (runs a
    report section claims for a figure of its own aside, e.g. a task drawn against width: ``Section.claims``)."""
    lengths: dict[tuple[str, str], set[int]] = defaultdict(set)
    theirs = claimed(records)
    for r in records:
        if is_training(r) and r.seq_len and id(r) not in theirs:
            lengths[(r.task, r.dataset)].add(r.seq_len)
    return {pair for pair, seen in lengths.items() if len(seen) > 1}


def model_size(r: ResultRecord) -> str:
    """Width x depth of a run's model, from its composed config ('' when the config lacks them)."""
    model = r.config.get("model", {})
    width, depth = model.get("d_model"), model.get("backbone", {}).get("n_layers")
    return f"d{width}x{depth}" if width and depth else ""


def attention_variant(r: ResultRecord) -> str:
    return f"{r.attention} attention" if r.attention else ""


# What tells two runs of one model apart in a plot: task, width x depth, attention kernel, precision, trainer profile.
VARIANTS: tuple[Callable[[ResultRecord], str], ...] = (
    lambda r: r.task,  # a speed point of a translation model is no point of the classifier's sweep
    model_size,
    lambda r: attention_variant(r),
    lambda r: r.precision or "fp32",  # records from before the setting ran fp32
    lambda r: f"({trainer_name(r)})",
)


def series_by_model(
    records: list[ResultRecord], value: Callable[[ResultRecord], float | None]
) -> dict[str, dict[int, list[float]]]:
    """label -> seq_len -> values (over seeds).

    One series per model; a model present at several sizes, attention kernels or trainer profiles
    gets one series for each, labelled with what differs, so runs of different kinds are never averaged.
    """
    variants: dict[str, list[set[str]]] = defaultdict(lambda: [set() for _ in VARIANTS])
    for r in records:
        for seen, variant in zip(variants[r.model], VARIANTS):
            seen.add(variant(r))
    out: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        v = value(r)
        if v is not None and r.seq_len:
            parts = [variant(r) for seen, variant in zip(variants[r.model], VARIANTS) if len(seen) > 1]
            if r.attention not in (None, "full") and attention_variant(r) not in parts:
                parts.append(attention_variant(r))  # a core other than full attention is named even when alone
            out[" ".join([r.model, *parts])][r.seq_len].append(v)
    return out


MARKERS = "os^Dv<>pP*Xh"


def draw_lines(
    ax,
    series: dict[str, dict[int, list[float]]],
    logy: bool,
    order: Callable[[str], tuple[int, str]],
    legend: bool = True,
) -> None:
    """One line per series; colour and marker follow the series' place in ``order``, so panels drawn from the same
    records agree."""
    palette = plt.get_cmap(
        "tab20"
    ).colors  # the default cycle has 10 colours; a speed sweep with the attention variants has 15 series
    for i, model in enumerate(sorted(series, key=order)):
        xs = sorted(series[model])
        means = [statistics.mean(series[model][x]) for x in xs]
        errs = [statistics.stdev(series[model][x]) if len(series[model][x]) > 1 else 0 for x in xs]
        ax.errorbar(
            xs,
            means,
            yerr=errs,
            marker=MARKERS[i % len(MARKERS)],
            capsize=3,
            label=model,
            color=palette[(2 * i) % 20 + (2 * i // 20) % 2],
        )
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("sequence length")
    ax.grid(True, which="both", alpha=0.3)
    if legend:
        ax.legend(fontsize=7, framealpha=0.7)  # many series: a small, see-through box hides less of the data


def shared_legend(fig, ax) -> None:
    """One legend for every panel, right of them, where it hides no data."""
    fig.legend(*ax.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)


def missing_note(fig, records: list[ResultRecord]) -> None:
    """Name the points that produced no figure, and why, under the plot."""
    missing = sorted(f"{r.model} L={r.seq_len}: {r.status}" for r in records if r.status != "ok")
    if missing:
        fig.text(0.01, 0.01, "not measured: " + "; ".join(missing), fontsize=7, wrap=True)


def accuracy_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    """One panel per (task, dataset) trained at several lengths: its primary test metric against length."""
    studies = length_studies(records)
    runs = [r for r in records if (r.task, r.dataset) in studies and r.job == "train"]
    ok = [r for r in runs if r.status == "ok" and primary(r)]
    if not ok:
        return None
    panels = sorted({(r.task, r.dataset) for r in ok})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        shown = [r for r in ok if (r.task, r.dataset) == panel]
        metric = primary(shown[0])[0]
        draw_lines(ax, series_by_model(shown, lambda r: r.metrics.get(metric)), logy=False, order=model_order(records))
        ax.set_title(f"{panel[1]}: test {metric} vs length")
        ax.set_ylabel(f"test {metric}")
    missing_note(fig, runs)
    return save(fig, out)


def speed_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    runs = [r for r in records if is_speed(r)]
    ok = [r for r in runs if r.status == "ok"]
    if not ok:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.4))
    panels = [
        ("train_tokens_per_s", "training throughput (tokens/s)"),
        ("infer_tokens_per_s", "inference throughput (tokens/s)"),
        ("ms_per_token_train", "training time per token (ms)"),
    ]
    for ax, (key, title) in zip(axes, panels):
        draw_lines(
            ax,
            series_by_model(ok, lambda r, k=key: r.speed.get(k)),
            logy=True,
            order=model_order(records),
            legend=False,
        )
        ax.set_title(title)
    shared_legend(fig, axes[0])
    missing_note(fig, runs)
    return save(fig, out)


def memory_vs_length(records: list[ResultRecord], out: Path) -> Path | None:
    ok = [r for r in records if is_speed(r) and r.status == "ok"]
    if not ok:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, key, title in (
        (axes[0], "peak_mem_train_bytes", "peak memory, training step (MiB)"),
        (axes[1], "peak_mem_infer_bytes", "peak memory, inference (MiB)"),
    ):
        draw_lines(
            ax,
            series_by_model(ok, lambda r, k=key: r.speed.get(k, 0) / 2**20 or None),
            logy=True,
            order=model_order(records),
            legend=False,
        )
        ax.set_title(title)
    shared_legend(fig, axes[0])
    return save(fig, out)


def gradient_flow(records: list[ResultRecord], out: Path) -> Path | None:
    runs = [r for r in records if r.status == "ok" and "grad_norm_relative_by_distance" in r.curves]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    order = model_order(runs)
    for r in sorted(runs, key=lambda r: order(r.model)):
        curve = r.curves["grad_norm_relative_by_distance"]
        floor = [max(v, 1e-30) for v in curve]
        ax.plot(range(len(floor)), floor, label=f"{r.model} (L={r.seq_len})")
    ax.set_yscale("log")
    ax.set_xlabel("distance from the output (positions)")
    ax.set_ylabel("||dL/dx_t|| relative to distance 0")
    ax.set_title(
        "gradient reaching each input position, at initialisation\n(the floor at 1e-30 marks "
        "exact zeros: float32 underflow)",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return save(fig, out)


def domain_bars(records: list[ResultRecord], out: Path) -> Path | None:
    """One panel per domain (task, dataset, trainer profile), bars per model, on the domain's own scale."""
    studies = length_studies(records)  # those have their own figure
    runs = [r for r in records if is_training(r) and (r.task, r.dataset) not in studies and primary(r)]
    if not runs:
        return None
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    metric_of: dict[str, str] = {}
    for r in runs:
        key, value = primary(r)
        label = f"{r.task}: {r.dataset}\n{trainer_name(r)}"  # profiles are never averaged together
        metric_of[label] = key
        groups[label][model_id(r.model, r.attention)].append(value)  # a core other than full attention: its own bar
    labels = sorted(groups)
    order = model_order(runs)
    colours = {m: f"C{i}" for i, m in enumerate(sorted({m for g in groups.values() for m in g}, key=order))}
    fig, axes = plt.subplots(1, len(labels), figsize=(2.6 * len(labels) + 1, 3.8), squeeze=False)
    for ax, label in zip(axes[0], labels):
        models = sorted(groups[label], key=order)
        means = [statistics.mean(groups[label][m]) for m in models]
        bars = ax.bar(range(len(models)), means, color=[colours[m] for m in models])
        ax.bar_label(bars, labels=[f"{v:.3g}" for v in means], fontsize=8)
        ax.set_xticks(range(len(models)), models, fontsize=8, rotation=30)
        ax.set_title(label, fontsize=9)
        ax.set_ylabel(f"test {metric_of[label]}", fontsize=8)
        ax.margins(y=0.15)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("per-domain test results (each panel on its own scale)")
    return save(fig, out)


def is_compression(r: ResultRecord) -> bool:
    return r.status == "ok" and r.job == "compress" and bool(r.compression)


def method_label(r: ResultRecord) -> str:
    """A compressed run in a few words: the method and what sets it apart ('dynamic_int8 torch', 'magnitude_pruning
    80%', 'distillation -> lstm')."""
    c = r.compression
    detail = {
        "dynamic_int8": lambda: c.get("backend", "") + (" + embedding" if "embedding" in c.get("layers", []) else ""),
        "onnx": lambda: f"runtime {c.get('precision', '')}",
        "magnitude_pruning": lambda: (
            f"{c.get('target_sparsity', 0):.0%}" + (" gradual" if c.get("schedule") == "gradual" else "")
        ),
        "structured_pruning": lambda: " ".join(
            f"{name} -{c[key]:.0%}"
            for name, key in (("heads", "heads_removed"), ("ffn", "neurons_removed"))
            if c.get(key)
        ),
        "distillation": lambda: (
            f"-> {c.get('student', '?')} (mix {c.get('mix', '?'):g}, T {c.get('temperature', '?'):g})"
        ),
    }.get(c.get("method", ""), lambda: "")()
    return f"{c.get('method', '?')} {detail}".strip()


def frontier(records: list[ResultRecord], x_key: str, x_label: str, out: Path, scale: float = 1.0) -> Path | None:
    """Test primary metric against one cost of every compressed model, and of each uncompressed one it came from (one
    panel per task)."""
    runs = [r for r in records if is_compression(r) and primary(r)]
    if not runs:
        return None
    tasks = sorted({(r.task, r.dataset) for r in runs})
    fig, axes = plt.subplots(1, len(tasks), figsize=(11 * len(tasks), 7), squeeze=False)  # wide: one label a point
    for ax, (task, dataset) in zip(axes[0], tasks):
        mine = [r for r in runs if (r.task, r.dataset) == (task, dataset)]
        references: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
        for r in mine:
            c = r.compression
            ax.scatter(c[x_key] * scale, primary(r)[1], marker="o", color="C0" if family(r) == "attention" else "C1")
            ax.annotate(
                f"{r.model} {model_size(r)}: {method_label(r)}",
                (c[x_key] * scale, primary(r)[1]),
                fontsize=7,
                xytext=(3, 3),
                textcoords="offset points",
            )
            metric = primary(r)[0]
            references[(f"{r.model} {model_size(r)}", c["checkpoint"])].append(
                (c[f"reference_{x_key}"] * scale, c["reference_metrics"].get(metric))
            )
        for (model, _), points in references.items():
            x, y = (
                statistics.median(p[0] for p in points),
                points[0][1],
            )  # one star per set of weights: the median of its jobs' timings
            ax.scatter(x, y, marker="*", s=140, color="k")
            ax.annotate(f"{model} (uncompressed)", (x, y), fontsize=7, xytext=(3, -9), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel(x_label)
        ax.set_ylabel(f"test {primary(mine[0])[0]}")
        ax.set_title(f"{task}: {dataset}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    fig.text(
        0.01,
        0.01,
        "stars: the uncompressed weights (median over the jobs that timed them beside a compressed model, "
        "interleaved)\npoints of different jobs were timed at different moments",
        fontsize=7,
    )
    return save(fig, out)


def accuracy_vs_latency(records: list[ResultRecord], out: Path) -> Path | None:
    return frontier(records, "latency_ms", "latency at batch 1 (ms, median)", out)


def accuracy_vs_size(records: list[ResultRecord], out: Path) -> Path | None:
    return frontier(records, "bytes", "artefact size (MB)", out, scale=1e-6)


def save(fig, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(out, dpi=110, bbox_inches="tight")  # "tight": a legend placed beside the panels is kept
    plt.close(fig)
    return out


FIGURES: dict[str, Callable[[list[ResultRecord], Path], Path | None]] = {
    "accuracy_vs_length": accuracy_vs_length,
    "speed_vs_length": speed_vs_length,
    "memory_vs_length": memory_vs_length,
    "gradient_flow": gradient_flow,
    "domains": domain_bars,
    "compression_accuracy_vs_latency": accuracy_vs_latency,
    "compression_accuracy_vs_size": accuracy_vs_size,
}
