"""Ours beside a maintained package's implementation of the same thing: timed interleaved, one table a pair."""

from __future__ import annotations

from typing import Callable, Iterable

import torch

from suite.measure.timing import Timing, time_calls
from suite.tools import titled

Pair = dict[str, Callable[[], None]]  # "ours" and the peer's name -> one timed call


def rows(times: dict[int, dict[str, Timing]], peer: str) -> list[dict[str, str]]:
    """A row a length: both medians (IQR) and the peer's time over ours (above 1: ours is faster)."""
    return [
        {
            "length": str(length),
            "ours (ms, IQR)": f"{t['ours'].median * 1e3:.1f} ({t['ours'].spread * 1e3:.1f})",
            f"{peer} (ms, IQR)": f"{t[peer].median * 1e3:.1f} ({t[peer].spread * 1e3:.1f})",
            f"{peer} / ours": f"{t[peer].median / t['ours'].median:.2f}x",
        }
        for length, t in times.items()
    ]


def peer_tables(
    pairs: Iterable[tuple[str, Callable[[int], Pair], str]],
    lengths: list[int],
    device: torch.device,
    warmup: int,
    repeats: int,
    what: str,
    extra: str,
) -> dict[str, dict[int, dict[str, Timing]]]:
    """Time each (name, pair at a length, peer) at every length and print its table; a pair whose package is missing
    is named, with the extra that installs it, and left out."""
    out: dict[str, dict[int, dict[str, Timing]]] = {}
    for name, pair, peer in pairs:
        try:
            out[name] = {n: time_calls(pair(n), device, warmup, repeats) for n in lengths}
        except ImportError as err:
            print(f"\n**{name}**: not measured, {err} (pip install -e '.[{extra}]')")
            continue
        print(titled(f"{name}: {what}", rows(out[name], peer)))
    return out
