"""How long a benchmark command took, as a table the docs and the README include (never retyped).

    python -m suite.report.duration "make bench-lra" SECONDS results/lra_cpu

writes ``results/lra_cpu/duration.md``: the command, its wall time and the machine line of the report beside it
(``machine.txt``: CPU kind, threads, precision, commit). The Makefile calls it at the end of the command it times.
One row per command: timing ``make bench-lra LRA_CPU_SEEDS=0,1`` (which adds seed 1 to seed 0's runs) adds its row
under ``make bench-lra``'s and keeps that row as it was measured; timing a command again replaces its own row.
"""

from __future__ import annotations

import argparse
from pathlib import Path

FILE = "duration.md"


def wall_time(seconds: int) -> str:
    """'1 h 52 min' / '14 min' / '40 s'."""
    if seconds < 60:
        return f"{seconds} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


HEADER = "| command | wall time (since its first start, set-up excluded) | runs measured on |\n|---|---|---|\n"


def duration_row(command: str, seconds: int, report: Path) -> str:
    """The markdown row for ``command`` taking ``seconds``, beside ``report``'s machine line."""
    if seconds < 0:
        raise ValueError(f"a wall time cannot be negative, got {seconds} s")
    machine_file = report / "machine.txt"
    if not machine_file.is_file():
        raise FileNotFoundError(f"{machine_file} is missing: run the report first (python -m suite.report ... --name)")
    machine = machine_file.read_text().strip().removeprefix("measured on: ")
    return f"| `{command}` | {wall_time(seconds)} | {machine} |\n"


def duration_table(command: str, seconds: int, report: Path, existing: str = "") -> str:
    """``existing`` (a table this module wrote, or '') with ``command``'s row replaced, or added at its end."""
    if existing and not existing.startswith(HEADER):
        raise ValueError(f"not a duration table (its header differs from {HEADER.splitlines()[0]!r})")
    rows = existing.removeprefix(HEADER).splitlines(keepends=True)
    row, mine = duration_row(command, seconds, report), f"| `{command}` |"
    at = next((i for i, line in enumerate(rows) if line.startswith(mine)), len(rows))
    return HEADER + "".join(rows[:at] + [row] + rows[at + 1 :])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", help="the command that was timed, as a user types it")
    parser.add_argument("seconds", type=int, help="its wall time in seconds")
    parser.add_argument("report", type=Path, help="the report directory (results/<name>/) to write duration.md into")
    args = parser.parse_args(argv)
    path = args.report / FILE
    existing = path.read_text() if path.is_file() else ""
    path.write_text(duration_table(args.command, args.seconds, args.report, existing))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
