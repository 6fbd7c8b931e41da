"""Where datasets live, and the errors that say how to get them.

The data directory is ``SUITE_DATA_DIR`` (default ``data/`` in the project root), laid out as
``../shared/data/MANIFEST.md`` describes. ``python -m suite.data.datadir`` (run by ``make data``)
links the shared copy in and adds Fashion-MNIST from its Debian package.
"""
from __future__ import annotations

import argparse
import os
import sys
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
    return path


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
