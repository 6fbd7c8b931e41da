"""What a report build wrote, so that building it again leaves nothing of the last build behind.

A report folder can hold a previous build's tables and figures that this build no longer writes (a section whose
runs are gone: an ``lm.md`` from language models no longer in the runs), which a reader would take for this build's.
``Written`` notes every file a build creates or rewrites and lists them in ``.report_files``; the next build
removes the files of that list it did not write again. Files the report never wrote (a screenshot, notes) stay; a
folder built before the list existed loses nothing the first time.
"""

from __future__ import annotations

from pathlib import Path

MANIFEST = ".report_files"


class Written:
    """``with Written(out_dir):`` around a build: on leaving, the previous build's leftovers removed, the list
    rewritten."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.before: dict[Path, int] = {}
        self.removed: list[Path] = []

    def files(self) -> dict[Path, int]:
        """Every file under the folder (the list aside), with its modification time in ns."""
        if not self.out_dir.is_dir():
            return {}
        return {p: p.stat().st_mtime_ns for p in self.out_dir.rglob("*") if p.is_file() and p.name != MANIFEST}

    def __enter__(self) -> Written:
        self.before = self.files()
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:  # a failed build keeps what it had and what it wrote
            return
        now = self.files()
        written = {p for p, mtime in now.items() if self.before.get(p) != mtime}
        listed = self.out_dir / MANIFEST
        last = set(listed.read_text().splitlines()) if listed.is_file() else set()
        for name in sorted(last - {str(p.relative_to(self.out_dir)) for p in written}):
            path = self.out_dir / name
            if path.is_file():
                path.unlink()
                self.removed.append(path)
        if self.out_dir.is_dir():
            listed.write_text("".join(f"{p.relative_to(self.out_dir)}\n" for p in sorted(written)))
