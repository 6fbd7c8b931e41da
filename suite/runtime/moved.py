"""Modules that moved when ``suite/`` became packages, so records and checkpoints written before still match.

A run directory's ``result.json`` and a ``last.pt`` hold their config, with ``_target_`` paths such
as ``suite.train.Trainer``; a re-run skips a finished run, and a resume accepts a checkpoint, only
when the config is the same. ``current`` rewrites the old paths, so the move changes neither.
"""

from __future__ import annotations

from typing import Any

# suite.measure, suite.report and suite.compare are left out: those names are packages or modules again,
# so a path under them is a current one.
MOVED: dict[str, str] = {
    "suite.attention_maps": "suite.report.captured_attention",
    "suite.attention_patterns": "suite.report.attention_patterns",
    "suite.callbacks": "suite.training.callbacks",
    "suite.checkpoint": "suite.training.checkpoint",
    "suite.compose": "suite.runtime.compose",
    "suite.contention": "suite.measure.contention",
    "suite.datadir": "suite.data.datadir",
    "suite.decode": "suite.generation.search",
    "suite.decode_bench": "suite.tools.decode_bench",
    "suite.distributed": "suite.runtime.distributed",
    "suite.efficiency": "suite.report.efficiency",
    "suite.failures": "suite.runtime.failures",
    "suite.formatting": "suite.report.formatting",
    "suite.generate": "suite.generation.sampling",
    "suite.lm_report": "tasks.language_model_report",
    "suite.lra": "tasks.lra_report",
    "suite.models.model": "suite.models.classifier",
    "suite.numerics": "suite.runtime.numerics",
    "suite.op_profile": "suite.tools.op_profile",
    "suite.optim": "suite.training.optim",
    "suite.perf": "suite.tools.perf",
    "suite.plots": "suite.report.plots",
    "suite.precision_check": "suite.tools.precision_check",
    "suite.preemption": "suite.runtime.preemption",
    "suite.results": "suite.runtime.record",
    "suite.schedules": "suite.training.schedules",
    "suite.splits": "suite.data.splits",
    "suite.table_files": "suite.report.tables",
    "suite.tables": "suite.data.readers",
    "suite.text": "suite.data.tokenizers",
    "suite.tracking": "suite.runtime.tracking",
    "suite.train": "suite.training.trainer",
    "suite.variants": "suite.report.run_settings",
}
_OLDEST_FIRST = sorted(MOVED, key=len, reverse=True)  # 'suite.models.model' before any shorter prefix


def current_path(dotted: str) -> str:
    """'suite.train.Trainer' -> 'suite.training.trainer.Trainer'; any other string unchanged."""
    for old in _OLDEST_FIRST:
        if dotted == old or dotted.startswith(old + "."):
            return MOVED[old] + dotted[len(old) :]
    return dotted


def current(config: Any) -> Any:
    """``config`` (nested dicts and lists) with every moved module path in a ``_target_`` rewritten."""
    if isinstance(config, dict):
        return {k: current_path(v) if k == "_target_" and isinstance(v, str) else current(v) for k, v in config.items()}
    if isinstance(config, list):
        return [current(v) for v in config]
    return config
