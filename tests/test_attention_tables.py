"""The efficient-attention tables, from synthetic records: LRA Table 2's form (speed, memory, crossover)."""

from suite.report.build import main as report_main
from suite.report.efficiency import crossover, efficiency_rows
from suite.runtime.record import ResultRecord

MiB = 2**20
SPEED_JOB = {"_target_": "suite.jobs.speed.speed_job", "batch_size": 4}


def point(
    name: str, length: int, tok_s: float | None, mem_mib: float = 0.0, status: str = "ok", batch: int = 4
) -> ResultRecord:
    """One speed point of the attention model (``name`` a variant) or of the LSTM."""
    attention = name != "lstm"
    model = {"d_model": 128, "backbone": {"n_layers": 2}} | ({"attention": {"_target_": name}} if attention else {})
    speed = (
        {"train_tokens_per_s": tok_s, "peak_mem_train_bytes": mem_mib * MiB, "batch_size": float(batch)}
        if status == "ok"
        else {}
    )
    return ResultRecord(
        status=status,
        task="long_range",
        dataset="recall",
        model="transformer" if attention else "lstm",
        seed=0,
        seq_len=length,
        attention=name if attention else None,
        speed=speed,
        precision="fp32",
        error=None if status == "ok" else "too slow",
        config={"job": SPEED_JOB | {"batch_size": batch}, "model": model},
    )


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
    assert [r["model"] for r in rows] == [
        "full",
        "linear",
        "local",
        "performer",
        "reformer",
        "lstm",
    ]  # full, the variants, then the recurrent
    table = by_model(rows)
    assert (
        table["full"]["train tok/s 1K"] == "10k tok/s" and table["full"]["peak memory 4K"] == "400 MiB"
    )  # its own figures
    assert table["full"]["train tok/s 16K"] == "timeout"
    assert table["local"]["train tok/s 4K"] == "2.30x" and table["local"]["peak memory 4K"] == "0.50x"
    assert table["local"]["train tok/s 16K"] == "6.5k tok/s (full: timeout)"  # no ratio where SDPA has no figure
    assert table["reformer"]["train tok/s 16K"] == "timeout"
    assert table["lstm"]["train tok/s 1K"] == "4.00x"


def test_crossover_is_the_shortest_length_from_which_on_the_variant_is_faster():
    table = by_model(efficiency_rows(records()))
    assert (
        table["local"]["crossover"] == "2K"
    )  # slower at 1K, faster from 2K on (and it trains at 16K where SDPA timed out)
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
    rows = efficiency_rows(
        records() + [point("full", 1024, 9e3, 50, batch=8), point("local", 1024, 9.9e3, 30, batch=8)]
    )
    assert {r["setting"] for r in rows} == {
        "long_range/recall, d128x2, fp32, batch 4",
        "long_range/recall, d128x2, fp32, batch 8",
    }
    eight = [r for r in rows if r["setting"].endswith("batch 8")]
    assert [(r["model"], r["train tok/s 1K"], r["crossover"]) for r in eight] == [
        ("full", "9k tok/s", ""),
        ("local", "1.10x", "≤1K"),
    ]


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


# --- the LRA-style accuracy table --------------------------------------------------------------

from tasks.lra_report import PUBLISHED, lra_rows  # noqa: E402

TRAIN_JOB = {"_target_": "suite.jobs.train.train_job"}
LRA_TASKS = {
    "listops": ("long_range", "listops", 2048),
    "recall": ("long_range", "recall", 1024),
    "text": ("news_topic", "bbc", 4096),
    "image": ("image", "fashion_mnist", 784),
}


def run(
    name: str,
    lra: str,
    accuracy: float | None,
    seed: int = 0,
    benchmark: str | None = "lra",
    steps: int = 2000,
    window: int | None = None,
) -> ResultRecord:
    task, dataset, length = LRA_TASKS[lra]
    model = {"d_model": 128, "attention": {"_target_": name} | ({"window": window} if window else {})}
    return ResultRecord(
        status="ok" if accuracy is not None else "oom",
        task=task,
        dataset=dataset,
        model="transformer",
        seed=seed,
        seq_len=length,
        attention=name,
        metrics={"accuracy": accuracy} if accuracy is not None else {},
        error=None if accuracy is not None else "out of memory",
        config={
            "benchmark": benchmark,
            "job": TRAIN_JOB,
            "model": model,
            "trainer": {"name": "full", "max_steps": steps},
        },
    )


