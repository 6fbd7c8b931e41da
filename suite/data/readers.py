"""Reading delimited files through Hugging Face ``datasets`` (Arrow-cached) and JSON Lines, with errors that name file and line."""
from __future__ import annotations

import os
from pathlib import Path

from suite.data.datadir import DataError

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")  # local files only: never reach for the hub


def read_delimited(path: Path, columns: list[str], delimiter: str = ",", strip: bool = False) -> dict[str, list[str]]:
    """Read a headed delimited file; every value as a string, one list per column.

    The columns asked for are read as text (pandas converters): the caller parses labels and
    numbers and names the line of one that does not parse (a column inferred as integers would
    fail deep in Arrow at a later 'positive', naming no line). Raises ``DataError`` naming the file (and line, where
    it can be known) when a byte is not UTF-8, a row has the wrong number of fields or the
    header lacks a column.
    """
    import datasets

    datasets.disable_progress_bars()
    try:
        ds = datasets.load_dataset(
            "csv", data_files=str(path), split="train", delimiter=delimiter, quoting=3,
            keep_default_na=False, skipinitialspace=strip, converters={c: str for c in columns},
        )
    except Exception as err:  # datasets wraps the parser's error; surface the file with it
        cause = err.__cause__ or err
        if isinstance(cause, UnicodeDecodeError) or "codec can't decode" in str(err):
            raise DataError(not_utf8(path) or f"{path}: not UTF-8: {cause}") from err
        raise DataError(f"{path}: could not read delimited file: {cause}".strip()) from err
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataError(f"{path}:1: header {ds.column_names} lacks column(s) {missing}")
    # The Arrow columns whole: indexing ``ds[c]`` formats one row at a time (100x slower on SST-2's 67k rows).
    out = {c: [str(v) for v in ds.data.column(c).to_pylist()] for c in columns}
    if strip:
        out = {c: [v.strip() for v in values] for c, values in out.items()}
    return out


def not_utf8(path: Path) -> str | None:
    """'<path>:<line>: byte 0x.. at column c is not UTF-8' for the first such byte, or None if the file decodes."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as err:
                return f"{path}:{number}: byte 0x{line[err.start]:02x} at column {err.start + 1} is not UTF-8 ({err.reason})"
    return None


def parse_labels(path: Path, values: list[str], allowed: dict[str, int], header_lines: int = 1) -> list[int]:
    """Map label strings to ids; an unknown label is a ``DataError`` naming file and line."""
    ids = []
    for row, value in enumerate(values):
        if value not in allowed:
            raise DataError(f"{path}:{row + 1 + header_lines}: label {value!r} is not one of {sorted(allowed)}")
        ids.append(allowed[value])
    return ids


def read_jsonl(path: Path, fields: list[str]) -> list[dict]:
    """Read a JSON Lines file, one object per line, each with at least ``fields``.

    Read line by line with ``json`` (not ``datasets``), so a bad line is a ``DataError`` naming
    the file and line number.
    """
    import json

    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{number}: not a JSON object: {err}") from err
            missing = [k for k in fields if not isinstance(row, dict) or k not in row]
            if missing:
                raise DataError(f"{path}:{number}: lacks field(s) {missing}")
            rows.append(row)
    return rows
