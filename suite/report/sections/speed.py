"""The speed points (``job=speed``): a row per point, its throughput, latency, memory, FLOPs and MFU."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable

from suite.report import formatting as fmt
from suite.report.plots import is_speed, memory_vs_length, model_order, model_size, speed_vs_length
from suite.report.run_settings import variant_labels
from suite.report.section import Section, register
from suite.report.tables import drop_empty_columns
from suite.runtime.record import ResultRecord


def speed_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row per speed point (task x model x length x precision), failed points included with their status.

    The task column shows only when the points span several tasks, the generation columns
    only when a point generated (a translation or summarization model).
    """
    runs = [r for r in records if is_speed(r)]
    rows = []
    order = model_order(runs)
    point = lambda r: (r.task, order(r.model), model_size(r), r.attention or "", r.precision or "", r.seq_len or 0)  # noqa: E731
    label = point_labels(runs, point)
    for r in sorted(runs, key=lambda r: (*point(r), label[id(r)])):
        s = r.speed
        get = lambda key, show=fmt.rate, scale=1.0: show(s[key] * scale) if key in s else ""  # noqa: E731
        rows.append(
            {
                "task": r.task,
                "model": r.model,
                "size": model_size(r),
                "attention": r.attention or "",
                "precision": r.precision or "fp32",
                "length": str(r.seq_len or ""),
                "batch": get("batch_size"),
                "status": r.status,
                "params": fmt.rate(r.params) if r.params else "",
                "train tok/s": get("train_tokens_per_s"),
                "infer tok/s": get("infer_tokens_per_s"),
                "train step ms (IQR)": f"{s['train_step_ms']:.3g} ({s['train_step_iqr_ms']:.2g})"
                if "train_step_ms" in s
                else "",
                "latency ms/seq": get("latency_ms", lambda v: f"{v:.3g}"),
                "peak MiB train": get("peak_mem_train_bytes", lambda v: f"{v:.3g}", 2**-20),
                "peak MiB infer": get("peak_mem_infer_bytes", lambda v: f"{v:.3g}", 2**-20),
                "GFLOP/step": get("flops_train_step", lambda v: f"{v:.3g}", 1e-9),
                "MFU": get("mfu_train", lambda v: f"{v:.1%}"),
                "peak GFLOP/s": get("machine_peak_flops", lambda v: f"{v:.0f}", 1e-9),
                "generate tok/s": get("generate_tokens_per_s"),
                "uncached tok/s": get("generate_uncached_tokens_per_s"),
                "cache speed-up": get("generate_cache_speedup", lambda v: f"{v:.2f}x"),
                "threads": threads_of(r),
                "variant": label[id(r)],
                "note": (r.error or "")[:120],
            }
        )
    generation = ("generate tok/s", "uncached tok/s", "cache speed-up")
    kept = drop_empty_columns(rows, keep=tuple(c for c in (rows[0] if rows else {}) if c not in generation))
    return kept if len({r.task for r in runs}) > 1 else [{c: v for c, v in row.items() if c != "task"} for row in kept]


def point_labels(runs: list[ResultRecord], point: Callable[[ResultRecord], tuple]) -> dict[int, str]:
    """id(run) -> the settings that set it apart from the other runs of its speed point ('' where none do).

    Runs of one point that differ in a setting the columns do not show (``model.attention.n_features``)
    would otherwise be rows no reader can tell apart.
    """
    points: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for r in runs:
        points[point(r)].append(r)
    return {
        id(r): label
        for members in points.values()
        for r, label in zip(members, variant_labels([r.config for r in members]))
    }


def threads_of(r: ResultRecord) -> str:
    """The CPU threads a run used, from its device description ('cpu:<name> x2 threads'); '' on a GPU."""
    found = re.search(r"x(\d+) threads", r.device or "")
    return found.group(1) if found else ""


register(
    Section(
        title="speed",
        table="speed",
        order=20,
        rows=lambda records, outputs: speed_rows(records),
        figures={"speed_vs_length": speed_vs_length, "memory_vs_length": memory_vs_length},
        intro="One row per point: real (non-pad) tokens per second, the median of timed calls (IQR beside the step "
        "time), peak memory per call, FLOPs from torch's counter, MFU against the matmul peak of the point's "
        "precision.",
    )
)