def test_lra_table_sets_variants_against_tasks_with_the_average_and_the_published_row_beside():
    runs = [
        run("full", "listops", 0.37),
        run("full", "listops", 0.39, seed=1),
        run("full", "text", 0.80),
        run("full", "image", 0.50),
        run("full", "recall", 1.0),
        run("local", "listops", 0.20),
        run("local", "text", 0.70),
        run("local", "image", 0.45),
        run("local", "recall", 0.125),
        run("nystrom", "listops", 0.30),
        run("nystrom", "recall", None),
    ]
    rows = lra_rows(runs)
    assert list(rows[0]) == ["model", "source", "ListOps 2K", "Text 4K", "Image 784", "Recall 1K", "average"]
    assert rows[0] == {  # a uniform guess: 10 values, 5 topics, 10 classes, task.n_classes keys (8 by default)
        "model": "chance",
        "source": "a uniform guess",
        "ListOps 2K": "10.0",
        "Text 4K": "20.0",
        "Image 784": "10.0",
        "Recall 1K": "12.5",
        "average": "13.1",
    }
    assert rows[1] == {
        "model": "full",
        "source": "ours: full (2000 steps)",
        "ListOps 2K": "38.0 (range 37.0-39.0)",  # two seeds: their range (a t-interval of two is [25.3, 50.7])
        "Text 4K": "80.0",
        "Image 784": "50.0",
        "Recall 1K": "100.0",
        "average": "67.0",
    }
    assert rows[2] == {
        "model": "",
        "source": "LRA Table 1 (Tay et al. 2021, published): Transformer",
        "ListOps 2K": "36.4",
        "Text 4K": "64.3",
        "Image 784": "42.4",
        "Recall 1K": "—",
        "average": "54.4 (its 5 tasks)",
    }
    assert [r["model"] for r in rows] == ["chance", "full", "", "local", "", "nystrom"]  # LRA did not measure Nystrom
    assert rows[3]["Recall 1K"] == "12.5" and rows[4]["ListOps 2K"] == "15.8"
    assert rows[5]["Recall 1K"] == "oom" and rows[5]["Text 4K"] == "" and rows[5]["average"] == "30.0 (1 of 4)"


def test_a_cell_with_a_failed_seed_says_so_beside_the_others_mean():
    rows = lra_rows([run("full", "recall", 1.0), run("full", "recall", None, seed=1)])
    assert rows[1]["Recall 1K"] == "100.0 (1 of 2 seeds; oom)"


def test_a_cell_of_three_seeds_has_its_interval_within_0_and_100():
    # mean 80, standard error 20: Student's t of two degrees of freedom gives [-6.1, 166.1], cut to what a share can be
    rows = lra_rows([run("full", "recall", accuracy, seed=seed) for seed, accuracy in enumerate((1.0, 1.0, 0.4))])
    assert rows[1]["Recall 1K"] == "80.0 [0.0, 100.0]"


def lra_cpu_run(model: str, lra: str, accuracy: float, tokens_per_s: float) -> ResultRecord:
    """A run of experiment=lra_cpu: an attention variant ('full', ...) or a recurrent model ('lstm', ...)."""
    task, dataset, length = {**LRA_TASKS, "pathfinder": ("pathfinder", "pathfinder", 1024)}[lra]
    attention = model in PUBLISHED or model == "nystrom"
    config_model = {"d_model": 64, "backbone": {"n_layers": 2}} | (
        {"attention": {"_target_": model}} if attention else {}
    )
    return ResultRecord(
        status="ok",
        task=task,
        dataset=dataset,
        model="transformer" if attention else model,
        seed=0,
        seq_len=1024 if lra in ("text", "pathfinder") else length,
        attention=model if attention else None,
        metrics={"accuracy": accuracy},
        speed={"train_tokens_per_s": tokens_per_s},
        config={
            "benchmark": "lra_cpu",
            "job": TRAIN_JOB,
            "model": config_model,
            "trainer": {"name": "full", "max_steps": 200},
        },
    )


