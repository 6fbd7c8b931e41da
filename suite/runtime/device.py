"""The device a run uses, and waiting for it: a clock read after ``sync`` means something."""

from __future__ import annotations

import torch


def resolve_device(name: str) -> torch.device:
    """'auto' picks CUDA when present, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def sync(device: torch.device) -> None:
    """Wait for queued device work, so a clock read afterwards means something."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
