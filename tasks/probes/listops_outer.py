"""How much of a ListOps score the outermost operator alone explains.

A ListOps value is not uniform given its first token: ``[MAX`` over a few nested arguments is usually 9,
``[MIN`` usually 0. The *outer-operator rule* maps each outermost operator to its commonest value in the
**training** split; this module scores that rule on the test split and reads, for each run given, how often its
test predictions agree with the rule and what it predicts under each operator. A model that agrees with the rule
on most test examples learned to read the first token, not to evaluate the expression.

    python -m tasks.probes.listops_outer results/lra_cpu_runs/listops-* --out results/lra_cpu/listops_outer.md

Each run's own ``result.json`` gives the task's generator settings, so the splits are regenerated exactly as it
saw them (``tasks.long_range.generate_splits``); a run of another task or other settings is refused by name.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from suite.report.tables import markdown
from suite.runtime.predictions import read_predictions
from suite.runtime.record import RESULT_FILE, read_result
from tasks.long_range import VOCAB, Example, generate_splits, listops_example

OPERATOR = {i + 1: tok for i, tok in enumerate(VOCAB)}  # token id -> token; the first token is the outer operator
SETTINGS = ("seq_len", "n_train", "n_val", "n_test", "split_seed", "max_depth", "max_args")


def listops_splits(task: dict[str, Any]) -> dict[str, list[Example]]:
    """The train/val/test splits a run of ``task`` (its config's ``task`` block) trained and was scored on."""
    if task.get("problem") != "listops":
        raise ValueError(f"not a ListOps run: its task has problem={task.get('problem')!r}")
    make = partial(listops_example, seq_len=task["seq_len"], max_depth=task["max_depth"], max_args=task["max_args"])
    sizes = {"train": task["n_train"], "val": task["n_val"], "test": task["n_test"]}
    return generate_splits(make, sizes, task["split_seed"])


def outer(sequence: list[int]) -> str:
    """The outermost operator of a tokenised expression ('[MAX'), or the digit of a bare one."""
    return OPERATOR[sequence[0]]


def outer_rule(train: list[Example]) -> dict[str, int]:
    """Each outermost operator's commonest value in ``train``."""
    values: dict[str, Counter] = defaultdict(Counter)
    for sequence, label in train:
        values[outer(sequence)][label] += 1
    return {op: counts.most_common(1)[0][0] for op, counts in sorted(values.items())}


def rule_accuracy(rule: dict[str, int], test: list[Example]) -> float:
    """The rule's accuracy on ``test`` (an operator it never saw counts as wrong)."""
    return sum(rule.get(outer(s)) == y for s, y in test) / len(test)


def run_row(name: str, predictions: list[dict[str, Any]], rule: dict[str, int], test: list[Example]) -> dict[str, str]:
    """A run's test accuracy, its agreement with ``rule`` and its commonest prediction under each operator."""
    if [p["label"] for p in predictions] != [y for _, y in test]:
        raise ValueError(f"{name}: its test predictions are not of the regenerated test split (other labels)")
    by_op: dict[str, Counter] = defaultdict(Counter)
    for p, (s, _) in zip(predictions, test):
        by_op[outer(s)][p["prediction"]] += 1
    agree = sum(p["prediction"] == rule.get(outer(s)) for p, (s, _) in zip(predictions, test)) / len(test)
    accuracy = sum(p["prediction"] == p["label"] for p in predictions) / len(predictions)
    row = {"run": name, "test accuracy %": f"{100 * accuracy:.1f}", "agrees with the rule %": f"{100 * agree:.1f}"}
    for op in rule:
        value, count = by_op[op].most_common(1)[0] if by_op[op] else ("", 0)
        row[f"under {op}: commonest prediction (share)"] = f"{value} ({count / max(1, sum(by_op[op].values())):.0%})"
    return row


def outer_table(run_dirs: list[Path]) -> list[dict[str, str]]:
    """The rule's row (from the first run's splits), then one row per run; every run must share the splits."""
    rows: list[dict[str, str]] = []
    reference: dict[str, Any] | None = None
    for run_dir in run_dirs:
        task = read_result(run_dir / RESULT_FILE).config.get("task") or {}
        settings = {k: task.get(k) for k in SETTINGS}
        if reference is None:
            reference = settings
            splits = listops_splits(task)
            rule = outer_rule(splits["train"])
            guesses = [{"label": y, "prediction": rule.get(outer(s))} for s, y in splits["test"]]
            rows.append(run_row("outer-operator rule (fit on train)", guesses, rule, splits["test"]))
        elif settings != reference:
            raise ValueError(f"{run_dir}: other ListOps settings than {run_dirs[0]} ({settings} vs {reference})")
        rows.append(run_row(run_dir.name, read_predictions(run_dir), rule, splits["test"]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="ListOps run directories (result.json, test predictions)")
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    text = markdown(outer_table(args.runs))
    print(text)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