def test_the_cpu_scale_table_puts_recurrent_rows_after_attention_with_pathfinder_and_tokens_per_s_at_1k():
    runs = [
        lra_cpu_run("lstm", "pathfinder", 0.52, 9000.0),
        lra_cpu_run("lstm", "text", 0.40, 11000.0),
        lra_cpu_run("full", "pathfinder", 0.60, 20000.0),
        lra_cpu_run("full", "image", 0.70, 25000.0),
        lra_cpu_run("full", "listops", 0.30, 30000.0),  # length 2048: not in the 1K column
    ]
    rows = lra_rows(runs, "lra_cpu")
    assert list(rows[0]) == [
        "model",
        "source",
        "ListOps 2K",
        "Text 1K",
        "Image 784",
        "Pathfinder 1K",
        "average",
        "train tok/s 1K",
    ]
    assert rows[0]["Pathfinder 1K"] == "50.0" and rows[0]["average"] == "22.5"
    assert [r["model"] for r in rows] == ["chance", "full", "", "lstm"]
    assert (
        rows[1]["Pathfinder 1K"] == "60.0"
        and rows[1]["train tok/s 1K"] == "20k"
        and rows[1]["average"] == "53.3 (3 of 4)"
    )
    assert rows[2]["Pathfinder 1K"] == "71.4"  # LRA's Transformer on Pathfinder-32
    assert rows[3]["train tok/s 1K"] == "10k (9k-11k)"  # the mean of its two 1K runs, and their range
    assert lra_rows(runs) == []  # the GPU-size table takes none of them


def test_rows_timed_on_different_cpu_kinds_say_where_each_was_timed():
    amx, avx512 = (
        {"cpu_capability": "AVX512", "cpu_bf16_unit": "amx"},
        {"cpu_capability": "AVX512", "cpu_bf16_unit": "avx512_bf16"},
    )
    full, lstm = lra_cpu_run("full", "text", 0.6, 20000.0), lra_cpu_run("lstm", "text", 0.4, 9000.0)
    full.device, full.numerics = "cpu:Intel(R) Xeon(R) Processor x1 threads", amx
    lstm.device, lstm.numerics = "cpu:AMD EPYC x1 threads", avx512
    rows = {r["model"]: r for r in lra_rows([full, lstm], "lra_cpu")}
    assert rows["full"]["timed on"] == "cpu:Intel(R) Xeon(R) Processor (AVX512, bf16 unit amx)"
    assert rows["lstm"]["timed on"] == "cpu:AMD EPYC (AVX512, bf16 unit avx512_bf16)"
    lstm.device, lstm.numerics = full.device, amx  # one kind: no column
    assert "timed on" not in lra_rows([full, lstm], "lra_cpu")[1]


def test_a_row_timed_on_two_cpu_kinds_gives_one_figure_a_kind_never_their_mean():
    amx, avx512 = (
        {"cpu_capability": "AVX512", "cpu_bf16_unit": "amx"},
        {"cpu_capability": "AVX512", "cpu_bf16_unit": "avx512_bf16"},
    )
    seed0, seed1 = lra_cpu_run("gla", "text", 0.3, 8000.0), lra_cpu_run("gla", "text", 0.32, 20000.0)
    seed1.seed = 1
    seed0.device, seed0.numerics = "cpu:AMD EPYC x1 threads", avx512
    seed1.device, seed1.numerics = "cpu:Intel(R) Xeon(R) Processor x1 threads", amx
    (row,) = [r for r in lra_rows([seed0, seed1], "lra_cpu") if r["model"] == "gla"]
    assert row["timed on"] == (
        "cpu:AMD EPYC (AVX512, bf16 unit avx512_bf16); cpu:Intel(R) Xeon(R) Processor (AVX512, bf16 unit amx)"
    )
    assert row["train tok/s 1K"] == "8k / 20k"  # in the order of its kinds; the mean (14k) is no machine's rate


