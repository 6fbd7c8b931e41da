"""How two configurations differ, in words: what a refused checkpoint or a refused sweep directory names."""

from __future__ import annotations

from typing import Any

# Settings that do not change what a run computes: two runs that differ only here are the same run (a finished one is
# skipped, not refused). ``capability_map`` is the capability map's plan (its grid, seeds and task settings): its
# driver gives each run its own settings as overrides; the report reads the plan's sizes and task order from the
# records, which a grown plan keeps. ``data_dir`` is the data root: a task that reads files names its own
# ``task.data_dir``, which counts.
NOT_COMPUTED = (
    "data_dir",
    "logger",
    "group",
    "trainer.progress",
    "trainer.log_every",
    "trainer.checkpoint_every_s",
    "capability_map",
)

# How a scan is computed, not what: Mamba's loop, pscan or log scan, minGRU's loop or log scan ('auto': by device),
# each held by the tests to the same recurrence. A trained model's figures agree to float rounding whichever ran, so
# for a training job the choice is left out of the comparison (the capability map's minGRU runs made with the log
# scan stay finished now that a CPU takes the loop); a timing job measures exactly that choice, and there it counts,
# as it does for every other job. Only these names (the models' own lists: ``suite.models.minrnn.KERNELS``,
# ``suite.models.mamba.KERNELS``; a test holds them equal): gated_conv's ``kernel`` is its convolution's width.
SCAN_KERNELS = frozenset({"auto", "loop", "log", "pscan", "mamba_ssm"})
TRAINING_JOB = "suite.jobs.train.train_job"


def without_scan_kernel(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without ``model.backbone.kernel`` where it names a scan kernel of a training job (a copy)."""
    model, job = config.get("model"), config.get("job")
    backbone = model.get("backbone") if isinstance(model, dict) else None
    if not isinstance(backbone, dict) or not isinstance(job, dict) or job.get("_target_") != TRAINING_JOB:
        return config
    kernel = backbone.get("kernel")
    if not isinstance(kernel, str) or kernel not in SCAN_KERNELS:
        return config
    backbone = {key: value for key, value in backbone.items() if key != "kernel"}
    return {**config, "model": {**model, "backbone": backbone}}


def computed_part(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` without the settings in ``NOT_COMPUTED`` (a dotted path names a nested key) and without a training
    job's scan kernel (``without_scan_kernel``)."""
    out = without_scan_kernel(dict(config))
    for path in NOT_COMPUTED:
        *parents, leaf = path.split(".")
        node = out
        for key in parents:
            if not isinstance(node.get(key), dict):
                break
            node[key] = node = dict(node[key])  # copied on the way down: the caller's config is left as it was
        else:
            node.pop(leaf, None)
    return out


def same_computation(saved: Any, current: Any) -> bool:
    """Whether two run configurations compute the same thing (equal but for ``computed_part``'s omissions)."""
    if not isinstance(saved, dict) or not isinstance(current, dict):
        return saved == current
    return computed_part(saved) == computed_part(current)


def config_differences(saved: Any, current: Any, prefix: str = "") -> list[str]:
    """The keys where two nested configurations differ, as 'key: saved -> current'."""
    if isinstance(saved, dict) and isinstance(current, dict):
        out: list[str] = []
        for key in sorted(set(saved) | set(current), key=str):
            out += config_differences(saved.get(key, "<absent>"), current.get(key, "<absent>"), f"{prefix}{key}.")
        return out
    return [] if saved == current else [f"{prefix.rstrip('.')}: {saved!r} -> {current!r}"]


def computed_differences(saved: Any, current: Any) -> list[str]:
    """``config_differences`` of two run configurations over what they compute (none: the same run)."""
    if not isinstance(saved, dict) or not isinstance(current, dict):
        return config_differences(saved, current)
    return config_differences(computed_part(saved), computed_part(current))
