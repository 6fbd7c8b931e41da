"""The per-example outputs of a run's test scoring, kept beside its record: ``predictions_test.jsonl``.

One JSON object a line, in the test split's order (``id`` is the example's index in it), with what the task's
metric reads: a classifier's ``label`` and ``prediction``; a task scored at several positions of a sequence (the
capability diagnostics, MQAR) its ``correct`` and ``scored`` positions a sequence (``sequence_rows``), which is also
the unit a paired test resamples. A comparison of two runs pairs them by ``id`` after the fact
(``suite.report.significance``), without running either again. Sequence-to-sequence runs keep theirs in
``outputs_<test set>.jsonl`` (source, reference, output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the report reads these files without torch; only the writer's rows take tensors
    from torch import Tensor

PREDICTIONS_FILE = "predictions_test.jsonl"


def write_predictions(rows: list[dict[str, Any]], run_dir: Path) -> Path:
    """``rows`` (one per test example) to ``run_dir/predictions_test.jsonl``; returns the path."""
    path = Path(run_dir) / PREDICTIONS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return path


def sequence_rows(scored: Tensor, hits: Tensor, start: int, **fields: Any) -> list[dict[str, Any]]:
    """A batch's rows, one a sequence: ``scored`` (B, L) bool, ``hits`` (n,) bool, whether each scored position (in
    ``scored``'s order, n = scored.sum()) was right -> [{id (from ``start``), **fields, correct, scored}, ...]."""
    right = scored.new_zeros(scored.shape)
    right[scored] = hits
    counts = zip(right.sum(1).tolist(), scored.sum(1).tolist())
    return [{"id": start + i, **fields, "correct": c, "scored": n} for i, (c, n) in enumerate(counts)]


def read_predictions(run_dir: Path) -> list[dict[str, Any]]:
    """The rows of ``run_dir/predictions_test.jsonl``; a missing file or a malformed line is named."""
    path = Path(run_dir) / PREDICTIONS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no per-example test predictions (runs of this suite write them when they score test; "
            "older runs have none: run them again, or score their weights with job=evaluate)"
        )
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number}: not a JSON line ({err.msg})") from None
    return rows