def test_lra_table_takes_only_runs_of_the_lra_benchmark_and_keeps_other_settings_apart():
    runs = [
        run("full", "recall", 1.0),
        run("full", "recall", 0.5, benchmark=None),
        run("local", "recall", 0.125),
        run("local", "recall", 0.9, window=2048),
    ]
    rows = lra_rows(runs)[1:]  # after chance
    assert [(r["model"], r["Recall 1K"]) for r in rows] == [
        ("full", "100.0"),
        ("local (model.attention.window=2048)", "90.0"),
        ("local (model.attention.window=unset)", "12.5"),
    ]
    assert lra_rows([run("full", "recall", 1.0, benchmark=None)]) == []
    assert (
        len(lra_rows([run("full", "recall", 1.0)])) == 2
    )  # chance and ours: no published row where no task corresponds
    assert (
        lra_rows([run("full", "recall", 1.0, steps=400), run("full", "recall", 0.9)])[1]["source"]
        == "ours: full (2000 steps)"
    )  # budgets never pooled
    labelled = lra_rows(
        [run("bigbird", "recall", 1.0), run("full", "recall", 1.0, window=3), run("full", "recall", 0.9)]
    )[1:]
    assert [r["model"] for r in labelled] == [
        "full (model.attention.window=3)",
        "full (model.attention.window=unset)",
        "bigbird",
    ]  # full first, whatever its label


def test_published_figures_average_to_their_published_average():
    # A check on the typing: each row's five figures give its published average, to the rounding of one-decimal
    # figures (±0.05 each, ±0.05 the average).
    for name, (_, figures, average) in PUBLISHED.items():
        assert abs(sum(figures.values()) / 5 - average) <= 0.1, name


def test_the_report_writes_the_lra_table(tmp_path):
    for i, r in enumerate([run("full", "recall", 1.0), run("local", "recall", 0.125)]):
        r.write(tmp_path / "runs" / f"r{i}")
    assert report_main([str(tmp_path / "runs"), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    text = (tmp_path / "results" / "t" / "lra.md").read_text()
    assert (
        "| full | ours: full (2000 steps) | 100.0 | 100.0 |" in text
        and "| local | ours: full (2000 steps) | 12.5 | 12.5 |" in text
    )


def test_the_commonest_class_row_is_the_share_of_the_modal_test_label_the_runs_kept():
    from suite.report.significance import Outputs

    runs = [lra_cpu_run("full", "text", 0.40, 20000.0), lra_cpu_run("lstm", "pathfinder", 0.5, 9000.0)]
    kept = {  # text: 3 of 5 test labels are class 2; pathfinder kept nothing
        id(runs[0]): Outputs(
            predictions=[{"id": i, "label": y, "prediction": 0} for i, y in enumerate([2, 2, 0, 2, 1])]
        )
    }
    rows = lra_rows(runs, "lra_cpu", lambda r: kept.get(id(r)))
    assert [r["model"] for r in rows][:2] == ["chance", "commonest class"]
    assert rows[1]["Text 1K"] == "60.0" and rows[1]["Pathfinder 1K"] == "" and rows[1]["average"] == "60.0 (1 of 2)"
    assert [r["model"] for r in lra_rows(runs, "lra_cpu")][:2] == ["chance", "full"]  # nothing kept: no such row


def test_a_permuted_image_run_is_a_column_of_its_own_without_the_published_figure():
    plain, permuted = lra_cpu_run("full", "image", 0.54, 1.0), lra_cpu_run("full", "image", 0.34, 1.0)
    permuted.config["task"] = {"permute_seed": 0}
    rows = lra_rows([permuted, plain], "lra_cpu")
    assert [c for c in rows[0] if c.startswith("Image")] == ["Image 784", "Image 784 permuted (0)"]
    ours, published = rows[1], rows[2]
    assert ours["Image 784"] == "54.0" and ours["Image 784 permuted (0)"] == "34.0"  # never pooled
    assert published["Image 784"] == "42.4" and published["Image 784 permuted (0)"] == "—"
