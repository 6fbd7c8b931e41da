"""The report pools only runs of one setting on the same data, counts a seed once, shows two seeds' range and three's
bounded interval, and says what stopped a run (suite.report.build)."""

from __future__ import annotations

import shutil

from suite.report.build import build_report, detail_tables, experiments
from suite.run import execute
from suite.runtime.record import find_results
from tests.conftest import compose_config, shrink
from tests.test_what_ran import record, write_sst2


def test_the_detail_table_shows_a_range_for_two_seeds_and_a_bounded_interval_for_three():
    two = detail_tables(experiments([record(0.4, 0), record(1.0, 1)]))["sentiment"][0]
    assert two["over seeds"] == "accuracy range [0.400, 1.00] (2 seeds)"
    three = detail_tables(experiments([record(1.0, 0), record(1.0, 1), record(0.4, 2)]))["sentiment"][0]
    assert three["over seeds"] == "accuracy 95 % CI [0.000, 1.00]"  # Student's t alone: [-0.061, 1.66]


def test_a_duplicate_seed_is_flagged_and_counted_once():
    runs = [record(0.8, 0), record(0.8, 0), record(0.6, 1)]  # seed 0's run directory copied
    (e,) = experiments(runs)
    assert [r.seed for r in e.runs] == [0, 1] and e.repeated == {0: 2}
    assert e.values("accuracy") == [0.8, 0.6]
    (row,) = detail_tables([e])["sentiment"]
    assert row["runs"] == "2/2 ok; seed 0 ran 2 times, counted once"
    assert row["accuracy"] == "0.700 ± 0.14"  # the mean of two seeds, not of three runs


def test_an_ok_run_of_a_seed_counts_over_a_failed_one():
    failed = record(0.0, 0)
    failed.status, failed.metrics = "failed", {}
    (e,) = experiments([failed, record(0.8, 0)])
    assert [r.status for r in e.runs] == ["ok"] and e.repeated == {0: 2}


def test_runs_on_different_data_are_never_pooled_and_each_row_names_its_folder():
    mine = {"dir": "/home/me/data/sentiment/sst2", "fingerprint": "bbbbbbbbbbbb"}
    changed = {"dir": "/data/sentiment/sst2", "fingerprint": "cccccccccccc"}
    exps = experiments([record(0.8), record(0.5, data=mine), record(0.7, data=changed), record(0.6, data={})])
    assert sorted(e.variant for e in exps) == [
        "data /data/sentiment/sst2 (files aaaaaaaaaaaa)",
        "data /data/sentiment/sst2 (files cccccccccccc)",
        "data /home/me/data/sentiment/sst2",
        "data not recorded",
    ]
    assert [e.variant for e in experiments([record(0.8), record(0.7, seed=1)])] == [""]  # one data: no label


def test_seeds_cut_by_the_time_cap_pool_with_the_others_and_the_row_says_what_stopped_them():
    (e,) = experiments([record(0.8, 0), record(0.6, 1, steps=20, stop_reason="time_budget")])
    (row,) = detail_tables([e])["sentiment"]
    assert row["trainer"] == "quick (30 steps)" and row["stopped by"] == "time cap 900 s: 1 of 2 runs, 20 steps"


def test_two_sentiment_runs_on_different_data_dirs_land_in_two_rows(tmp_path):
    for name, seed in (("a", 0), ("b", 1)):
        write_sst2(tmp_path / name / "sentiment" / "sst2", seed)
    for name, seed in (("a", 0), ("a", 1), ("b", 0)):
        cfg = shrink(compose_config("task=sentiment", "model=lstm", f"data_dir={tmp_path / name}", f"seed={seed}"))
        assert execute(cfg, tmp_path / "runs" / f"{name}{seed}").status == "ok"
    found = find_results(tmp_path / "runs")
    rows = build_report([r for _, r in found], tmp_path / "report", "mine")["sentiment"]
    assert sorted((row["variant"], row["runs"]) for row in rows) == [
        (f"data {(tmp_path / 'a' / 'sentiment' / 'sst2').resolve()}", "2/2 ok"),
        (f"data {(tmp_path / 'b' / 'sentiment' / 'sst2').resolve()}", "1/1 ok"),
    ]
    shutil.copytree(tmp_path / "runs" / "b0", tmp_path / "runs" / "b0 copy")  # the same run twice
    rows = build_report([r for _, r in find_results(tmp_path / "runs")], tmp_path / "report", "mine")["sentiment"]
    assert sorted(row["runs"] for row in rows) == ["1/1 ok; seed 0 ran 2 times, counted once", "2/2 ok"]


def test_a_rebuilt_report_keeps_nothing_of_the_last_build_but_files_it_never_wrote(tmp_path):
    from report_records import mqar_records, training_records

    from suite.report.outputs import MANIFEST

    out = tmp_path / "report"
    build_report(training_records() + mqar_records(), out, "r")
    first = {p.name for p in out.glob("*.md")}
    (out / "first_screen.png").write_bytes(b"a screenshot: not the report's")
    build_report(training_records(), out, "r")  # no MQAR records this time
    second = {p.name for p in out.glob("*.md")}
    assert second < first and "mqar.md" in first - second  # the last build's tables are gone
    assert not (out / "mqar_vs_width.png").exists()  # and its figures
    assert (out / "first_screen.png").is_file() and (out / "results.md").is_file()
    assert "results.md" in (out / MANIFEST).read_text().splitlines()
