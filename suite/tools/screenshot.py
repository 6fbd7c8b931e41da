"""A picture of a report's first screen, as a reader opening ``index.html`` sees it.

    python -m suite.tools.screenshot results/quick/index.html results/issue39/report_first_screen.png

Debian's chromium (``make browser``), headless, through Playwright (the test extra); nothing is downloaded.
"""

from __future__ import annotations

import argparse
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


def screenshot(page: Path, out: Path, width: int = 1280, height: int = 900) -> Path:
    """The first ``width`` x ``height`` pixels of ``page`` once it and its figures have loaded, as a PNG at ``out``."""
    if not page.is_file():
        raise FileNotFoundError(f"no report page at {page}: build one with `python -m suite.report RUNS --name NAME`")
    if not CHROMIUM.exists():
        raise FileNotFoundError(f"no browser at {CHROMIUM}: run `make browser` (Debian's chromium)")
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            view = browser.new_page(viewport={"width": width, "height": height})
            view.goto(page.resolve().as_uri(), wait_until="load")
            view.screenshot(path=str(out))
        finally:
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("page", type=Path, help="a report's index.html")
    parser.add_argument("out", type=Path, help="the PNG to write")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args(argv)
    print(f"wrote {screenshot(args.page, args.out, args.width, args.height)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
