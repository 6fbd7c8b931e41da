"""The report's compression table and its two frontier figures, from records a compress job writes."""

from suite.report.build import build_report
from suite.report.plots import accuracy_vs_latency, accuracy_vs_size, method_label
from suite.report.sections.compression import compression_rows
from suite.runtime.record import ResultRecord


def compressed(model: str, method: dict, accuracy: float, latency: float, size: float) -> ResultRecord:
    figures = {
        "bytes": size,
        "reference_bytes": 4e6,
        "size_ratio": 4e6 / size,
        "weights": 1e6,
        "nonzero_weights": 9e5,
        "bits_per_weight": 8 * size / 1e6,
        "latency_ms": latency,
        "reference_latency_ms": 2.0,
        "latency_speedup": 2.0 / latency,
        "batch_ms": 16.0,
        "throughput_items_per_s": 2000.0,
        "reference_throughput_items_per_s": 1000.0,
        "throughput_speedup": 2.0,
        "reference_bf16_autocast_throughput_items_per_s": 1300.0,
        "reference_metrics": {"accuracy": 0.81},
        "primary_delta": accuracy - 0.81,
        "checkpoint": f"runs/{model}/checkpoints/best.pt",
        "threads": 1,
    }
    attention = {"_target_": "full"} if model == "transformer" else None
    return ResultRecord(
        status="ok",
        task="sentiment",
        dataset="sst2",
        model=model,
        seed=0,
        primary_metric="accuracy",
        metrics={"accuracy": accuracy, "val_accuracy": 0.8},
        compression=method | figures,
        config={
            "job": {"_target_": "suite.jobs.compress.compress_job"},
            "model": {"attention": attention, "backbone": {}},
        },
    )


RECORDS = [
    compressed("transformer", {"method": "dynamic_int8", "backend": "torch"}, 0.80, 1.0, 1e6),
    compressed("transformer", {"method": "magnitude_pruning", "target_sparsity": 0.8}, 0.78, 2.0, 4e6),
    compressed(
        "transformer", {"method": "distillation", "student": "lstm", "mix": 0.5, "temperature": 2.0}, 0.83, 0.5, 3e6
    ),
    compressed("lstm", {"method": "structured_pruning", "heads_removed": 0.5, "neurons_removed": 0.0}, 0.7, 0.4, 2e6),
]


def test_methods_are_named_by_what_sets_them_apart():
    assert [method_label(r) for r in RECORDS] == [
        "dynamic_int8 torch",
        "magnitude_pruning 80%",
        "distillation -> lstm (mix 0.5, T 2)",
        "structured_pruning heads -50%",
    ]


def test_a_gradual_schedule_is_named_in_the_label():
    record = compressed(
        "transformer", {"method": "magnitude_pruning", "target_sparsity": 0.9, "schedule": "gradual"}, 0.8, 1.0, 1e6
    )
    assert method_label(record) == "magnitude_pruning 90% gradual"


def test_one_row_per_compressed_model_with_ratios_to_its_uncompressed_weights():
    rows = compression_rows(RECORDS)
    assert len(rows) == 4
    int8 = next(r for r in rows if r["method"] == "dynamic_int8 torch")
    assert int8["compressed"] == "0.800" and int8["uncompressed"] == "0.810" and int8["delta"] == "-0.010"
    assert (
        int8["smaller"] == "4.00x"
        and int8["throughput speed-up"] == "2.00x"
        and int8["bf16 autocast (uncompressed)"] == "1.30x"
    )
    assert int8["items/s (batch 32)"] == "2k"
    assert "generate speed-up" not in int8  # no generation timed for a classifier: the column is dropped


def test_a_generating_task_shows_its_generation_speed_up():
    record = compressed("transformer", {"method": "dynamic_int8", "backend": "torch"}, 0.80, 1.0, 1e6)
    record.compression |= {
        "generate_tokens_per_s": 15000.0,
        "reference_generate_tokens_per_s": 9000.0,
        "generate_speedup": 15000.0 / 9000.0,
    }
    row = next(
        r
        for r in compression_rows([record, *RECORDS])
        if r["method"] == "dynamic_int8 torch" and r["generate speed-up"]
    )
    assert row["generate tok/s"] == "15k" and row["generate speed-up"] == "1.67x"


def test_frontier_figures_are_drawn_and_the_report_shows_the_section(tmp_path):
    assert accuracy_vs_latency(RECORDS, tmp_path / "a.png").stat().st_size > 0
    assert accuracy_vs_size(RECORDS, tmp_path / "b.png").stat().st_size > 0
    assert accuracy_vs_latency([], tmp_path / "c.png") is None
    sections = build_report(RECORDS, tmp_path / "out", "t")
    assert len(sections["compression"]) == 4
    assert (tmp_path / "out" / "compression.md").is_file() and (
        tmp_path / "out" / "compression_accuracy_vs_size.png"
    ).is_file()
    assert "compression" in (tmp_path / "out" / "index.html").read_text()
