"""Compressed models (``job=compress``) against their uncompressed weights, measured in the same job."""

from __future__ import annotations

from suite.report import formatting as fmt
from suite.report.plots import (
    accuracy_vs_latency,
    accuracy_vs_size,
    is_compression,
    method_label,
    model_size,
    primary,
)
from suite.report.section import Section, register
from suite.report.tables import drop_empty_columns
from suite.runtime.record import ResultRecord


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


register(
    Section(
        title="compression",
        table="compression",
        order=70,
        rows=lambda records, outputs: compression_rows(records),
        figures={
            "compression_accuracy_vs_latency": accuracy_vs_latency,
            "compression_accuracy_vs_size": accuracy_vs_size,
        },
        intro="One row per compressed model (job=compress): its test metric beside the uncompressed "
        "weights', the artefact's size, and latency (batch 1) and throughput as ratios to the uncompressed model "
        "timed interleaved in the same job.",
    )
)
