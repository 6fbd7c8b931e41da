"""The capability map in the report: models against diagnostic tasks, from its runs (``tasks.capabilities.cells``).

- ``capabilities.md`` / ``.csv``: a row a model and size (its width, backbone parameters and state size beside it), a
  column a task; a cell is the mean test accuracy % over the seeds at the rate chosen on validation, ``↗`` where the
  convergence test found a seed still learning (``k↗`` for k of them), a failed run's status where one failed, ``not
  run`` where the plan (``capability_map``) has a cell no run has reached yet, a row for a planned model too. The best
  model on a task at a size is bold only where it beats the runner-up by the paired test over the seeds and test
  examples (``suite.report.verdict.judged``); the line under the table names each task's verdict.
- ``capability_map.png``: the same as a heatmap, one panel a size.
- ``capability_extrapolation.png``: for the tasks tested beyond their training length, accuracy against test length,
  a line a model (the mean over seeds, their spread as error bars), the training length marked.
- ``capability_knobs.png``: for a task swept along one of its settings (``capability_stage: knob``), accuracy
  against that setting, a line a model.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Collection
from pathlib import Path

from suite.report.axes import measured_axis
from suite.report.drawing import Series, draw_series, plt, save, series_key, style
from suite.report.palette import Palette
from suite.report.plots import model_order
from suite.report.section import Section, register
from suite.report.significance import Outputs
from suite.report.verdict import OutputsOf, judged
from suite.runtime.record import ResultRecord
from tasks.capabilities.cells import (
    STAGE_MAP,
    Cell,
    cells,
    is_map_run,
    label,
    map_runs,
    owes,
    stage,
    train_length,
    variants,
)
from tasks.capabilities.cells import planned as planned_rows
from tasks.capabilities.cells import size as size_of
from tasks.capabilities.findings import FAILED, FINDINGS, SOLVED, judged_finding

MARK_LEARNING = "↗"
NOT_RUN = "not run"


def state_text(r: ResultRecord) -> str:
    """The model's declared state: the numbers a sequence carries between steps, and after how many positions (an
    attention cache or Hyena's inputs grow with them; a recurrence's do not)."""
    declared = r.declaration or {}
    numbers = declared.get("state_numbers")
    if numbers is None:
        return ""
    return f"{int(numbers):,} after {declared.get('state_at_length')}"


def at_training_length(outputs: OutputsOf) -> OutputsOf:
    """``outputs`` cut to the scored positions at the run's training length (what ``accuracy`` counts)."""

    def cut(r: ResultRecord) -> Outputs | None:
        kept = outputs(r)
        if kept is None or kept.predictions is None:
            return kept
        length = train_length(r)
        return Outputs(predictions=[p for p in kept.predictions if p.get("length", length) == length])

    return cut


def winners(
    found: dict[tuple[int, str, str], Cell], outputs: OutputsOf, left_out: Collection[str] = ()
) -> dict[tuple[int, str], tuple[str | None, str]]:
    """(size, task) -> (the model that beats the runner-up by the paired test, or None; the verdict in words), among
    the models not ``left_out`` (the variants: a model changed for one finding does not contend for a column)."""
    by_column: dict[tuple[int, str], dict[str, Cell]] = defaultdict(dict)
    for (at, model, task), cell in found.items():
        if model not in left_out:
            by_column[(at, task)][model] = cell
    out = {}
    for column, models in by_column.items():
        means = {m: c.mean for m, c in models.items() if c.mean is not None}
        out[column] = judged({m: c.ok for m, c in models.items()}, means, "accuracy", at_training_length(outputs))
    return out


def row_order(runs: list[ResultRecord], plan: dict[str, list[str] | None]) -> Callable[[str], tuple]:
    """The rows' sort key: a model with runs by family, then name (``model_order``); a planned one without runs right
    after the model before it in the plan that has runs, so that its first run moves it little."""
    order, named = model_order(runs), list(plan)
    ran = {label(r) for r in runs}

    def key(model: str) -> tuple:
        if model in ran or model not in named:
            return (order(model.split(" ")[0]), 0)
        before = [m for m in named[: named.index(model)] if m in ran]
        return (order(before[-1]) if before else (-1, ""), 1 + named.index(model))

    return key


