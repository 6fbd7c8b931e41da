"""The tuned tables (``suite.report.tuned``): a winner only where the paired interval over seeds excludes zero."""

from __future__ import annotations

import json
import random
from pathlib import Path

from suite.report.tuned import SUMMARY_FILE, build, find_studies, main
from suite.runtime.predictions import write_predictions
from suite.runtime.record import ResultRecord
from suite.tune import driver

N = 300
SEEDS = (0, 1, 2)


def final_run(run_dir: Path, model: str, seed: int, right: float) -> None:
    """A final run on the same N test examples, ``right`` of them predicted correctly (seeded by model and seed)."""
    rng = random.Random(f"{model}-{seed}-{run_dir.name}")
    labels = [i % 2 for i in range(N)]
    rows = [{"id": i, "label": y, "prediction": y if rng.random() < right else 1 - y} for i, y in enumerate(labels)]
    write_predictions(rows, run_dir)
    accuracy = sum(r["label"] == r["prediction"] for r in rows) / N
    ResultRecord(
        status="ok",
        task="dna",
        dataset="splice",
        model=model,
        seed=seed,
        job="train",
        seq_len=60,
        metrics={"accuracy": accuracy, "val_accuracy": accuracy},
        primary_metric="accuracy",
        wall_seconds=10.0,
    ).write(run_dir)


def study(root: Path, model: str, default: float, tuned: float) -> None:
    directory = root / f"dna-{model}"
    finals = {kind: [driver.final_dir(kind, s) for s in SEEDS] for kind in ("tuned", "default")}
    for kind, right in (("default", default), ("tuned", tuned)):
        for seed, name in zip(SEEDS, finals[kind]):
            final_run(directory / name, model, seed, right)
    summary = {
        "best": {"number": 3, "value": tuned, "params": {"lr": 0.002, "batch_size": 32}},
        "n_trials": 12,
        "states": {"COMPLETE": 10, "PRUNED": 2, "FAIL": 0},
        "finals": finals,
        "trial_seconds": 600.0,
    }
    (directory / SUMMARY_FILE).write_text(json.dumps(summary))


def test_the_report_reads_what_the_driver_writes():
    assert SUMMARY_FILE == driver.SUMMARY_FILE


def test_tuned_tables_mark_only_significant_differences(tmp_path):
    study(tmp_path, "transformer", default=0.80, tuned=0.80)
    study(tmp_path, "lstm", default=0.55, tuned=0.78)
    tables = build(find_studies(tmp_path), tmp_path / "out")
    (row,) = tables["tuned headline"]
    assert row["transformer default"].startswith("**") and not row["lstm default"].startswith("**")
    assert row["default: difference (95 % CI)"].startswith("transformer − lstm: +0.2")
    assert row["tuned: difference (95 % CI)"].startswith("≈ ")  # 0.80 against 0.78 on 900 pairs: within the noise
    assert not row["transformer tuned"].startswith("**")
    bought = {r["model"]: r["tuned − default (95 % CI)"] for r in tables["what the tuning bought"]}
    assert bought["lstm"].startswith("**+0.2") and bought["lstm"].endswith("3 seeds")
    assert bought["transformer"].startswith("≈")
    (first, *_) = tables["studies"]
    assert first["trials"] == "12 (10 complete, 2 pruned, 0 failed)" and first["best setting"].startswith("lr 0.002")
    assert (tmp_path / "out" / "tuned_headline.md").read_text().count("\n") == 3


def test_main_names_what_is_missing(tmp_path, capsys):
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "experiment=tune" in capsys.readouterr().out  # what to run


def test_pretrained_runs_form_their_own_arm_and_their_cost_is_shown(tmp_path):
    from suite.report.pretrained import arms_of
    from suite.report.pretrained import build as build_pretrained
    from suite.runtime.record import find_results, read_result

    for seed in SEEDS:
        final_run(tmp_path / f"scratch-s{seed}", "lstm", seed, 0.55)
        final_run(tmp_path / f"pre-s{seed}", "lstm", seed, 0.75)
        record = read_result(tmp_path / f"pre-s{seed}" / "result.json")
        record.pretrain, record.steps = {"objective": "next_token", "steps": 200, "seconds": 30.0}, 100
        record.write(tmp_path / f"pre-s{seed}")
    (arms,) = arms_of(find_results(tmp_path))
    assert {k: len(v) for k, v in arms.finals.items()} == {"scratch": 3, "pretrained": 3}
    tables = build_pretrained([arms], tmp_path / "out")
    (gain,) = tables["what pretraining bought"]
    assert gain["pretrained − scratch (95 % CI)"].startswith("**+0.")  # 0.75 against 0.55 of 900 pairs: significant
    (cost,) = tables["pretraining"]
    assert (
        cost["pretraining steps"] == "200" and cost["fine-tuning steps"] == "100" and cost["objective"] == "next_token"
    )
