"""Every attention core's training speed and memory against full attention's at the same length (LRA Table 2's
form; the rows: ``suite.report.efficiency``)."""

from __future__ import annotations

from suite.report.efficiency import efficiency_rows
from suite.report.section import Section, register

register(
    Section(
        title="attention speed",
        table="attention_speed",
        order=30,
        rows=lambda records, outputs: efficiency_rows(records),
        intro="LRA Table 2's form: training tokens/s and peak training memory of each model relative "
        "to full attention (the fused SDPA kernel) at the same length; full attention's row holds its own figures. "
        "Crossover: the shortest measured length from which on the variant trains faster than SDPA (≤: already "
        "at the shortest measured). Then its own tokens/s at the longest length over the shortest, and its "
        "memory at 16K over 4K (4x: linear).",
    )
)
