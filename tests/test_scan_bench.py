"""The scan benchmark runs both sides on the same weights and prints a table a model."""

from __future__ import annotations

from suite.tools.scan_bench import main


def test_the_scan_bench_times_ours_beside_each_peer(capsys):
    out = main(["--lengths", "32", "--batch", "1", "--width", "16", "--warmup", "0", "--repeats", "1"])
    printed = capsys.readouterr().out
    assert printed.startswith("Measured on") and "mambapy / ours" in printed and "mingru-pytorch / ours" in printed
    assert set(out["mamba"][32]) == {"ours", "mambapy"} and out["mingru"][32]["ours"].median > 0
