"""Tables from run directories: ``python -m suite.report RUN_OR_SWEEP_DIR... --name NAME``.

Reads every ``result.json`` below the given directories and writes ``results/NAME/summary.csv``
and ``results/NAME/summary.md`` (one row per task, dataset and model; mean ± std over seeds),
and prints the markdown table. Nothing in ``results/`` is typed by hand.
"""
from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

from suite.datadir import PROJECT_ROOT
from suite.results import ResultRecord, find_results

SPEED_KEYS = ("train_tokens_per_s", "infer_tokens_per_s")


def mean_std(values: list[float]) -> str:
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g}"


def summary_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row per (task, dataset, model, seq_len); metrics and speeds aggregated over seeds."""
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for r in records:
        groups[(r.task, r.dataset, r.model, r.seq_len)].append(r)
    rows = []
    for (task, dataset, model, seq_len), runs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        ok = [r for r in runs if r.status == "ok"]
        metric_names = sorted({k for r in ok for k in r.metrics if not k.startswith("val_") and k != "loss"})
        row = {
            "task": task, "dataset": dataset, "model": model, "seq_len": str(seq_len or ""),
            "runs": f"{len(ok)}/{len(runs)} ok", "params": str(ok[0].params) if ok else "",
        }
        row["test metrics"] = "; ".join(f"{m} {mean_std([r.metrics[m] for r in ok if m in r.metrics])}" for m in metric_names)
        for key in SPEED_KEYS:
            row[key] = mean_std([r.speed[key] for r in ok if key in r.speed])
        row["train s"] = mean_std([r.train_seconds for r in ok if r.train_seconds is not None])
        failed = [f"{r.status}: {r.error}" for r in runs if r.status != "ok"]
        row["failures"] = " | ".join(failed)[:200]
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "(no results)\n"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "/") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write(rows: list[dict[str, str]], out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.md").write_text(markdown(rows))
    with open(out_dir / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["task"])
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("--name", default="latest", help="writes results/NAME/")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    args = parser.parse_args(argv)
    found = find_results(*args.runs)
    if not found:
        print(f"no result.json under {', '.join(map(str, args.runs))}")
        return 1
    rows = summary_rows([r for _, r in found])
    write(rows, args.out / args.name)
    print(markdown(rows))
    print(f"wrote {args.out / args.name}/summary.md and summary.csv from {len(found)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
