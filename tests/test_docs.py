"""The README stays a short tour whose figures come from a report, and every docs page is on the site."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from suite.report.readme import README, copied_tables, rewritten

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


def test_a_retyped_table_is_caught(tmp_path):
    (tmp_path / "t.md").write_text("| a |\n|---|\n| 0.5 |\n")
    text = "x\n<!-- table from t.md -->\n| a |\n|---|\n| 0.9 |\n<!-- table end -->\ny\n"
    assert (
        copied_tables(text, tmp_path) == "x\n<!-- table from t.md -->\n| a |\n|---|\n| 0.5 |\n<!-- table end -->\ny\n"
    )


def test_every_page_is_on_the_site_and_every_readme_link_exists():
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    listed = {next(iter(item.values())) for item in nav}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages == listed, (
        f"pages not in mkdocs.yml's nav: {sorted(pages - listed)}; nav entries without a page: {sorted(listed - pages)}"
    )
    for target in re.findall(r"\]\((docs/[^)#]+)", README.read_text()):
        assert (ROOT / target).is_file(), target


# What a measurement looks like when it is typed into a page: a speed-up or ratio (1.82x), a time or a rate with
# its unit, a score with three decimals, a named quality figure (BLEU 16.5). Configured values (lr 3e-4, 300
# steps, d_model 256, time_budget_s 300) do not look like any of these.
MEASURED = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?x(?![\w])"  # a ratio
    r"|(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:ms|µs|us|GFLOP/s|TFLOP/s|tok/s|tokens/s|items/s|MiB|GiB|MB|KB)(?![\w/])"
    r"|(?<![\w.])0\.\d{3,}(?![\w])"  # a score or a fraction, to three decimals
    r"|\b(?:BLEU|chrF|ROUGE-?L?|rougeL|perplexity|MFU)\s+(?:of\s+)?\d"
    r"|\b\d+ min \d+ s\b"
)


def typed_figures(text: str) -> list[str]:
    """The lines of ``text``, outside code and generated blocks, that hold a figure that looks measured."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = BLOCK_OF_GENERATED.sub("", text)
    text = re.sub(r"`[^`\n]+`", "", text)
    return [line.strip() for line in text.splitlines() if MEASURED.search(line)]


BLOCK_OF_GENERATED = re.compile(r"<!-- (headline|table) from .*?<!-- \1 end -->", re.S)


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_no_measured_figure_is_typed_into_a_page(page):
    """Figures live once, in generated results/ files that the pages include (``--8<--``); prose says what they
    show."""
    found = typed_figures(page.read_text())
    assert not found, f"{page.name}: {len(found)} lines with typed figures, e.g.\n" + "\n".join(found[:8])


def test_the_figure_check_sees_what_it_must():
    assert typed_figures("int8 ran 1.82x faster, 4.2 ms a call; accuracy 0.813; BLEU 16.5")
    assert not typed_figures("lr 3e-4, 300 steps, d_model 256, 8x8 digits, `1.5x` in code, p 0.1")
    assert not typed_figures("```\n1.82x\n```\n<!-- headline from r -->\n0.813\n<!-- headline end -->\n")
    assert not typed_figures("<!-- table from t.md -->\n0.813\n<!-- table end -->\n")
    assert typed_figures("<!-- table from t.md -->\n<!-- table end -->\n0.813\n")
