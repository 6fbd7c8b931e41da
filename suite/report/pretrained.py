"""``python -m suite.report.pretrained RUNS --name NAME``: from scratch against self-pretrained (``pretrain=denoise``).

The runs of each model on each task setting are split by whether they were pretrained (their record's ``pretrain``),
then compared as two arms (``suite.report.arms``): each model from scratch and pretrained, model against model paired
in each (does the gap between the Transformer and the LSTM shrink with pretraining, as Amos et al. found on LRA?),
what pretraining bought each model, and what the pretraining cost: its objective, its steps beside the fine-tuning
steps (the budget both arms are compared at) and its seconds.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from suite.report import formatting as fmt
from suite.report.arms import Arms, gain_rows, headline_rows, outputs_of, report_main, setting_cells
from suite.report.tuned import write_tables
from suite.runtime.record import find_results

KINDS = ("scratch", "pretrained")
TABLES = {
    "from scratch and self-pretrained": "pretrained_headline",
    "what pretraining bought": "pretraining_bought",
    "pretraining": "pretraining",
}


def arms_of(found: list[tuple[Path, object]]) -> list[Arms]:
    """The trained runs grouped by task setting and model, each run in the arm its record says."""
    groups: dict[tuple, Arms] = {}
    for path, r in found:
        if r.job != "train" or r.status != "ok":
            continue
        key = (r.task, r.dataset, r.seq_len, r.model)
        groups.setdefault(key, Arms("-".join(map(str, key)))).add(KINDS[bool(r.pretrain)], r, path)
    return [groups[k] for k in sorted(groups, key=lambda k: (k[0], k[1], k[2] or 0, k[3] != "transformer", k[3]))]


def cost_rows(arms: list[Arms]) -> list[dict[str, str]]:
    """What the pretrained arm spent: pretraining steps and seconds beside its fine-tuning steps (means over seeds)."""
    rows = []
    for a in arms:
        runs = a.finals.get("pretrained", [])
        if not runs:
            continue
        pre, tune = [r.pretrain["steps"] for r in runs], [r.steps or 0 for r in runs]
        scratch = [r.steps or 0 for r in a.finals.get("scratch", [])]
        token_accuracy = [r.pretrain.get("val_token_accuracy") or 0.0 for r in runs]
        rows.append(
            setting_cells(a)
            | {
                "objective": "/".join(sorted({r.pretrain["objective"] for r in runs})),
                "pretraining steps": f"{statistics.mean(pre):.0f}",
                "fine-tuning steps": f"{statistics.mean(tune):.0f}",
                "from scratch: steps": f"{statistics.mean(scratch):.0f}" if scratch else "",
                "pretraining time": fmt.seconds(statistics.mean(r.pretrain["seconds"] for r in runs)),
                "validation token accuracy": fmt.metric(statistics.mean(token_accuracy)),
            }
        )
    return rows


def build(arms: list[Arms], out_dir: Path) -> dict[str, list[dict[str, str]]]:
    outputs = outputs_of(arms)
    tables = {
        "from scratch and self-pretrained": headline_rows(arms, KINDS, outputs),
        "what pretraining bought": gain_rows(arms, KINDS, outputs),
        "pretraining": cost_rows(arms),
    }
    write_tables(tables, out_dir, TABLES, "pretrained")
    return tables


def find_arms(*roots: Path) -> list[Arms]:
    return [a for a in arms_of(find_results(*roots)) if a.finals.get("pretrained")]


def main(argv: list[str] | None = None) -> int:
    missing = "run with pretrain=denoise (make bench-pretrained; docs/tuning.md)"
    return report_main(argv, __doc__.splitlines()[0], "pretrained", find_arms, build, missing)


if __name__ == "__main__":
    raise SystemExit(main())
