"""Where the project lives: the root that holds ``conf/``, ``data/``, ``results/`` and ``runs/``."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
