"""How two configurations differ, in words: what a refused checkpoint or a refused sweep directory names."""

from __future__ import annotations

from typing import Any


def config_differences(saved: Any, current: Any, prefix: str = "") -> list[str]:
    """The keys where two nested configurations differ, as 'key: saved -> current'."""
    if isinstance(saved, dict) and isinstance(current, dict):
        out: list[str] = []
        for key in sorted(set(saved) | set(current), key=str):
            out += config_differences(saved.get(key, "<absent>"), current.get(key, "<absent>"), f"{prefix}{key}.")
        return out
    return [] if saved == current else [f"{prefix.rstrip('.')}: {saved!r} -> {current!r}"]
