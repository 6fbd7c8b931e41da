"""The report-section contract: a table (and its figures) that registers itself, so adding one edits no list.

A section says which runs it reads, how it turns them into rows, the table file it writes, the paragraph that
introduces it and the figures it draws. ``python -m suite.report`` writes every registered section that has rows, in
``order``. The suite's own sections (speed, attention speed, gradient flow, compression) are the modules of
``suite/report/sections/``, one each; a task's own analysis registers from a ``*_report.py`` module beside the task
in ``tasks/`` (``discover`` imports them), so ``suite/`` names no task::

    register(Section(
        title="associative recall (mqar)", table="mqar", order=80,
        intro="...", rows=mqar_rows, figures={"mqar_vs_width": mqar_vs_width},
    ))
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from suite.report.verdict import OutputsOf
from suite.runtime.record import ResultRecord

Rows = list[dict[str, str]]
Draw = Callable[[list[ResultRecord], Path], "Path | None"]


@dataclass(frozen=True)
class Section:
    """One table of the report, with the figures that go with it.

    Args:
        title: its heading in ``index.html`` and its key in what ``build_report`` returns.
        table: the file stem it writes (``<report>/<table>.md`` and ``.csv``).
        rows: (every record, the reader of a run's kept outputs) -> its rows ([] : the section is left out).
        intro: the paragraph above it: what it shows and how to read it.
        order: its place among the sections (lower first).
        printed: ``python -m suite.report`` prints it to the terminal too.
        figures: figure name -> the drawing of ``<report>/<name>.png`` from every record (None: nothing to draw).
        claims: the runs it shows in a figure of its own, which the report's length plots leave out (e.g. a task
            drawn against width).
    """

    title: str
    table: str
    rows: Callable[[list[ResultRecord], OutputsOf], Rows]
    intro: str = ""
    order: int = 50
    printed: bool = True
    figures: Mapping[str, Draw] = field(default_factory=dict)
    claims: Callable[[ResultRecord], bool] = lambda r: False


SECTIONS: dict[str, Section] = {}
"""Every registered section by title (``register``)."""

PACKAGES = {"suite.report.sections": "", "tasks": "_report"}
"""Where sections register: package -> the ending of the module names that do (every module of the suite's own
package; the ``*_report`` modules of the ``tasks`` tree)."""


def register(section: Section) -> Section:
    """Add ``section`` (a second section of one title or table replaces it: re-importing a module is harmless)."""
    clash = next((s for s in SECTIONS.values() if s.table == section.table and s.title != section.title), None)
    if clash is not None:
        raise ValueError(f"report sections {clash.title!r} and {section.title!r} both write {section.table}.md")
    SECTIONS[section.title] = section
    return section


def discover(packages: Mapping[str, str] = PACKAGES) -> list[Section]:
    """Import every module that registers sections (at any depth of each package), then the sections in order."""
    for name, ending in packages.items():
        module = importlib.import_module(name)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{name}."):
            if not info.ispkg and info.name.rpartition(".")[2].endswith(ending):
                importlib.import_module(info.name)
    return sorted(SECTIONS.values(), key=lambda s: (s.order, s.title))


def claimed(records: list[ResultRecord]) -> set[int]:
    """id() of every run some section claims for a figure of its own."""
    sections = list(SECTIONS.values())
    return {id(r) for r in records if any(s.claims(r) for s in sections)}
