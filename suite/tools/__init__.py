"""Command-line benchmarks and profilers that build whole jobs (``python -m suite.tools.<name>``)."""

from __future__ import annotations

import argparse


def recurrent_sizes(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The batch, length and width options the recurrent-cell tools share (batch 32, L 256, width 128)."""
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--width", type=int, default=128)
    return parser
