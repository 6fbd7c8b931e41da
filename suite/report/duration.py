"""How long a benchmark command took, as a table the docs and the README include (never retyped).

    python -m suite.report.duration "make bench-lra" SECONDS results/lra_cpu

writes ``results/lra_cpu/duration.md``: the command, its wall time and the machine line of the report beside it
(``machine.txt``: CPU kind, threads, precision, commit). The Makefile calls it at the end of the command it times.
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


def duration_table(command: str, seconds: int, report: Path) -> str:
    """The one-row markdown table for ``command`` taking ``seconds``, beside ``report``'s machine line."""
    if seconds < 0:
        raise ValueError(f"a wall time cannot be negative, got {seconds} s")
    machine_file = report / "machine.txt"
    if not machine_file.is_file():
        raise FileNotFoundError(f"{machine_file} is missing: run the report first (python -m suite.report ... --name)")
    machine = machine_file.read_text().strip().removeprefix("measured on: ")
    return (
        "| command | wall time (since its first start, set-up excluded) | runs measured on |\n"
        "|---|---|---|\n"
        f"| `{command}` | {wall_time(seconds)} | {machine} |\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", help="the command that was timed, as a user types it")
    parser.add_argument("seconds", type=int, help="its wall time in seconds")
    parser.add_argument("report", type=Path, help="the report directory (results/<name>/) to write duration.md into")
    args = parser.parse_args(argv)
    path = args.report / FILE
    path.write_text(duration_table(args.command, args.seconds, args.report))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
