"""A table as files: ``name.md`` for people and ``name.csv`` for programs."""

from __future__ import annotations

import csv
from pathlib import Path


def markdown(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "(no results)\n"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "/") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_table(rows: list[dict[str, object]], out_dir: Path, name: str, md: str | None = None) -> None:
    """``name.csv`` from ``rows`` and ``name.md`` (``md`` when given, else ``rows`` as markdown)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(md if md is not None else markdown(rows))
    with open(out_dir / f"{name}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["task"])
        writer.writeheader()
        writer.writerows(rows)


def drop_empty_columns(rows: list[dict[str, str]], keep: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """The rows without the columns that are empty in every row (``keep``: columns kept even when empty)."""
    filled = [c for c in (rows[0] if rows else {}) if c in keep or any(r[c] for r in rows)]
    return [{c: r[c] for c in filled} for r in rows]
