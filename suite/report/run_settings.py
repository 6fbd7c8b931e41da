"""What tells runs of one model apart: the settings, other than the seed, whose values differ among them.

A report pools runs over seeds. Runs that share task, model and trainer profile but differ in
any other setting (a learning rate of a sweep, ``task.lowercase``) are different experiments:
each gets its own row, labelled with the settings that set it apart.
"""

from __future__ import annotations

import json
from typing import Any

from suite.runtime.differences import computed_part

# Settings that name a run rather than configure it; those that configure it without changing what it computes
# (``suite.runtime.differences.NOT_COMPUTED``: the capability map's plan, the logger, a training job's scan kernel)
# are left out by ``computed_part`` first, so a run is never a variant of its twin for them.
NOT_SETTINGS = (
    "seed",
    "benchmark",
    "device",
    "task.data_dir",
)
UNSET = "unset"  # a key an older record's config lacks


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config -> {'dotted.key': value as JSON text} over its leaves (an empty dict is a leaf)."""
    flat: dict[str, str] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = json.dumps(value, sort_keys=True)
    return flat


def is_setting(key: str) -> bool:
    return not any(key == k or key.startswith(k + ".") for k in NOT_SETTINGS)


def shown(key: str, flat: dict[str, str]) -> str:
    """A setting's value as a label shows it: strings without their JSON quotes, a missing key as 'unset'."""
    if key not in flat:
        return UNSET
    value = json.loads(flat[key])
    return value if isinstance(value, str) else flat[key]


def variant_labels(configs: list[dict[str, Any]]) -> list[str]:
    """For each config, 'key=value, ...' over the settings that differ among ``configs`` ('' where they all agree).

    A key that some configs lack and the others set to null is no difference (older records
    lack options added since, whose null default changes nothing).
    """
    flats = [{k: v for k, v in flatten(computed_part(c)).items() if is_setting(k)} for c in configs]
    keys = sorted({k for f in flats for k in f})
    differing = [k for k in keys if len({f.get(k, "null") for f in flats}) > 1]
    return [", ".join(f"{k}={shown(k, f)}" for k in differing) for f in flats]
