"""The report: ``python -m suite.report RUN_OR_SWEEP_DIR... --name NAME`` (``make report``).

Reads every ``result.json`` below the given directories and writes ``results/NAME/``:
one CSV and one markdown table per benchmark (training results per domain, mean ± std over
seeds; speed points; gradient flow), the PNG figures of ``suite.plots``, and ``index.html``
showing them all. It prints the training table. Nothing in ``results/`` is typed by hand.
"""
from __future__ import annotations

import argparse
import csv
import html
import platform
import statistics
from collections import defaultdict
from pathlib import Path

from suite.datadir import PROJECT_ROOT
from suite.plots import FIGURES, is_speed, job_name, model_size
from suite.results import ResultRecord, find_results, trainer_name
from suite.variants import variant_labels

SPEED_KEYS = ("train_tokens_per_s", "infer_tokens_per_s")


def mean_std(values: list[float]) -> str:
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:.4g}"
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g}"


def scored_on_test(r: ResultRecord) -> bool:
    """A record with test metrics (an evaluation of validation alone has none)."""
    return any(not k.startswith("val_") for k in r.metrics)


def summary_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row per (task, dataset, model, seq_len, trainer profile, variant); metrics and speeds aggregated over seeds.

    The variant names the settings that set runs of one model and profile apart
    (``suite.variants``): runs that differ in more than their seed are never pooled.
    """
    base: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for r in records:
        base[(r.task, r.dataset, r.model, r.seq_len, trainer_name(r))].append(r)
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for key, runs in base.items():
        for r, label in zip(runs, variant_labels([r.config for r in runs])):
            groups[(*key, label)].append(r)
    rows = []
    for (task, dataset, model, seq_len, trainer, variant), runs in sorted(groups.items(), key=lambda kv: tuple(str(k) for k in kv[0])):
        ok = [r for r in runs if r.status == "ok"]
        metric_names = sorted({k for r in ok for k in r.metrics if not k.startswith("val_") and k != "loss"})
        row = {
            "task": task, "dataset": dataset, "model": model, "seq_len": str(seq_len or ""), "trainer": trainer, "variant": variant,
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


def speed_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """One row per speed point (model x length), failed points included with their status."""
    runs = [r for r in records if is_speed(r)]
    rows = []
    for r in sorted(runs, key=lambda r: (r.model, model_size(r), r.attention or "", r.seq_len or 0)):
        s = r.speed
        fmt = lambda key, scale=1.0, spec=".4g": format(s[key] * scale, spec) if key in s else ""  # noqa: E731
        rows.append({
            "model": r.model, "size": model_size(r), "attention": r.attention or "", "seq_len": str(r.seq_len or r.config.get("task", {}).get("seq_len", "")), "status": r.status,
            "params": str(r.params or ""), "train tok/s": fmt("train_tokens_per_s"), "infer tok/s": fmt("infer_tokens_per_s"),
            "train step ms (IQR)": f"{fmt('train_step_ms')} ({fmt('train_step_iqr_ms', spec='.2g')})" if s else "",
            "latency ms/seq": fmt("latency_ms"), "peak MiB train": fmt("peak_mem_train_bytes", 2**-20), "peak MiB infer": fmt("peak_mem_infer_bytes", 2**-20),
            "GFLOP/step": fmt("flops_train_step", 1e-9), "MFU": fmt("mfu_train", spec=".2%"), "peak GFLOP/s": fmt("machine_peak_flops", 1e-9),
            "note": (r.error or "")[:120],
        })
    return rows


def gradient_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """Relative input-gradient norm at a few distances from the output."""
    rows = []
    for r in sorted((r for r in records if "grad_norm_relative_by_distance" in r.curves), key=lambda r: (r.model, r.seq_len or 0)):
        curve = r.curves["grad_norm_relative_by_distance"]
        row = {"model": r.model, "seq_len": str(r.seq_len)}
        for d in (1, 4, 16, 64, 256, len(curve) - 1):
            if d < len(curve):
                row[f"d={d}"] = f"{curve[d]:.2e}"
        rows.append(row)
    return rows


def write_table(rows: list[dict[str, str]], out_dir: Path, name: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(markdown(rows))
    with open(out_dir / f"{name}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["task"])
        writer.writeheader()
        writer.writerows(rows)


def html_table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r.values()) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def index_html(name: str, tables: dict[str, list[dict[str, str]]], figures: list[Path], machine: str) -> str:
    parts = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(name)}</title>",
             "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}table{border-collapse:collapse;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}</style>",
             f"<h1>Benchmark report: {html.escape(name)}</h1><p>{html.escape(machine)}</p>"]
    for title, rows in tables.items():
        if rows:
            parts.append(f"<h2>{html.escape(title)}</h2>{html_table(rows)}")
    for fig in figures:
        parts.append(f"<h2>{html.escape(fig.stem.replace('_', ' '))}</h2><img src='{fig.name}' alt='{fig.stem}'>")
    return "\n".join(parts) + "\n"


def build_report(records: list[ResultRecord], out_dir: Path, name: str) -> dict[str, list[dict[str, str]]]:
    """Write every table, figure and the index page for ``records`` into ``out_dir``."""
    tables = {
        # Failed runs too (their rows say so), and weights scored again on test by job=evaluate.
        "results": summary_rows([r for r in records if job_name(r) == "train_job" or (job_name(r) == "evaluate_job" and scored_on_test(r))]),
        "speed": speed_rows(records),
        "gradient_flow": gradient_rows(records),
    }
    for table, rows in tables.items():
        if rows:
            write_table(rows, out_dir, table)
    figures = [path for fig, draw in FIGURES.items() if (path := draw(records, out_dir / f"{fig}.png")) is not None]
    devices = sorted({r.device for r in records if r.device})
    machine = f"measured on: {', '.join(devices)}; {platform.platform()}; {len(records)} runs"
    (out_dir / "machine.txt").write_text(machine + "\n")
    (out_dir / "index.html").write_text(index_html(name, tables, figures, machine))
    return tables


def log_to_wandb(out_dir: Path, name: str, tables: dict[str, list[dict[str, str]]]) -> None:
    """Log the report's tables and figures to W&B (offline unless WANDB_MODE says otherwise), grouped by report name."""
    import os

    import wandb

    run = wandb.init(project="transformer-bench", group=name, job_type="report", name=f"report-{name}", dir=str(out_dir.parent.parent / "runs"),
                     mode=os.environ.get("WANDB_MODE", "offline"), settings=wandb.Settings(console="off", x_disable_stats=True))
    for title, rows in tables.items():
        if rows:
            run.log({f"table/{title}": wandb.Table(columns=list(rows[0]), data=[list(r.values()) for r in rows])})
    for png in sorted(out_dir.glob("*.png")):
        run.log({f"figure/{png.stem}": wandb.Image(str(png))})
    run.finish()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument("--name", default="latest", help="writes results/NAME/")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results")
    parser.add_argument("--wandb", action="store_true", help="also log the tables and figures to W&B")
    args = parser.parse_args(argv)
    found = find_results(*args.runs)
    if not found:
        print(f"no result.json under {', '.join(map(str, args.runs))}")
        return 1
    out_dir = args.out / args.name
    tables = build_report([r for _, r in found], out_dir, args.name)
    print(markdown(tables["results"]))
    if tables["speed"]:
        print(markdown(tables["speed"]))
    if args.wandb:
        log_to_wandb(out_dir, args.name, tables)
    print(f"wrote {out_dir}/ (index.html, tables, figures) from {len(found)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
