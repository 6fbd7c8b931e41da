"""The report's figures read at a glance: a colour a family in every figure, at most eight series a panel, the
precision in every label, plain numbers on the axes, error bars only where there are seeds (and none in a legend),
accuracy against length at one budget, chance and the commonest class on accuracy bars, learning curves that name a
run still learning. Drawn from synthetic records (``tests/report_records.py``) and inspected before they are saved."""

from __future__ import annotations

from dataclasses import replace

import matplotlib.pyplot as plt
import pytest
from matplotlib.collections import LineCollection
from matplotlib.colors import to_hex
from report_records import every_record, model_fields, speed_records, trained, training_records

from suite.report import palette as pal
from suite.report.axes import plain
from suite.report.learning_curves import learning_curves
from suite.report.plots import (
    FIGURES,
    accuracy_vs_length,
    domain_bars,
    length_curves,
    speed_vs_length,
)
from suite.report.section import discover
from suite.runtime.record import ResultRecord, trainer_name


@pytest.fixture
def drawn(monkeypatch):
    """Call a figure function and get its matplotlib figure back (drawn, not closed) instead of only its file."""
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: None)

    def draw(function, records, path):
        before = set(plt.get_fignums())
        if function(records, path) is None:
            return None
        (number,) = set(plt.get_fignums()) - before
        fig = plt.figure(number)
        fig.canvas.draw()
        return fig

    yield draw
    close("all")


def texts(fig) -> list[str]:
    """Every tick label, offset text, title and legend entry of a figure."""
    out = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            out += [t.get_text() for t in axis.get_ticklabels(which="both")]
            out.append(axis.get_offset_text().get_text())
        out.append(ax.get_title())
    return out + [t.get_text() for legend in legends(fig) for t in legend.get_texts()]


def legends(fig) -> list:
    return [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)


