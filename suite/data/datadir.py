"""Where datasets live, and the errors that say how to get them.

The data directory is ``SUITE_DATA_DIR`` (default ``data/`` in the project root), laid out as
``../shared/data/MANIFEST.md`` describes. ``python -m suite.data.datadir`` (run by ``make data``)
links the shared copy in and adds Fashion-MNIST from its Debian package.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from suite.runtime.paths import PROJECT_ROOT

FASHION_MNIST_SYSTEM = Path("/usr/share/datasets/fashion-mnist")


class DataError(ValueError):
    """Bad or missing data; the message names the file (and line) and what to do."""


class DatasetMissing(DataError, FileNotFoundError):
    """A dataset file is not where it should be."""


def data_root(data_dir: str | Path | None = None) -> Path:
    """The data directory: the argument, else ``$SUITE_DATA_DIR``, else ``<project>/data``; relative paths are from the
    project root."""
    path = Path(data_dir or os.environ.get("SUITE_DATA_DIR", "data"))
    return path if path.is_absolute() else PROJECT_ROOT / path


def require(data_dir: str | Path | None, *relative: str, provider: str = "make data") -> Path:
    """Path to a dataset file or folder, or a ``DatasetMissing`` naming the path and the command that provides it."""
    path = data_root(data_dir).joinpath(*relative)
    if not path.exists():
        raise DatasetMissing(f"dataset not found: {path} (run `{provider}` to provide it; the data directory is set by SUITE_DATA_DIR or data_dir=...)")
    return handed_out(path)


_reading: list[list[Path]] = []  # the open ``reading()`` blocks, each the paths handed out inside it


def handed_out(path: Path) -> Path:
    """``path``, a dataset file or folder a task is about to read, noted by every open ``reading()`` block (``require``
    notes what it returns; a task that finds its files otherwise calls this)."""
    for paths in _reading:
        paths.append(Path(path))
    return path


@contextmanager
def reading() -> Iterator[list[Path]]:
    """The dataset paths handed out (``handed_out``) while the block runs: what a task's ``setup`` read."""
    paths: list[Path] = []
    _reading.append(paths)
    try:
        yield paths
    finally:
        _reading.remove(paths)


def files_below(path: Path) -> list[Path]:
    """``path`` if a file, else every file below it (links followed), sorted."""
    if path.is_file():
        return [path]
    return sorted(Path(top) / name for top, _, names in os.walk(path, followlinks=True) for name in names)


def identity(paths: Iterable[Path]) -> dict[str, str]:
    """What a run read: ``dir``, the folder that holds every path (links resolved), and ``fingerprint``, 12 hex digits
    of a SHA-256 over each file's path below ``dir``, size and modification time; ``{}`` where it read nothing (data
    generated in memory).

    Sizes and times, not contents: a ``stat`` a file, milliseconds whatever the data's size, once a run; a file
    rewritten changes its time (and mostly its size). The report groups runs on both fields, so another copy of the
    same files (another ``dir``) is never pooled with this one, and neither is this folder after its files changed.
    """
    resolved = sorted({Path(p).resolve() for p in paths})
    if not resolved:
        return {}
    folder = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in resolved]))
    digest = hashlib.sha256()
    for file in sorted({f for p in resolved for f in files_below(p)}):
        stat = file.stat()  # a link's target
        digest.update(f"{file.relative_to(folder)}\t{stat.st_size}\t{stat.st_mtime_ns}\n".encode())
    return {"dir": str(folder), "fingerprint": digest.hexdigest()[:12]}


FASHION_MNIST_RAW = Path("image/FashionMNIST/raw")  # where torchvision's FashionMNIST looks, under the data directory


def prepare(source: Path, target: Path, fashion_mnist: Path = FASHION_MNIST_SYSTEM) -> list[str]:
    """Link each dataset folder of ``source`` (the shared copy) into ``target``; add Fashion-MNIST.

    Returns a line per action. Existing entries are kept, so it is safe to re-run.
    """
    done: list[str] = []
    target.mkdir(parents=True, exist_ok=True)
    for domain in sorted(p for p in source.iterdir() if p.is_dir()):
        for dataset in sorted(p for p in domain.iterdir()):
            link = target / domain.name / dataset.name
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(dataset.resolve())
                done.append(f"linked {link} -> {dataset.resolve()}")
    fm_raw = target / FASHION_MNIST_RAW
    if fashion_mnist.is_dir() and not fm_raw.exists():
        fm_raw.mkdir(parents=True)
        for f in sorted(fashion_mnist.glob("*-ubyte.gz")):
            (fm_raw / f.name).symlink_to(f)
        done.append(f"linked Fashion-MNIST into {fm_raw}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=PROJECT_ROOT.parent / "shared" / "data", help="the shared data copy")
    parser.add_argument("--target", type=Path, default=data_root(), help="the data directory to fill")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"no shared data at {args.source}: put the datasets there (see MANIFEST.md) or pass --source", file=sys.stderr)
        return 1
    for line in prepare(args.source, args.target):
        print(line)
    print(f"data directory ready: {args.target}")
    if not (args.target / FASHION_MNIST_RAW).exists():
        print(f"note: Fashion-MNIST missing ({FASHION_MNIST_SYSTEM}); `apt-get install -y dataset-fashion-mnist` provides it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
