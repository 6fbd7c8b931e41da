"""The report's page, ``index.html``: its tables and figures in reading order, rendered from a Jinja2 template.

Reading order: the headline table first, then the figures of the results (``plots.FIGURES``: scores by domain,
accuracy against length, learning curves), the per-task tables, then each registered section with its own figures
(``Section.figures``). A table wider than the page scrolls inside its own box; a figure shrinks to the page's width.
The template is ``templates/report.html.j2``; values are escaped (a table cell's markdown ``**bold**`` is kept as bold).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE = "report.html.j2"
UNIT = r"\s*(?:[kMG%x]|ms|s|min)?"
NUMBER = re.compile(rf"^[-+]?\d[\d.,]*{UNIT}(?:\s*±\s*\d[\d.,]*{UNIT})?$")


@dataclass
class Figure:
    """A PNG of the report: its file name, a caption from its stem, its size in pixels (so the page lays out before it
    loads)."""

    name: str
    caption: str
    width: int | None = None
    height: int | None = None

    @classmethod
    def of(cls, path: Path) -> Figure:
        return cls(path.name, path.stem.replace("_", " "), *png_size(path))


@dataclass
class Block:
    """One part of the page: a heading, its paragraph, its table (rows) and the figures that go with it."""

    title: str
    anchor: str
    intro: str = ""
    rows: list[dict[str, str]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)


def png_size(path: Path) -> tuple[int | None, int | None]:
    """A PNG's width and height from its header (None, None for anything else)."""
    try:
        head = path.read_bytes()[:24]
    except OSError:
        return None, None
    if head[:8] != b"\x89PNG\r\n\x1a\n" or len(head) < 24:
        return None, None
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def cell(value: object) -> Markup:
    """A table cell: escaped, with markdown's **bold** kept as bold."""
    return Markup(re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", str(escape(str(value)))))


def numeric(value: object) -> bool:
    """A cell that reads as a number (right-aligned): '0.810 ± 0.014', '175k', '2.1x', '12 %'."""
    return bool(NUMBER.match(str(value).replace("**", "").rstrip(" †").strip()))


def anchor(title: str, taken: set[str]) -> str:
    """An id for a heading: 'results at a glance' -> 'results-at-a-glance' (a suffix where one is taken)."""
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
    name, k = base, 2
    while name in taken:
        name, k = f"{base}-{k}", k + 1
    taken.add(name)
    return name


def blocks(
    sections: Mapping[str, list[dict[str, str]]],
    figures: list[Path],
    intros: Mapping[str, str],
    homes: Mapping[str, str],
) -> list[Block]:
    """The page's parts in reading order: each section (in ``sections``' order) with the figures whose home it is
    (``homes``: figure stem -> section title); a figure with no home goes with the first section, the headline."""
    taken: set[str] = set()
    parts = {
        title: Block(title, anchor(title, taken), intros.get(title, ""), list(rows)) for title, rows in sections.items()
    }
    first = next(iter(parts.values()), None)
    for path in figures:
        home = parts.get(homes.get(path.stem, ""), first)
        if home is None:
            home = parts.setdefault("figures", Block("figures", anchor("figures", taken)))
            first = home
        home.figures.append(Figure.of(path))
    return [b for b in parts.values() if b.rows or b.figures]


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = cell
    env.tests["numeric"] = numeric
    return env


def render_page(
    name: str,
    sections: Mapping[str, list[dict[str, str]]],
    figures: list[Path],
    machine: str,
    intros: Mapping[str, str],
    homes: Mapping[str, str] | None = None,
    footnotes: Mapping[str, str] | None = None,
) -> str:
    """``index.html`` of a report.

    Args:
        name: the report's name (its heading and title).
        sections: heading -> rows, in reading order (the headline first); a section with no rows and no figures is
            left out.
        figures: the PNGs written, each shown under the section ``homes`` names (the headline where none does).
        machine: where the runs ran, in a line under the heading.
        intros: heading -> the paragraph above its table.
        homes: figure stem -> the heading it goes under.
        footnotes: a marker -> its note, shown under the tables where a cell holds the marker (the cut-short dagger).
    """
    parts = blocks(sections, figures, intros, homes or {})
    cells = [str(v) for b in parts for row in b.rows for v in row.values()]
    notes = [note for mark, note in (footnotes or {}).items() if any(mark in c for c in cells)]
    return environment().get_template(TEMPLATE).render(name=name, machine=machine, blocks=parts, notes=notes)
