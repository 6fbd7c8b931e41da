"""Files that survive a kill: every checkpoint and record is written to a temporary file in the
same directory and moved into place with ``os.replace`` (atomic on POSIX), so a kill during a
write leaves the previous file whole, never a truncated one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch


def _replace_with(path: Path, write: Any) -> Path:
    """Call ``write(file)`` on a temporary file beside ``path``, flush it to disk, then move it to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_save(obj: Any, path: Path) -> Path:
    """``torch.save(obj, path)``, atomically."""
    return _replace_with(path, lambda file: torch.save(obj, file))


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, atomically."""
    return _replace_with(path, lambda file: file.write(text.encode("utf-8")))
