"""The attention peers' benchmark: our cores beside the maintained packages, on the same inputs (the `peers` extra)."""

from __future__ import annotations

import pytest
import torch

from suite.attention.local import LocalAttention
from suite.tools.attention_peers import main

local_attention = pytest.importorskip("local_attention", reason="the peers extra: pip install -e '.[peers]'")


@pytest.mark.parametrize("length", [64, 100, 256])
def test_our_local_core_is_local_attention_s_exact_window(length):
    """Same keys in reach (|i - j| <= 64), the same outputs, also where the length is no multiple of the window.

    There local-attention's ``autopad`` leaves its zero padding keys in reach of the last block unless a mask is
    passed (at length 100 without one, outputs differ by 0.14), so the mask goes in: every position real."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, length, 16) for _ in range(3))
    theirs = local_attention.LocalAttention(
        window_size=64, look_backward=1, look_forward=1, exact_windowsize=True, autopad=True
    )
    torch.testing.assert_close(
        LocalAttention(window=64, n_heads=3, head_dim=16)(q, k, v),
        theirs(q, k, v, mask=torch.ones(2, length, dtype=torch.bool)),
        atol=1e-5,
        rtol=1e-5,
    )


def test_the_bench_times_each_core_beside_its_peer(capsys):
    out = main(
        ["--lengths", "128", "--batch", "1", "--heads", "2", "--head-dim", "8", "--warmup", "0", "--repeats", "1"]
    )
    printed = capsys.readouterr().out
    assert printed.startswith("Measured on")
    for core, peer in (
        ("local", "local-attention"),
        ("performer", "performer-pytorch"),
        ("reformer", "reformer-pytorch"),
    ):
        assert f"{peer} / ours" in printed and set(out[core][128]) == {"ours", peer}
        assert out[core][128]["ours"].median > 0 and out[core][128][peer].median > 0