def shown_axes(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def test_axis_numbers_are_plain():
    assert [plain(v) for v in (64, 1024, 4096, 16384, 30_000, 1_200_000, 1536, 2_000, 0.25, 500)] == [
        "64",
        "1K",
        "4K",
        "16K",
        "30k",
        "1.2M",
        "1.5K",
        "2k",
        "0.25",
        "500",
    ]


def every_figure() -> dict:
    return {**FIGURES, **{name: draw for section in discover() for name, draw in section.figures.items()}}


@pytest.mark.parametrize("name", sorted(every_figure()))
def test_every_figure_writes_plain_numbers(drawn, tmp_path, name):
    fig = drawn(every_figure()[name], every_record(), tmp_path / f"{name}.png")
    if fig is None:
        pytest.skip(f"{name}: the synthetic records hold nothing for it")
    labels = texts(fig)
    assert not [t for t in labels if "$" in t or "^" in t or "×" in t or "e+" in t], labels  # no 2^6, no 3x10^4


def test_each_family_has_its_hue_and_each_model_one_colour_everywhere(drawn, tmp_path):
    records = every_record()
    colours = pal.Palette.of(records)
    by_model = {pal.identity(r): colours.colour(r) for r in records}
    assert {by_model[m] for m in ("lstm", "gru", "rnn")} <= set(pal.SHADES[pal.CLASSIC])
    assert {by_model[m] for m in ("mingru", "mamba", "s4d")} <= set(pal.SHADES[pal.MODERN])
    assert {by_model[m] for m in ("transformer", "transformer-local", "transformer-linear")} <= set(
        pal.SHADES[pal.ATTENTION]
    )
    assert len({by_model[m] for m in ("lstm", "gru", "rnn", "mingru", "mamba", "s4d")}) == 6
    # the family is what the model declares; a record from before declarations, by what its backbone class declares
    undeclared = ResultRecord(status="ok", task="t", dataset="d", seed=0, **model_fields("mamba", declared=False))
    assert pal.model_family(undeclared) == pal.MODERN
    assert pal.model_family(ResultRecord(status="ok", task="t", dataset="d", model="lead", seed=0)) == pal.OTHER
    # one model, one colour: the LSTM's line in the speed figure and in the learning curves
    speed = drawn(speed_vs_length, records, tmp_path / "speed.png")
    curves = drawn(learning_curves, records, tmp_path / "curves.png")
    in_speed = {line.get_label(): to_hex(line.get_color()) for ax in speed.axes for line in ax.get_lines()}
    in_curves = {
        t.get_text(): to_hex(h.get_color()) for lg in legends(curves) for h, t in zip(lg.legend_handles, lg.get_texts())
    }
    assert in_speed["lstm, fp32"] == in_curves["lstm, fp32"] == by_model["lstm"]


def test_speed_panels_hold_one_family_each_at_most_eight_series_with_their_precision(drawn, tmp_path):
    records = speed_records()  # ten attention cores in bf16, six recurrent models in fp32: sixteen series
    fig = drawn(speed_vs_length, records, tmp_path / "speed.png")
    hues = {family: set(shades) for family, shades in pal.SHADES.items()}
    for ax in shown_axes(fig):
        lines = ax.get_lines()
        assert 0 < len(lines) <= 8, ax.get_title()
        families = {f for line in lines for f, shades in hues.items() if to_hex(line.get_color()) in shades}
        assert len(families) == 1, ax.get_title()
        for line in lines:
            assert line.get_label().endswith((", fp32", ", bf16"))
            assert line.get_linestyle() == ("--" if line.get_label().endswith("bf16") else "-")
    titles = {ax.get_title().split(":")[0] for ax in shown_axes(fig)}
    assert titles == {"training tokens/s", "inference tokens/s"}  # no panel that only inverts another
    assert {"64", "256", "1K", "4K"} <= {t.get_text() for t in fig.axes[-1].get_xticklabels()}


def test_error_bars_only_where_there_are_seeds_and_never_in_a_legend(drawn, tmp_path):
    seeded = drawn(accuracy_vs_length, training_records(), tmp_path / "length.png")  # recall: two seeds a point
    assert any(isinstance(c, LineCollection) for ax in seeded.axes for c in ax.collections)
    for legend in legends(seeded):
        assert all(type(h).__name__ == "Line2D" for h in legend.legend_handles)  # no error-bar glyph
    single = drawn(speed_vs_length, speed_records(), tmp_path / "speed.png")  # one run a point
    assert not any(isinstance(c, LineCollection) for ax in single.axes for c in ax.collections)


def test_accuracy_against_length_is_a_curve_at_one_budget(drawn, tmp_path):
    records = training_records()  # news topics: length 64 at 150 steps, 256 at 100: no budget ran two lengths
    assert {(task, budget) for task, _, budget in length_curves(records)} == {("long_range", trainer_name(records[0]))}
    bars = drawn(domain_bars, records, tmp_path / "bars.png")
    news = [ax.get_title() for ax in shown_axes(bars) if ax.get_title().startswith("news_topic")]
    assert len(news) == 2  # each length at its own budget: a panel each, never one line across budgets
    # the news at 64 and 256 at one budget, and again at 256 at another: the curve is the shared budget's
    budget = {"steps": 150, "planned_steps": 150}
    same = [
        replace(r, config=r.config | {"trainer": {"name": "quick", "max_steps": 150}}, **budget) for r in records[12:16]
    ]
    extra = trained("transformer", "news_topic", "bbc", 256, 0.5, steps=40)
    fig = drawn(accuracy_vs_length, same + [extra], tmp_path / "news.png")
    (ax,) = shown_axes(fig)
    assert trainer_name(same[0]) in ax.get_title() and trainer_name(extra) not in ax.get_title()
    assert sorted(len(line.get_xdata()) for line in ax.get_lines() if line.get_label().endswith("fp32")) == [2, 2]


def test_accuracy_bars_show_chance_and_say_what_the_records_do_not_hold(drawn, tmp_path):
    fig = drawn(domain_bars, training_records(), tmp_path / "bars.png")
    titles = {ax.get_title().split(",")[0]: ax for ax in shown_axes(fig)}
    binary = titles["protein: amp"]  # its metrics (MCC, ROC-AUC) say two classes
    assert "chance 0.5 (dotted)" in binary.get_title() and "commonest class: not recorded" in binary.get_title()
    assert any(list(line.get_xdata()) == [0.5, 0.5] for line in binary.get_lines())
    assert "chance: not recorded" in titles["news_topic: bbc"].get_title()  # no class count in its record


def test_accuracy_bars_draw_the_commonest_class_from_the_test_labels_counts(drawn, tmp_path):
    counts = {"0": 300, "1": 100}  # the commonest class is 75 % of the test set
    records = [replace(r, test_label_counts=counts) if r.dataset == "amp" else r for r in training_records()]
    fig = drawn(domain_bars, records, tmp_path / "bars.png")
    (binary,) = [ax for ax in shown_axes(fig) if ax.get_title().startswith("protein: amp")]
    assert "chance 0.5 (dotted)" in binary.get_title() and "commonest class 0.75 (dashed)" in binary.get_title()
    assert any(list(line.get_xdata()) == [0.75, 0.75] for line in binary.get_lines())


def test_learning_curves_name_the_runs_still_learning(drawn, tmp_path):
    records = training_records()
    fig = drawn(learning_curves, records, tmp_path / "curves.png")
    entries = [t.get_text() for lg in legends(fig) for t in lg.get_texts()]
    assert "lstm, fp32 (still learning)" in entries and "transformer, fp32" in entries
    settings = {(r.task, r.dataset, r.seq_len, trainer_name(r)) for r in records}
    assert len(shown_axes(fig)) == 2 * len(settings)  # against steps and against seconds, a row a setting
    assert {ax.get_xlabel() for ax in fig.axes} == {"training steps", "training seconds"}
    seeded = [line for line in fig.axes[0].get_lines()]
    assert len(seeded) == 4 and {line.get_linewidth() for line in seeded} == {0.9}  # two models x two seeds, thin
    # records without a learning curve (older runs, other jobs' curves) draw none
    old = [replace(r, curves={"context": [1.0], "perplexity": [2.0]}) for r in records]
    assert learning_curves(old, tmp_path / "none.png") is None
    for r in records:
        del r.convergence  # a record from before the verdict
    assert learning_curves(records, tmp_path / "unjudged.png") is not None
