"""The associative-recall report (tasks/mqar_report.py), from synthetic records: a row a model and setting, a cell a
width, failures by status, chance from the vocabulary; the figure, a panel a setting."""

from __future__ import annotations

from suite.report.build import main as report_main
from suite.runtime.record import ResultRecord
from tasks.mqar_report import mqar_rows, mqar_vs_width


def run(
    model: str, width: int, length: int, pairs: int, accuracy: float | None, seed: int = 0, **extra
) -> ResultRecord:
    status = "ok" if accuracy is not None else "diverged"
    model_cfg = {"d_model": width, "backbone": {"n_layers": 2}} | ({"attention": {}} if model == "transformer" else {})
    return ResultRecord(
        status=status,
        task="mqar",
        dataset="mqar",
        model=model,
        seed=seed,
        seq_len=length,
        steps=500,
        metrics={"accuracy": accuracy} if accuracy is not None else {},
        primary_metric="accuracy",
        config={"task": {"n_pairs": pairs, "vocab_size": 64}, "model": model_cfg},
        **extra,
    )


def records() -> list[ResultRecord]:
    return [
        run("transformer", 32, 64, 4, 0.5),
        run("transformer", 64, 64, 4, 1.0),
        run("transformer", 64, 64, 4, 0.9, seed=1),
        run("transformer", 32, 64, 4, 0.25, attention="linear"),
        run("lstm", 32, 64, 4, 0.03),
        run("lstm", 64, 64, 4, None),
        run("lstm", 32, 32, 8, 0.1),
    ]


def test_a_row_a_model_and_setting_a_cell_a_width():
    rows = {(r["length"], r["pairs"], r["model"]): r for r in mqar_rows(records())}
    assert set(rows) == {("32", "8", "lstm"), ("64", "4", "transformer"), ("64", "4", "transformer (linear)"),
                         ("64", "4", "lstm")}  # fmt: skip
    full = rows[("64", "4", "transformer")]
    assert full["d32"] == "0.500" and full["d64"] == "0.950 (2 seeds)" and full["chance"] == "0.031"
    assert rows[("64", "4", "lstm")]["d64"] == "diverged" and rows[("32", "8", "lstm")]["d64"] == ""
    assert [r["model"] for r in mqar_rows(records()) if r["length"] == "64"] == [
        "transformer",
        "transformer (linear)",
        "lstm",
    ]  # attention first, as every table of the report orders its families


def test_the_figure_has_a_panel_a_setting(tmp_path):
    assert mqar_vs_width([], tmp_path / "none.png") is None
    assert mqar_vs_width(records(), tmp_path / "mqar.png").stat().st_size > 0


def test_the_report_writes_the_table_and_the_figure(tmp_path):
    for i, r in enumerate(records()):
        r.write(tmp_path / "runs" / str(i))
    report_main([str(tmp_path / "runs"), "--name", "t", "--out", str(tmp_path / "out")])
    out = tmp_path / "out" / "t"
    assert (out / "mqar.md").read_text().count("\n") == 2 + 4 and (out / "mqar_vs_width.png").exists()
    assert not (out / "accuracy_vs_length.png").exists()  # MQAR is drawn against width, not length
