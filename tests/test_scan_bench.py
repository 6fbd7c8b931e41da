"""The scan benchmark runs both sides on the same weights and prints a table a model."""

from __future__ import annotations

from suite.tools.scan_bench import main


def test_the_scan_bench_times_ours_beside_each_peer(capsys):
    out = main(["--lengths", "32", "--batch", "1", "--width", "16", "--warmup", "0", "--repeats", "1"])
    printed = capsys.readouterr().out
    assert printed.startswith("Measured on") and "mambapy / ours" in printed and "mingru-pytorch / ours" in printed
    assert set(out["mamba, our loop"][32]) == set(out["mamba, our log-space scan"][32]) == {"ours", "mambapy"}
    assert out["mingru, our loop"][32]["ours"].median > 0
    for row in ("mingru, our loop", "mingru, our log-space scan", "mingru, the scan in one chunk"):
        assert set(out[row][32]) == {"ours", "mingru-pytorch"}


def test_the_error_table_holds_each_scan_to_float64():
    from suite.tools.scan_bench import scan_errors

    errors = scan_errors([64, 4096], 16)
    for row in errors.values():
        assert set(row) == {"ours (the loop)", "ours (chunks of 256)", "mingru-pytorch"}
        assert all(0 <= e < 1e-2 for e in row.values())
    # the reason ours chunks: one logcumsumexp over 4K positions loses more digits than chunks of 256
    assert errors[4096]["ours (chunks of 256)"] < errors[4096]["mingru-pytorch"]
    assert errors[4096]["ours (the loop)"] < errors[4096]["mingru-pytorch"]  # the recurrence itself, in float32


def test_the_chunk_table_times_every_chunk_and_names_the_one_picked(capsys):
    from suite.tools.scan_bench import chunk_table

    rows = chunk_table([16], batch=2, width=8, warmup=0, repeats=1)
    assert [r["length"] for r in rows] == ["16"] and rows[0]["picked"] == "8"  # tiny shapes: the most positions
    assert all(float(rows[0][f"chunk {c} (ms)"]) > 0 for c in (1, 2, 4, 8, 16))
    assert main(["--chunks", "--lengths", "16", "--batch", "2", "--width", "8", "--repeats", "1"]) == {}
    assert "positions a chunk" in capsys.readouterr().out
