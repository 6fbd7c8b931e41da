"""The gradient-flow probe (``job=gradient_flow``): the loss gradient's norm against distance from the output."""

from __future__ import annotations

from suite.report.plots import gradient_flow
from suite.report.section import Section, register
from suite.runtime.record import ResultRecord


def gradient_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """Relative input-gradient norm at a few distances from the output."""
    rows = []
    for r in sorted(
        (r for r in records if "grad_norm_relative_by_distance" in r.curves), key=lambda r: (r.model, r.seq_len or 0)
    ):
        curve = r.curves["grad_norm_relative_by_distance"]
        row = {"model": r.model, "seq_len": str(r.seq_len)}
        for d in (1, 4, 16, 64, 256, len(curve) - 1):
            if d < len(curve):
                row[f"d={d}"] = f"{curve[d]:.2e}"
        rows.append(row)
    return rows


register(
    Section(
        title="gradient flow",
        table="gradient_flow",
        order=60,
        printed=False,
        rows=lambda records, outputs: gradient_rows(records),
        figures={"gradient_flow": gradient_flow},
        intro="The norm of the loss gradient at distance d from the output, relative to distance 0, at initialisation.",
    )
)