def cell_text(cell: Cell | None, bold: bool, due: bool = False) -> str:
    """A cell's text; ``due``: the plan has this cell, so a missing one says it has not run yet (else blank)."""
    if cell is None:
        return NOT_RUN if due else ""
    if cell.mean is None:
        return "/".join(cell.failed) or "no run"
    text = f"{100 * cell.mean:.1f}"
    text = f"**{text}**" if bold else text
    if cell.still_learning:
        text += MARK_LEARNING if cell.still_learning == 1 else f" {cell.still_learning}{MARK_LEARNING}"
    seeds, planned = len(cell.ok), cell.planned_seeds  # planned reads every run's config: once
    if seeds < planned or cell.failed:
        failed = f"; {', '.join(cell.failed)}" if cell.failed else ""
        text += f" ({seeds} of {planned} seeds{failed})"  # the findings' wording: 'from 2 of 3 seeds'
    return text


def task_order(records: list[ResultRecord]) -> list[str]:
    """The tasks in the map's own order (``capability_map.tasks``), any others after."""
    listed: list[str] = []
    for r in records:
        for t in (r.config.get("capability_map") or {}).get("tasks") or []:
            if t not in listed:
                listed.append(t)
    present = {r.task for r in records}
    return [t for t in listed if t in present] + sorted(present - set(listed))


def map_rows(records: list[ResultRecord], outputs: OutputsOf) -> list[dict[str, str]]:
    """A row a (size, model): width, backbone parameters, state size, then a column a task; the verdict row last."""
    runs = map_runs(records)
    if not runs:
        return []
    found, tasks = cells(runs), task_order(runs)
    won = winners(found, outputs, variants(runs))
    plan = planned_rows(runs)  # a planned row with no run yet is listed too, its cells 'not run'
    order = row_order(runs, plan)
    rows = []
    for at in sorted({k[0] for k in found}):
        models = sorted({k[1] for k in found if k[0] == at} | set(plan), key=order)
        for model in models:
            own = [r for k, c in found.items() if k[:2] == (at, model) for r in c.runs]
            row = {"size": f"{at:,}", "model": model, "width": "", "parameters": "", "state": ""}
            if own:
                row["width"] = str((own[0].config.get("model") or {}).get("d_model"))
                row["parameters"] = f"{int((own[0].declaration or {}).get('parameters') or 0):,}"
                # the state at the longest length any of the row's runs declared (one length a row: a cache grows)
                row["state"] = state_text(max(own, key=lambda r: (r.declaration or {}).get("state_at_length") or 0))
            for task in tasks:
                bold = won.get((at, task), (None, ""))[0] == model
                row[task] = cell_text(found.get((at, model, task)), bold, owes(plan, model, task))
            rows.append(row)
        verdicts = {"size": f"{at:,}", "model": "winner (paired test)", "width": "", "parameters": "", "state": ""}
        for task in tasks:
            winner, words = won.get((at, task), (None, ""))
            verdicts[task] = winner or ("≈" if words.startswith("≈") else "not tested")
        rows.append(verdicts)
    return rows


def capability_map(records: list[ResultRecord], out: Path) -> Path | None:
    """The map as a heatmap: a panel a size, a row a model, a column a task, the mean accuracy % written in each cell
    (↗ a seed still learning; 'failed' where no run finished; 'not run' where the plan has a cell no run reached)."""
    runs = map_runs(records)
    if not runs:
        return None
    found, tasks = cells(runs), task_order(runs)
    sizes = sorted({k[0] for k in found})
    plan = planned_rows(runs)  # as the table: a planned row without runs is drawn too, its cells 'not run'
    order = row_order(runs, plan)
    models = {at: sorted({k[1] for k in found if k[0] == at} | set(plan), key=order) for at in sizes}
    height = max(len(m) for m in models.values())
    fig, axes = plt.subplots(
        1, len(sizes), figsize=(0.75 * len(tasks) * len(sizes) + 2.5, 0.36 * height + 2), squeeze=False
    )
    for ax, at in zip(axes[0], sizes):
        grid = [[found[(at, m, t)].mean if (at, m, t) in found else None for t in tasks] for m in models[at]]
        values = [[float("nan") if v is None else v for v in row] for row in grid]
        image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, m in enumerate(models[at]):
            for j, t in enumerate(tasks):
                cell = found.get((at, m, t))
                if cell is None:
                    if owes(plan, m, t):
                        ax.text(j, i, NOT_RUN, ha="center", va="center", fontsize=5, color="#777777")
                    continue
                text = (
                    "failed"
                    if cell.mean is None
                    else f"{100 * cell.mean:.0f}" + (MARK_LEARNING if cell.still_learning else "")
                )
                colour = "black" if cell.mean is not None and cell.mean > 0.6 else "white"
                ax.text(j, i, text, ha="center", va="center", fontsize=7, color=colour)
        ax.set_xticks(range(len(tasks)), tasks, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(models[at])), models[at], fontsize=8)
        ax.set_title(f"{at:,} backbone parameters", fontsize=10)
    fig.colorbar(image, ax=axes[0][-1], fraction=0.05, label="test accuracy (mean over seeds)")
    fig.suptitle("Which model can do what? The capability map (↗ still learning)", fontsize=11)
    return save(fig, out)


