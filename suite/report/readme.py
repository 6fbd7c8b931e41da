"""The README's headline table, copied from a committed report and never retyped.

    python -m suite.report.readme            # rewrite the block in README.md
    python -m suite.report.readme --check    # exit 1 if the block differs from its report

The block sits between two markers; the opening one names the report directory it comes from
(``results/<name>/``). Its table is that report's "Results at a glance" (``results.md``) and its
caption the report's ``machine.txt``: the CPU kind, precision and commit of the runs. Other tables are
copied the same way from the file their opening marker names (``<!-- table from results/tuned/tuned_headline.md
-->`` ... ``<!-- table end -->``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from suite.report.split_results import split
from suite.runtime.paths import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
BLOCK = re.compile(r"(<!-- headline from (?P<report>\S+) -->\n)(?P<body>.*?)(<!-- headline end -->)", re.S)
TABLE = re.compile(r"(<!-- table from (?P<path>\S+) -->\n)(?P<body>.*?)(<!-- table end -->)", re.S)


def headline(report: Path) -> str:
    """The report's headline table and the line that says where its figures come from."""
    glance = split((report / "results.md").read_text()).get("results-at-a-glance", "")
    table = [line for line in glance.splitlines() if line.startswith("|")]
    if not table:
        raise ValueError(f"{report / 'results.md'} has no headline table ('## Results at a glance'); run make report")
    machine = (report / "machine.txt").read_text().strip()
    return "\n".join(table) + f"\n\n_From `{report.relative_to(PROJECT_ROOT)}/` ({machine})._\n"


def rewritten(text: str, root: Path = PROJECT_ROOT) -> str:
    """``text`` (the README) with its headline block as its report says."""
    match = BLOCK.search(text)
    if match is None:
        raise ValueError("README.md has no '<!-- headline from results/<name> -->' ... '<!-- headline end -->' block")
    text = text[: match.start("body")] + headline(root / match["report"]) + text[match.end("body") :]
    return copied_tables(text, root)


def copied_tables(text: str, root: Path = PROJECT_ROOT) -> str:
    """``text`` with every table block as the file its marker names (relative to ``root``)."""
    return TABLE.sub(lambda m: m[1] + (root / m["path"]).read_text() + m[4], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README's block differs from its report")
    args = parser.parse_args(argv)
    text = README.read_text()
    new = rewritten(text)
    if args.check:
        if new != text:
            print("README.md's headline table differs from its report: run python -m suite.report.readme")
            return 1
        return 0
    README.write_text(new)
    print(f"rewrote the headline of {README}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
