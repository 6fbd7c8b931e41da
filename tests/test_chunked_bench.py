"""The chunked-form benchmark times each model's chunked form beside its recurrence, and our kernels beside fla's."""

from __future__ import annotations

import pytest

from suite.tools.chunked_bench import MIXERS, main


def test_the_chunked_bench_times_both_forms_and_each_peer(capsys):
    pytest.importorskip("fla.ops.gla.naive", reason="fla-core is in the peers extra")
    args = ["--lengths", "16", "32", "--width", "32", "--tokens", "64", "--sequential-max", "16"]
    out = main(args + ["--peer-lengths", "32", "--warmup", "0", "--repeats", "1"])
    printed = capsys.readouterr().out
    assert printed.startswith("Measured on") and "crossover:" in printed
    assert set(out["forms"]) == set(MIXERS)
    for model, by_length in out["forms"].items():
        assert {"chunked", "sequential", "chunked peak"} <= set(by_length[16]), model
        assert "sequential" not in by_length[32] and by_length[32]["chunked"].median > 0  # above --sequential-max
        assert by_length[32]["chunked peak"] > 0
    assert "not timed (> 16)" in printed
    assert {name for name in out["peers"]} == {
        "GLA (a decay a key dimension)", "Mamba-2 / simple GLA (a decay a head)", "DeltaNet", "RetNet", "mLSTM (xLSTM)",
        "RWKV-7 (diagonal plus low rank)",
    }  # fmt: skip
    assert all(set(t[32]) == {"ours", peer} for t, peer in zip(out["peers"].values(), [
        "fla naive_recurrent_gla", "fla naive_chunk_simple_gla", "fla delta_rule_recurrence", "fla naive_retention",
        "xlstm chunkwise_simple", "fla dplr_chunkwise",
    ]))  # fmt: skip
