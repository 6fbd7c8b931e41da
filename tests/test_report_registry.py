"""A report section is one module that registers itself: the report writes its table, figure and paragraph with no
list in build.py edited; two sections may not write one table."""

from __future__ import annotations

import pytest

from suite.report import section
from suite.report.build import build_report
from suite.runtime.record import ResultRecord


def record() -> ResultRecord:
    return ResultRecord(status="ok", task="t", dataset="d", model="m", seed=0, job="speed", speed={"x": 1.0})


def test_a_registered_section_is_written_with_its_figure_and_paragraph(tmp_path):
    drawn = []

    def draw(records, out):
        out.write_bytes(b"png")
        drawn.append(len(records))
        return out

    mine = section.Section(
        title="my probe",
        table="my_probe",
        rows=lambda records, outputs: [{"runs": str(len(records))}],
        intro="What my probe shows.",
        figures={"my_probe_figure": draw},
        order=99,
    )
    section.register(mine)
    try:
        shown = build_report([record()], tmp_path, "t")
    finally:
        del section.SECTIONS["my probe"]
    assert shown["my probe"] == [{"runs": "1"}] and drawn == [1]
    assert (tmp_path / "my_probe.md").is_file() and (tmp_path / "my_probe_figure.png").is_file()
    assert "What my probe shows." in (tmp_path / "index.html").read_text()


def test_two_sections_writing_one_table_are_refused_by_name():
    with pytest.raises(ValueError, match="'speed' and 'fast' both write speed.md"):
        section.register(section.Section(title="fast", table="speed", rows=lambda records, outputs: []))


def test_the_suites_own_and_the_tasks_sections_are_found():
    titles = [s.title for s in section.discover()]
    assert {"speed", "compression", "gradient flow", "attention speed"} <= set(titles)  # suite/report/sections/
    assert {"associative recall (mqar)", "lra at cpu scale", "language models"} <= set(titles)  # tasks/*_report.py
