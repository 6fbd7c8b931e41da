"""The suite's own report sections: speed points, attention speed against full attention, gradient flow, compression.

Each registers itself (``suite.report.section``); a task's own sections register from ``tasks/*_report.py``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Callable

from suite.report import formatting as fmt
from suite.report.efficiency import efficiency_rows
from suite.report.plots import is_compression, is_speed, method_label, model_order, model_size, primary
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


def compression_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row per compressed model: its test metric beside the uncompressed weights', size, weights and speed as ratios
    to them (measured in the same job)."""
    rows = []
    for r in sorted(
        (r for r in records if is_compression(r)),
        key=lambda r: (r.task, r.dataset, r.model, model_size(r), r.compression.get("checkpoint", ""), method_label(r)),
    ):
        c, (metric, value) = r.compression, primary(r) or ("", float("nan"))
        ratio = lambda key: f"{c[key]:.2f}x" if key in c else ""  # noqa: E731
        bf16 = c.get("reference_bf16_autocast_throughput_items_per_s")
        rows.append(
            {
                "task": r.task,
                "dataset": r.dataset,
                "model": r.model,
                "size": model_size(r),
                "method": method_label(r),
                "metric": metric,
                "compressed": fmt.metric(value),
                "uncompressed": fmt.metric(c["reference_metrics"].get(metric, float("nan"))),
                "delta": f"{c.get('primary_delta', float('nan')):+.3f}",
                "MB": f"{c['bytes'] / 1e6:.3g}",
                "smaller": ratio("size_ratio"),
                "Linear smaller": ratio("linear_size_ratio"),
                "weights": fmt.rate(c["weights"]),
                "non-zero": fmt.rate(c["nonzero_weights"]),
                "bits/weight": f"{c['bits_per_weight']:.1f}",
                "latency ms": f"{c['latency_ms']:.3g}",
                "latency speed-up": ratio("latency_speedup"),
                f"items/s (batch {round(c['throughput_items_per_s'] * c['batch_ms'] / 1e3)})": fmt.rate(
                    c["throughput_items_per_s"]
                ),
                "throughput speed-up": ratio("throughput_speedup"),
                "bf16 autocast (uncompressed)": f"{bf16 / c['reference_throughput_items_per_s']:.2f}x" if bf16 else "",
                "generate tok/s": fmt.rate(c["generate_tokens_per_s"]) if "generate_tokens_per_s" in c else "",
                "generate speed-up": ratio("generate_speedup"),
                "fine-tune steps": str(c.get("fine_tune_steps", "")),
                "threads": str(c.get("threads", "")),
            }
        )
    return drop_empty_columns(rows, keep=("task", "model", "method"))


def threads_of(r: ResultRecord) -> str:
    """The CPU threads a run used, from its device description ('cpu:<name> x2 threads'); '' on a GPU."""
    found = re.search(r"x(\d+) threads", r.device or "")
    return found.group(1) if found else ""


def gradient_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """Relative input-gradient norm at a few distances from the output."""
    rows = []
    for r in sorted(
        (r for r in records if "grad_norm_relative_by_distance" in r.curves), key=lambda r: (r.model, r.seq_len or 0)
    ):
        curve = r.curves["grad_norm_relative_by_distance"]
        row = {"model": r.model, "seq_len": str(r.seq_len)}
        for d in (1, 4, 16, 64, 256, len(curve) - 1):
            if d < len(curve):
                row[f"d={d}"] = f"{curve[d]:.2e}"
        rows.append(row)
    return rows


register(
    Section(
        title="speed",
        table="speed",
        order=20,
        rows=lambda records, outputs: speed_rows(records),
        intro="One row per point: real (non-pad) tokens per second, the median of timed calls (IQR beside the step "
        "time), peak memory per call, FLOPs from torch's counter, MFU against the matmul peak of the point's "
        "precision.",
    )
)
register(
    Section(
        title="attention speed",
        table="attention_speed",
        order=30,
        rows=lambda records, outputs: efficiency_rows(records),
        intro="LRA Table 2's form: training tokens/s and peak training memory of each model relative "
        "to full attention (the fused SDPA kernel) at the same length; full attention's row holds its own figures. "
        "Crossover: the shortest measured length from which on the variant trains faster than SDPA (≤: already "
        "at the shortest measured). Then its own tokens/s at the longest length over the shortest, and its "
        "memory at 16K over 4K (4x: linear).",
    )
)
register(
    Section(
        title="gradient flow",
        table="gradient_flow",
        order=60,
        printed=False,
        rows=lambda records, outputs: gradient_rows(records),
        intro="The norm of the loss gradient at distance d from the output, relative to distance 0, at initialisation.",
    )
)
register(
    Section(
        title="compression",
        table="compression",
        order=70,
        rows=lambda records, outputs: compression_rows(records),
        intro="One row per compressed model (job=compress): its test metric beside the uncompressed "
        "weights', the artefact's size, and latency (batch 1) and throughput as ratios to the uncompressed model "
        "timed interleaved in the same job.",
    )
)
