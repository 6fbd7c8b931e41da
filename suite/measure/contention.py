"""How busy the rest of the machine was while we timed: the other processes' share of the CPUs.

A speed figure on a shared machine is only as good as the quiet it was taken in: on this 2-core
VM a second busy process moved a recurrent point by up to 1.4x. Speed records carry this share,
so a figure that disagrees with another run can be checked against the load it saw.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import TracebackType

STAT = Path("/proc/stat")


def busy_cpu_seconds(stat: Path = STAT) -> float | None:
    """CPU seconds every process (and the hypervisor's steal) has used since boot; None without /proc/stat."""
    try:
        fields = stat.read_text().splitlines()[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds this process (all its threads) has used."""
    t = os.times()
    return t.user + t.system


class OthersLoad:
    """Context manager: ``share`` is the fraction of the machine's CPU time used by others inside it.

    0.0 means the other CPUs sat idle; 0.5 on a 2-core machine means one core was taken by
    someone else the whole time. None where the platform has no ``/proc/stat``.
    """

    def __init__(self, stat: Path = STAT, cpus: int | None = None) -> None:
        self.stat, self.cpus = stat, cpus or os.cpu_count() or 1
        self.share: float | None = None

    def __enter__(self) -> "OthersLoad":
        self._busy, self._own, self._wall = busy_cpu_seconds(self.stat), own_cpu_seconds(), time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        busy, wall = busy_cpu_seconds(self.stat), time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return
        others = (busy - self._busy) - (own_cpu_seconds() - self._own)
        # jiffies are coarse (10 ms): clamp the rounding at both ends
        self.share = min(1.0, max(0.0, others / (wall * self.cpus)))