def length_series(group: list[Cell]) -> list[Series]:
    """A series a model: its accuracy at each tested length (the training length's ``accuracy`` among them)."""
    out = []
    for cell in group:
        s = Series(cell.model, list(cell.ok))
        for r in cell.ok:
            s.points[train_length(r)].append(r.metrics["accuracy"])
            for key, value in r.metrics.items():
                if key.startswith("accuracy_at_"):
                    s.points[int(key.rsplit("_", 1)[1])].append(value)
        if s.runs:
            out.append(s)
    return out


def accuracy_panels(panels: list[tuple[str, str, list[Series], float | None]], colours: Palette, title: str):
    """One panel a (title, x label, series, a length to mark or None), three to a row, one y scale and one legend;
    accuracy on y. Returns the figure."""
    columns = min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns + 2, 3.2 * rows), squeeze=False, sharey=True)
    every = sorted({s.label: s for _, _, shown, _ in panels for s in shown}.values(), key=series_key)
    kinds = style(every, colours)
    handles = {}
    for ax, (name, xlabel, shown, mark) in zip(axes.flat, panels):
        shown = sorted(shown, key=series_key)
        for line in draw_series(ax, shown, colours, {s.label: kinds[s.label] for s in shown}):
            handles[line.get_label()] = line
        if mark is not None:
            ax.axvline(mark, color="#777777", linestyle=":", linewidth=1)
        measured_axis(ax.xaxis, [x for s in shown for x in s.points])
        ax.set_title(name, fontsize=9)
        ax.set_xlabel(xlabel)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel("test accuracy")
        row[0].set_ylim(0, 1.02)
    fig.legend(list(handles.values()), list(handles), loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8,
               frameon=False)  # fmt: skip
    fig.suptitle(title, fontsize=11)
    return fig


def extrapolation(records: list[ResultRecord], out: Path) -> Path | None:
    """Accuracy against test length for each task tested beyond its training length: a panel a (task, size)."""
    runs = map_runs(records)
    grouped: dict[tuple[str, int], list[Cell]] = defaultdict(list)
    for (at, _, task), cell in cells(runs).items():
        if any(k.startswith("accuracy_at_") for r in cell.ok for k in r.metrics):
            grouped[(task, at)].append(cell)
    if not grouped:
        return None
    tasks = task_order(runs)
    panels = []
    for task, at in sorted(grouped, key=lambda k: (tasks.index(k[0]), k[1])):
        trained = statistics.mode(train_length(r) for c in grouped[(task, at)] for r in c.ok)
        panels.append((f"{task}, {at:,} parameters (trained to {trained})", "test length",
                       length_series(grouped[(task, at)]), trained))  # fmt: skip
    title = "Length extrapolation: trained up to the dotted length, tested beyond it"
    return save(accuracy_panels(panels, Palette.of(runs), title), out)


def knob_value(r: ResultRecord, path: str | None = None) -> tuple[str, float] | None:
    """(a setting, its value in the run's task config): ``path`` (dotted, under ``task``), or the run's own swept
    setting (``capability_knob``) when none is given."""
    path = path or r.config.get("capability_knob")
    if not path:
        return None
    node: object = r.config.get("task") or {}
    for part in str(path).split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return (str(path), float(node)) if isinstance(node, (int, float)) and not isinstance(node, bool) else None


