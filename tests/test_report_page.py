"""The report's page (``index.html``): rendered from its template in reading order, and opened in a real headless
browser (Debian's chromium, ``make browser``), where every figure loads and no table makes the page wider than the
window. Without chromium the browser test skips on a developer machine and fails in CI (``CI=true``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import skip_or_fail
from report_records import every_record

from suite.report.build import build_report
from suite.report.page import render_page
from suite.report.section import discover
from suite.tools.screenshot import CHROMIUM  # Debian's package (`make browser`); Playwright never downloads its own


def png(path: Path, width: int = 40, height: int = 30) -> Path:
    """A file with a PNG's header (all the page reads of it: its size)."""
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + width.to_bytes(4, "big") + height.to_bytes(4, "big")
    )
    return path


def test_the_page_shows_its_parts_in_reading_order_from_the_template(tmp_path):
    sections = {
        "results at a glance": [{"task": "t", "lstm": "**0.91**", "transformer": "0.80 †"}],
        "t": [{"model": "<script>alert(1)</script>", "accuracy": "0.810 ± 0.014"}],
        "empty": [],
        "speed": [{"model": "lstm", "train tok/s": "175k"}],
    }
    figures = [png(tmp_path / "domains.png"), png(tmp_path / "speed_vs_length.png", 800, 600)]
    page = render_page(
        "demo",
        sections,
        figures,
        "measured on: cpu",
        {"speed": "One row per point."},
        homes={"speed_vs_length": "speed"},
        footnotes={"†": "† cut short by its time cap.", "‡": "never shown"},
    )
    order = re.findall(r"<h2>([^<]+)</h2>|<img src='([^']+)'", page)
    assert [a or b for a, b in order] == ["results at a glance", "domains.png", "t", "speed", "speed_vs_length.png"]
    assert "<b>0.91</b>" in page and "&lt;script&gt;" in page and "<script>alert" not in page  # escaped, bold kept
    assert "One row per point." in page and "† cut short by its time cap." in page and "never shown" not in page
    assert 'width="800" height="600"' in page  # laid out before it loads
    assert '<td class="num">0.810 ± 0.014</td>' in page  # numbers right-aligned
    assert page.count('<div class="table-scroll">') == 3  # every table in its own scrolling box; no empty one


def browser():
    """Playwright's chromium launcher, on Debian's chromium; skip (locally) or fail (CI) where either is missing."""
    if not CHROMIUM.exists():
        skip_or_fail(f"no browser at {CHROMIUM}: run `make browser` (Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: pip install -e '.[test]'")
    return sync_playwright


PAGE_STATE = """() => ({
  viewport: window.innerWidth,
  page: document.documentElement.scrollWidth,
  images: [...document.images].map(i => ({src: i.getAttribute('src'), loaded: i.complete && i.naturalWidth > 0,
                                          right: i.getBoundingClientRect().right})),
  tables: [...document.querySelectorAll('table')].map(t => ({box: t.parentElement.className,
      right: t.parentElement.getBoundingClientRect().right, inside: t.parentElement.clientWidth,
      wide: t.scrollWidth})),
  sections: [...document.querySelectorAll('main section')].map(s => ({title: s.querySelector('h2').textContent,
      figures: [...s.querySelectorAll('img')].map(i => i.getAttribute('src'))})),
})"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    """The report of every kind of record, built once for the browser's tests (its figures are most of their time):
    its folder and what it shows."""
    out = tmp_path_factory.mktemp("built") / "report"
    return out, build_report(every_record(), out, "browser")


def test_the_report_page_in_a_real_browser(built):
    launcher = browser()
    out, shown = built
    written = sorted(p.name for p in out.glob("*.png"))
    with launcher() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            states = {}
            for width in (1280, 800):
                page = chromium.new_page(viewport={"width": width, "height": 900})
                page.goto((out / "index.html").as_uri(), wait_until="load")
                states[width] = page.evaluate(PAGE_STATE)
                page.close()
        finally:
            chromium.close()
    for width, state in states.items():
        assert state["page"] <= state["viewport"], f"the page overflows at {width} px"
        assert sorted(i["src"] for i in state["images"]) == written
        assert all(i["loaded"] for i in state["images"]), [i["src"] for i in state["images"] if not i["loaded"]]
        assert all(i["right"] <= width for i in state["images"])
        for table in state["tables"]:
            assert table["box"] == "table-scroll" and table["right"] <= width and table["inside"] <= width
    assert any(t["wide"] > t["inside"] for t in states[800]["tables"])  # a wide table scrolls in its box
    # reading order: the headline and its figures, the per-task tables, then each section in its order, its figures
    sections = states[1280]["sections"]
    titles = [s["title"] for s in sections]
    assert titles[0] == "results at a glance"
    assert {"domains.png", "accuracy_vs_length.png", "learning_curves.png"} <= set(sections[0]["figures"])
    registered = [s.title for s in discover() if shown.get(s.title)]
    assert [t for t in titles if t in registered] == registered
    assert titles.index(registered[0]) > max(titles.index(task) for task in ("long_range", "news_topic"))
    figures = {s["title"]: s["figures"] for s in sections}
    assert figures["speed"] == ["speed_vs_length.png", "memory_vs_length.png"]
    assert figures["associative recall (mqar)"] == ["mqar_vs_width.png"]


def test_a_screenshot_of_the_first_screen(built, tmp_path):
    browser()  # skip (locally) or fail (CI) without chromium and Playwright
    from matplotlib.image import imread

    from suite.tools.screenshot import main as screenshot

    assert screenshot([str(built[0] / "index.html"), str(tmp_path / "first.png"), "--height", "700"]) == 0
    assert imread(tmp_path / "first.png").shape[:2] == (700, 1280)


def test_a_screenshot_of_a_missing_page_names_the_command_that_builds_one(tmp_path):
    from suite.tools.screenshot import screenshot

    with pytest.raises(FileNotFoundError, match="python -m suite.report"):
        screenshot(tmp_path / "index.html", tmp_path / "first.png")


def test_a_tall_figure_is_saved_at_a_lower_resolution_and_a_small_one_at_the_usual(tmp_path):
    from PIL import Image

    from suite.report.drawing import DPI, MAX_PIXELS, plt, save

    for name, height in (("small", 4.0), ("tall", 150.0)):
        fig, ax = plt.subplots(figsize=(11.5, height))
        ax.plot([0, 1], [0, 1])
        width, tall = Image.open(save(fig, tmp_path / f"{name}.png")).size
        if name == "small":
            assert abs(width - 11.5 * DPI) < 0.1 * 11.5 * DPI  # "tight" trims a little
        else:
            assert MAX_PIXELS / 2 < width * tall <= MAX_PIXELS * 1.01
