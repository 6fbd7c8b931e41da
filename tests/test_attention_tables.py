"""The efficient-attention tables, from synthetic records: LRA Table 2's form (speed, memory, crossover)."""
from suite.efficiency import crossover, efficiency_rows
from suite.report import main as report_main
from suite.results import ResultRecord

MiB = 2**20
SPEED_JOB = {"_target_": "suite.jobs.speed.speed_job", "batch_size": 4}


def point(name: str, length: int, tok_s: float | None, mem_mib: float = 0.0, status: str = "ok", batch: int = 4) -> ResultRecord:
    """One speed point of the attention model (``name`` a variant) or of the LSTM."""
    attention = name != "lstm"
    model = {"d_model": 128, "backbone": {"n_layers": 2}} | ({"attention": {"_target_": name}} if attention else {})
    speed = {"train_tokens_per_s": tok_s, "peak_mem_train_bytes": mem_mib * MiB, "batch_size": float(batch)} if status == "ok" else {}
    return ResultRecord(status=status, task="long_range", dataset="recall", model="transformer" if attention else "lstm", seed=0, seq_len=length,
                        attention=name if attention else None, speed=speed, precision="fp32", error=None if status == "ok" else "too slow",
                        config={"job": SPEED_JOB | {"batch_size": batch}, "model": model})


K = [1024, 2048, 4096, 8192, 16384]
TABLE = {  # tokens/s at 1K..16K (None: timed out), memory in MiB
    "full": ([10e3, 6e3, 3e3, 1.4e3, None], [100, 200, 400, 800, None]),
    "local": ([8e3, 7e3, 6.9e3, 6.8e3, 6.5e3], [50, 100, 200, 400, 800]),
    "linear": ([12e3, 11e3, 11e3, 10e3, 10e3], [40, 80, 160, 320, 640]),
    "performer": ([11e3, 5e3, 4e3, 3e3, 2e3], [60, 120, 240, 480, 960]),
    "reformer": ([2e3, 1e3, 0.5e3, 0.2e3, None], [90, 180, 360, 720, None]),
    "lstm": ([40e3, 40e3, 39e3, 38e3, 37e3], [20, 40, 80, 160, 320]),
}


def records() -> list[ResultRecord]:
    out = []
    for name, (rates, mems) in TABLE.items():
        for length, rate, mem in zip(K, rates, mems):
            out.append(point(name, length, rate, mem or 0.0, status="ok" if rate else "timeout"))
    return out


def by_model(rows):
    return {row["model"]: row for row in rows}


def test_every_model_relative_to_full_attention_at_each_length():
    rows = efficiency_rows(records())
    assert [r["model"] for r in rows] == ["full", "linear", "local", "performer", "reformer", "lstm"]  # full, the variants, then the recurrent
    table = by_model(rows)
    assert table["full"]["train tok/s 1K"] == "10k tok/s" and table["full"]["peak memory 4K"] == "400 MiB"  # its own figures
    assert table["full"]["train tok/s 16K"] == "timeout"
    assert table["local"]["train tok/s 4K"] == "2.30x" and table["local"]["peak memory 4K"] == "0.50x"
    assert table["local"]["train tok/s 16K"] == "6.5k tok/s (full: timeout)"  # no ratio where SDPA has no figure
    assert table["reformer"]["train tok/s 16K"] == "timeout"
    assert table["lstm"]["train tok/s 1K"] == "4.00x"


def test_crossover_is_the_shortest_length_from_which_on_the_variant_is_faster():
    table = by_model(efficiency_rows(records()))
    assert table["local"]["crossover"] == "2K"  # slower at 1K, faster from 2K on (and it trains at 16K where SDPA timed out)
    assert table["linear"]["crossover"] == "≤1K"  # already faster at the shortest length measured
    assert table["performer"]["crossover"] == "4K"  # faster at 1K, slower at 2K, faster from 4K on
    assert table["reformer"]["crossover"] == "none ≤8K"  # never faster where both have a figure
    assert table["full"]["crossover"] == ""


def test_own_slowdown_with_length_and_memory_growth_are_computed_from_the_records():
    table = by_model(efficiency_rows(records()))
    assert table["local"]["own tok/s 16K/1K"] == "0.81x" and table["linear"]["own tok/s 16K/1K"] == "0.83x"
    assert table["local"]["memory 16K/4K"] == "4.00x"  # linear in length
    assert table["full"]["memory 16K/4K"] == "" and table["reformer"]["own tok/s 16K/1K"] == ""  # no figure at 16K


def test_a_setting_without_full_attention_is_left_out_and_settings_are_named_when_several():
    assert efficiency_rows([point("local", 1024, 5e3, 10, batch=8), point("lstm", 1024, 9e3, 10, batch=8)]) == []
    rows = efficiency_rows(records() + [point("full", 1024, 9e3, 50, batch=8), point("local", 1024, 9.9e3, 30, batch=8)])
    assert {r["setting"] for r in rows} == {"long_range/recall, d128x2, fp32, batch 4", "long_range/recall, d128x2, fp32, batch 8"}
    eight = [r for r in rows if r["setting"].endswith("batch 8")]
    assert [(r["model"], r["train tok/s 1K"], r["crossover"]) for r in eight] == [("full", "9k tok/s", ""), ("local", "1.10x", "≤1K")]


def test_crossover_with_nothing_to_compare_is_empty():
    assert crossover({}, {}) == ""


def test_the_report_writes_the_table_beside_the_speed_table(tmp_path):
    for i, r in enumerate(records()):
        r.write(tmp_path / "runs" / f"p{i}")
    assert report_main([str(tmp_path / "runs"), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    out = tmp_path / "results" / "t"
    text = (out / "attention_speed.md").read_text()
    assert "| model | train tok/s 1K |" in text and "| local |" in text and "crossover" in text
    assert "attention speed" in (out / "index.html").read_text()
    assert (out / "attention_speed.csv").read_text().startswith("model,")
