"""The README stays a short tour whose figures come from a report, and every docs page is on the site."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from suite.report.readme import README, rewritten

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


def test_the_readme_headline_is_its_report_s_table_never_retyped():
    text = README.read_text()
    assert rewritten(text) == text, "README.md's headline differs from its report: python -m suite.report.readme"


def test_a_retyped_headline_is_caught(tmp_path):
    text = README.read_text()
    tampered = re.sub(r"\*\*0\.\d+\*\*", "**0.999**", text, count=1)
    assert tampered != text and rewritten(tampered) == text


def test_every_page_is_on_the_site_and_every_readme_link_exists():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = {next(iter(item.values())) for item in nav}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == listed, (
        f"pages not in mkdocs.yml's nav: {sorted(pages - listed)}; nav entries without a page: {sorted(listed - pages)}"
    )
    for target in re.findall(r"\]\((docs/[^)#]+)", README.read_text()):
        assert (ROOT / target).is_file(), target
