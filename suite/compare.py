"""``python -m suite.compare A B``: the documented command for ``suite.report.compare`` (kept at the top for it)."""

from suite.report.compare import main

if __name__ == "__main__":
    raise SystemExit(main())
