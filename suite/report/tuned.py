"""``python -m suite.report.tuned RUNS --name NAME``: the tables of tuning studies (``experiment=tune``).

Each study directory holds its summary (``tune.json``, written by ``suite.tune.driver``) and its final runs: the best
trial's setting and the default setting, each with the same seeds, scored on test. Three tables
(``suite.report.arms``): the tuned headline (each model default and tuned, model against model paired in each), what
the tuning bought (tuned minus default, paired), and the studies (trials complete, pruned and failed; the best trial
and its setting; the time the trials took).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from suite.report import formatting as fmt
from suite.report.arms import Arms, gain_rows, headline_rows, outputs_of, report_main
from suite.report.tables import markdown, write_table
from suite.runtime.record import RESULT_FILE, read_result

SUMMARY_FILE = "tune.json"  # what suite.tune.driver writes into a study's directory
KINDS = ("default", "tuned")


def wall_seconds(directory: Path) -> float:
    """From the first run's start to the last one's end: each record's file time, less its wall seconds for the
    start (a study resumed after a kill counts the time it stood still too)."""
    spans = []
    for path in directory.glob(f"*/{RESULT_FILE}"):
        end = path.stat().st_mtime
        spans.append((end - (read_result(path).wall_seconds or 0.0), end))
    return max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0.0


def read_study(directory: Path) -> Arms:
    summary = json.loads((directory / SUMMARY_FILE).read_text())
    study = Arms(directory.name, summary=summary | {"wall_seconds": wall_seconds(directory)})
    for kind in KINDS:
        study.finals[kind] = []
        for name in summary["finals"][kind]:
            if (path := directory / name / RESULT_FILE).is_file():
                study.add(kind, read_result(path), path.parent)
    return study


def find_studies(*roots: Path) -> list[Arms]:
    """Every study under ``roots`` (a directory with ``tune.json``), in path order."""
    found = sorted({p.parent for root in roots for p in Path(root).rglob(SUMMARY_FILE)})
    return [read_study(d) for d in found]


def setting_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())


def study_rows(studies: list[Arms]) -> list[dict[str, str]]:
    """What each study ran: its trials' outcomes, the best trial and its setting, and the seconds it took."""
    rows = []
    for s in studies:
        summary, states, best = s.summary, s.summary["states"], s.summary["best"]
        finals = [r.wall_seconds or 0.0 for runs in s.finals.values() for r in runs]
        rows.append(
            {
                "study": s.label,
                "model": s.model,
                "trials": f"{summary['n_trials']} ({states.get('COMPLETE', 0)} complete, {states.get('PRUNED', 0)} "
                f"pruned, {states.get('FAIL', 0)} failed)",
                "best trial": str(best["number"]) + (" (the default)" if best["number"] == 0 else ""),
                "best validation": fmt.metric(best["value"]),
                "best setting": setting_text(best["params"]),
                "trials' time (summed)": fmt.seconds(summary.get("trial_seconds", 0.0)),
                "final runs' time (summed)": fmt.seconds(sum(finals)),
                "wall clock": fmt.seconds(summary["wall_seconds"]),
            }
        )
    return rows


TABLES = {"tuned headline": "tuned_headline", "what the tuning bought": "tuning_bought", "studies": "studies"}


def write_tables(tables: dict[str, list[dict[str, str]]], out_dir: Path, names: dict[str, str], report: str) -> None:
    """Each table alone (``<name>.md`` and ``.csv``, for a page to include) and all of them in ``<report>.md``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for title, rows in tables.items():
        write_table(rows, out_dir, names[title])
    (out_dir / f"{report}.md").write_text("\n".join(f"## {t}\n\n{markdown(rows)}\n" for t, rows in tables.items()))


def build(studies: list[Arms], out_dir: Path) -> dict[str, list[dict[str, str]]]:
    """Write ``tuned.md`` and each table into ``out_dir``; returns the tables by title."""
    outputs = outputs_of(studies)
    tables = {
        "tuned headline": headline_rows(studies, KINDS, outputs),
        "what the tuning bought": gain_rows(studies, KINDS, outputs),
        "studies": study_rows(studies),
    }
    write_tables(tables, out_dir, TABLES, "tuned")
    return tables


def main(argv: list[str] | None = None) -> int:
    missing = "run python -m suite.run -m experiment=tune (make bench-tuned; docs/tuning.md)"
    return report_main(argv, __doc__.splitlines()[0], "tuned", find_studies, build, missing)


if __name__ == "__main__":
    raise SystemExit(main())
