"""The context-use and generation-cost jobs end to end at tiny size, and the figures drawn from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from suite.run import execute
from tests.conftest import TINY_LM, compose_config, shrink


def run(tmp_path: Path, data: Path, *overrides: str):
    return execute(shrink(compose_config("task=language_model", f"data_dir={data}", *TINY_LM, *overrides)), tmp_path)


def test_context_use_job_trains_then_scores_the_same_targets_at_each_context(tmp_path, bbc_dir):
    record = run(
        tmp_path,
        bbc_dir,
        "model=lstm",
        "job=context_use",
        "job.contexts=[2,4,8,40]",
        "job.n_targets=12",
        "job.batch_size=5",
    )
    assert record.status == "ok", record.error
    assert (
        record.steps == 3 and "perplexity" in record.metrics
    )  # trained first: the training run's test figures come along
    assert record.curves["context"] == [2, 4, 8, 16]  # 40 is beyond the trained context (16), which is always measured
    assert (
        len(record.curves["perplexity"]) == 4 and "context_saturation" in record.metrics
    )  # its rule: the unit test below
    assert record.metrics["test_perplexity_at_16"] == record.curves["perplexity"][-1]


def test_generation_cost_job_measures_time_and_state(tmp_path):
    overrides = [
        "job=generation_cost",
        "job.lengths=[4,8]",
        "job.compare_tokens=6",
        "job.prompt_tokens=2",
        "job.repeats=1",
        "job.warmup=0",
        "job.min_time_s=0",
        "job.vocab_size=40",
    ]
    records = {
        m: execute(shrink(compose_config("task=language_model", f"model={m}", *overrides)), tmp_path / m)
        for m in ("transformer", "lstm")
    }
    for record in records.values():
        assert record.status == "ok", record.error
        assert record.curves["length"] == [4, 8] and all(ms > 0 for ms in record.curves["step_ms"])
        assert (
            record.speed["generated_tokens"] == 6
        )  # the headline generates compare_tokens for the one text, with and without the state
    kv, rnn = records["transformer"].curves["state_bytes"], records["lstm"].curves["state_bytes"]
    assert (
        kv[1] / kv[0] == pytest.approx(9 / 5) and rnn[0] == rnn[1]
    )  # the cache holds t + 1 positions after the timed step


def test_lm_report_draws_the_figures(tmp_path, bbc_dir):
    from tasks.language_model_report import main

    run(tmp_path / "runs" / "ctx", bbc_dir, "model=lstm", "job=context_use", "job.contexts=[2,4]", "job.n_targets=6")
    execute(
        shrink(
            compose_config(
                "task=language_model",
                "model=lstm",
                "job=generation_cost",
                "job.lengths=[4,8]",
                "job.compare_tokens=4",
                "job.prompt_tokens=2",
                "job.repeats=1",
                "job.warmup=0",
                "job.min_time_s=0",
                "job.vocab_size=40",
            )
        ),
        tmp_path / "runs" / "cost",
    )
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "lm.md",
        "lm.csv",
        "context_use.png",
        "generation_cost.png",
    }
    assert "stops improving at" in (tmp_path / "out" / "lm.md").read_text()


def test_saturation_is_where_the_curve_comes_within_tolerance_of_its_best():
    from suite.jobs.context_use import saturation

    assert saturation([10, 25, 50, 100], [200.0, 150.0, 120.0, 119.0], 0.01) == 50
    assert (
        saturation([10, 25, 50, 100], [194.0, 187.0, 188.0, 193.0], 0.01) == 25
    )  # worse at the full window: the best counts
    assert saturation([10, 25], [100.0, 120.0], 0.01) == 10


def test_lm_runs_keep_per_document_losses_and_the_table_pairs_them(tmp_path, bbc_dir):
    """Each training run writes its test documents' summed losses (they add up to its record's loss); the table gives
    every model of a setting its bits per byte against the best one's, paired by document."""
    from suite.runtime.predictions import read_predictions
    from tasks.language_model_report import main

    records = {m: run(tmp_path / "runs" / m, bbc_dir, f"model={m}") for m in ("transformer", "lstm")}
    for m, record in records.items():
        assert record.status == "ok", record.error
        rows = read_predictions(tmp_path / "runs" / m)
        assert sum(r["nll"] for r in rows) / sum(r["tokens"] for r in rows) == pytest.approx(record.metrics["loss"])
    assert main([str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 0
    table = (tmp_path / "out" / "lm.md").read_text()
    worse = max(records, key=lambda m: records[m].metrics["bits_per_byte"])
    best = min(records, key=lambda m: records[m].metrics["bits_per_byte"])
    line = next(row for row in table.splitlines() if f"| {worse} " in row)
    assert (
        f"against {best}" in line
        and "[" in line
        and "| best |" in next(row for row in table.splitlines() if f"| {best} " in row)
    )