def knob_groups(records: list[ResultRecord]) -> dict[tuple[str, str, int], dict[str, Series]]:
    """(task, swept setting, size) -> model -> its accuracy against the setting's value: the knob stage's runs, and
    the map's own cell (the chosen rate's seeds, at the task's own value of the setting) beside them. A task swept
    along two settings (selective copying's tokens and its length) has a group for each."""
    joined = [(r, value) for r in records if is_map_run(r) and stage(r) != STAGE_MAP and (value := knob_value(r))]
    settings: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r, (setting, _) in joined:
        settings[(r.task, size_of(r))].add(setting)
    for (at, _, task), cell in cells(records).items():
        for setting in sorted(settings.get((task, at), ())):
            joined += [(r, value) for r in cell.runs if (value := knob_value(r, setting))]
    grouped: dict[tuple[str, str, int], dict[str, Series]] = defaultdict(dict)
    for r, (setting, value) in joined:
        if r.status == "ok" and "accuracy" in r.metrics:
            series = grouped[(r.task, setting, size_of(r))].setdefault(label(r), Series(label(r)))
            series.runs.append(r)
            series.points[value].append(r.metrics["accuracy"])
    return grouped


def knobs(records: list[ResultRecord], out: Path) -> Path | None:
    """Accuracy against a task's swept setting: a panel a (task, setting, size), a line a model, seeds as error
    bars (``knob_groups``)."""
    grouped = knob_groups(records)
    if not grouped:
        return None
    panels = [(f"{task}, {at:,} parameters", setting, list(grouped[(task, setting, at)].values()), None)
              for task, setting, at in sorted(grouped)]  # fmt: skip
    runs = [r for models in grouped.values() for s in models.values() for r in s.runs]
    return save(accuracy_panels(panels, Palette.of(runs), "Accuracy against each task's difficulty setting"), out)


def findings_rows(records: list[ResultRecord]) -> list[dict[str, str]]:
    """A row a published finding (``tasks.capabilities.findings``): its source, setting and figures, ours on our
    setting at each size, and the verdict."""
    runs = map_runs(records)
    if not runs:
        return []
    found = cells(runs)
    rows = []
    for finding in FINDINGS:
        verdict, ours = judged_finding(finding, found)
        rows.append({"finding": finding.name, "source": finding.source, "their setting": finding.setting,
                     "published": finding.published, "our setting": finding.ours, "ours (size: test accuracy %)": ours,
                     "verdict": verdict})  # fmt: skip
    return rows


register(
    Section(
        title="capability findings",
        table="capability_findings",
        order=86,
        printed=False,
        rows=lambda records, outputs: findings_rows(records),
        intro="The field's published findings on the map's tasks beside ours (tasks/capabilities/findings.py): each "
        f"finding's claims about our cells (a model solves a task at a mean of {SOLVED:.0%} or more, fails it below "
        f"{FAILED:.0%}, or is perfect on every seed) hold (agree), are contradicted by a cell past the point of "
        "changing its answer (disagree), or cannot be judged (not comparable: no run, a failed run, or still learning "
        "short of the mark). Their settings are not ours: longer sequences, GPU budgets, the best of several seeds.",
    )
)

register(
    Section(
        title="capability map",
        table="capabilities",
        order=85,
        printed=False,
        rows=map_rows,
        figures={
            "capability_map": capability_map,
            "capability_extrapolation": extrapolation,
            "capability_knobs": knobs,
        },  # fmt: skip
        claims=is_map_run,
        intro="The capability map (docs/capabilities.md): a row a model and size (its width, backbone parameters and "
        "declared state size), a column a diagnostic task; a cell is the mean test accuracy % over the seeds at the "
        f"learning rate chosen on validation (seed 0), {MARK_LEARNING} where the convergence test found a seed still "
        f"learning (k{MARK_LEARNING}: k of them), the seeds counted (k of n) where fewer finished than the plan has, "
        "a failed run's status beside it. A task's best model at a size is bold only where it beats the runner-up by "
        "the paired test over seeds and test examples; the 'winner' row names it, ≈ where the difference is within "
        "the noise. A variant (a model changed in one setting for a finding: capability_map.variants) has the cells "
        "of its own tasks and never contends.",
    )
)
