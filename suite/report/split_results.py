"""A report's ``results.md`` split into its sections, one file each, for a docs page to include the one it discusses.

    python -m suite.report.split_results results/quick results/precision   # a report written before the split

``results/<name>/sections/<slug>.md`` holds the text under the heading ``## <Title>`` of ``results.md``, the heading
left out: a page that included the whole file would take its headings (``## dna`` ... ``## translation``) into its
own outline. ``suite.report`` writes them with every report; the command splits an older one the same way.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

SECTIONS = "sections"


def slug(title: str) -> str:
    """'Results at a glance' -> 'results-at-a-glance'."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def split(text: str) -> dict[str, str]:
    """{slug of each ``## `` heading: the text under it, without the heading}."""
    parts = re.split(r"(?m)^## (.+)$", text)
    return {slug(title): body.strip() + "\n" for title, body in zip(parts[1::2], parts[2::2])}


def write_sections(report: Path) -> list[Path]:
    """``report/sections/<slug>.md`` for each section of ``report/results.md``; the files written."""
    results = Path(report) / "results.md"
    if not results.is_file():
        raise FileNotFoundError(f"{results}: no report here (python -m suite.report <runs> --name <name> writes one)")
    out = Path(report) / SECTIONS
    out.mkdir(exist_ok=True)
    written = []
    for name, body in split(results.read_text()).items():
        path = out / f"{name}.md"
        path.write_text(body)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path, help="report directories (results/<name>/)")
    args = parser.parse_args(argv)
    for report in args.reports:
        written = write_sections(report)
        print(f"{report}: {', '.join(p.name for p in written) or 'no sections'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
