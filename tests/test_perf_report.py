"""The perf benchmark and the report run and print what they promise (figures, not limits)."""

from suite.measure.timing import summarise, time_calls
from suite.report.build import main as report_main
from suite.runtime.predictions import write_predictions
from suite.runtime.record import ResultRecord
from suite.tools.perf import main as perf_main


def test_timing_summary_orders_quartiles():
    t = summarise([3.0, 1.0, 2.0, 4.0, 5.0])
    assert t.q1 <= t.median <= t.q3 and t.median == 3.0 and t.spread > 0


def test_time_calls_times_each_callable():
    calls = {"a": 0, "b": 0}

    def bump(name):
        return lambda: calls.__setitem__(name, calls[name] + 1)

    out = time_calls({"a": bump("a"), "b": bump("b")}, device=__import__("torch").device("cpu"), warmup=2, repeats=5)
    assert calls == {"a": 7, "b": 7}
    assert all(len(t.samples) == 5 and t.median > 0 for t in out.values())


def test_perf_prints_ratios(capsys):
    perf_main(
        [
            "--batch",
            "2",
            "--length",
            "16",
            "--d-model",
            "32",
            "--layers",
            "1",
            "--heads",
            "2",
            "--d-ff",
            "64",
            "--repeats",
            "2",
            "--warmup",
            "1",
            "--precision",
            "bf16",
        ]
    )
    out = capsys.readouterr().out
    assert out.startswith("Measured on ") and "ours / torch" in out
    blocks = out.split("\n**dropout ")[1:]
    assert [b.splitlines()[0] for b in blocks] == ["0.0**", "0.1**"]  # at dropout 0 and at the config's dropout
    for block in blocks:
        rows = [line.split(" | ") for line in block.splitlines() if line.startswith("| training step")]
        assert [r[0] for r in rows] == ["| training step, fp32", "| training step, bf16"]  # fp32 beside forced bf16
        assert "| inference, fp32 |" in block and "| inference, bf16 |" in block
        swapped = {r[3] for r in rows}  # the "ours, nn.Dropout" column
        if block.startswith("0.0"):
            assert swapped == {"-"}  # nothing to swap at dropout 0
        else:
            assert "-" not in swapped  # ours with torch's dropout, timed in the same run


def test_report_aggregates_seeds_and_failures(tmp_path, capsys):
    def rec(seed, acc, status="ok"):
        r = ResultRecord(
            status=status,
            task="sentiment",
            dataset="sst2",
            model="lstm",
            seed=seed,
            seq_len=64,
            params=10,
            metrics={"accuracy": acc, "val_accuracy": 0.9} if status == "ok" else {},
            speed={"train_tokens_per_s": 100.0, "infer_tokens_per_s": 300.0} if status == "ok" else {},
            error=None if status == "ok" else "boom",
        )
        r.write(tmp_path / f"run{seed}")

    rec(0, 0.80), rec(1, 0.82), rec(2, 0.0, status="failed")
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    table = (tmp_path / "results" / "t" / "results.md").read_text()
    assert "2/3 ok" in table and "| 0.810 ± 0.014 |" in table and "failed: boom" in table
    # two seeds: their range (Student's t of one degree of freedom would give [0.683, 0.937])
    assert "| accuracy range [0.800, 0.820] (2 seeds) |" in table
    assert (
        table.startswith("## Results at a glance") and "| accuracy |" in table
    )  # the headline, then the detail table with a column per metric
    assert (tmp_path / "results" / "t" / "index.html").exists() and (
        tmp_path / "results" / "t" / "domains.png"
    ).exists()
    assert (tmp_path / "results" / "t" / "results.csv").read_text().startswith("task,")


def test_report_shows_each_decoding_of_evaluated_weights_on_its_own_row(tmp_path):
    def rec(name, metrics, penalty):
        # The decoding's name comes from the record (what the task said it scored with), never from the task's config
        # keys.
        config = {
            "job": {"_target_": "suite.jobs.evaluate.evaluate_job", "checkpoint": "runs/lower/checkpoints/best.pt"},
            "trainer": {"name": "quick"},
        }
        ResultRecord(
            status="ok",
            task="summarization",
            dataset="aeslc",
            model="transformer",
            seed=0,
            seq_len=128,
            params=10,
            metrics=metrics,
            stop_reason="evaluated",
            scored_with=f"beam_search beam_size 4, length_penalty {penalty}",
            config=config,
        ).write(tmp_path / name)

    rec("a", {"rouge2": 6.0, "val_rouge2": 5.0}, 0.6)
    rec("b", {"rouge2": 7.0, "val_rouge2": 6.0}, 1.5)
    rec("c", {"val_rouge2": 6.5}, 2.0)  # validation alone: no test figure, no row
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    table = (tmp_path / "results" / "t" / "results.md").read_text()
    assert (
        "evaluated lower (beam_search beam_size 4, length_penalty 0.6) | 1/1 ok | 10 | 6.00 |" in table
    )  # the weights' run and the decoding
    assert "evaluated lower (beam_search beam_size 4, length_penalty 1.5) | 1/1 ok | 10 | 7.00 |" in table
    assert "length_penalty 2.0" not in table


def test_speed_series_split_by_size_only_when_sizes_differ():
    from suite.report.plots import series_by_model

    def rec(model, width, length):
        return ResultRecord(
            status="ok",
            task="long_range",
            dataset="recall",
            seed=0,
            model=model,
            seq_len=length,
            speed={"train_step_ms": float(length)},
            config={"model": {"d_model": width, "backbone": {"n_layers": 2}}},
        )

    records = [
        rec("transformer", 128, 64),
        rec("transformer", 128, 256),
        rec("transformer", 256, 256),
        rec("lstm", 128, 64),
    ]
    series = series_by_model(records, lambda r: r.speed["train_step_ms"])
    assert set(series) == {"transformer d128x2", "transformer d256x2", "lstm"}
    assert dict(series["transformer d128x2"]) == {64: [64.0], 256: [256.0]}
    budgets = [rec("lstm", 128, 64), rec("lstm", 128, 64)]
    budgets[0].config["trainer"], budgets[1].config["trainer"] = (
        {"name": "quick", "time_budget_s": 45},
        {"name": "quick", "max_steps": 150},
    )
    assert set(series_by_model(budgets, lambda r: 1.0)) == {
        "lstm (quick (45 s))",
        "lstm (quick (150 steps))",
    }  # never averaged together
    kernels = [rec("transformer", 128, 64), rec("transformer", 128, 64)]
    kernels[0].attention, kernels[1].attention = "full", "explicit"
    assert set(series_by_model(kernels, lambda r: 1.0)) == {
        "transformer full attention",
        "transformer explicit attention",
    }


def test_summary_line_gives_the_figures_of_every_job_kind():
    from suite.run import summary_line

    base = dict(task="long_range", dataset="recall", model="lstm", seed=0, seq_len=64)
    trained = ResultRecord(status="ok", metrics={"accuracy": 0.5, "val_accuracy": 0.6}, **base)
    timed = ResultRecord(
        status="ok",
        speed={
            "train_step_ms": 2.0,
            "train_tokens_per_s": 1000.0,
            "infer_tokens_per_s": 3000.0,
            "peak_mem_train_bytes": 2.0 * 2**20,
            "mfu_train": 0.0123,
        },
        **base,
    )
    failed = ResultRecord(status="oom", error="OutOfMemoryError: x", **base)
    assert summary_line(trained) == "accuracy=0.5"
    assert (
        summary_line(ResultRecord(status="ok", metrics={"val_bleu": 30.0, "val_loss": 2.0}, **base)) == "val_bleu=30"
    )  # job=evaluate on val alone
    assert summary_line(timed) == "L=64: train 1000 tok/s, infer 3000 tok/s, peak 2 MiB train, MFU 1.23%"
    assert summary_line(failed) == "OutOfMemoryError: x"
    timed.speed |= {"generate_tokens_per_s": 500.0, "generate_cache_speedup": 2.5}  # a translation model's point
    assert summary_line(timed).endswith("MFU 1.23%, generate 500 tok/s (2.50x the uncached)")


def test_report_builds_its_files_from_a_multirun_made_here(tmp_path):
    # A real (tiny) sweep through the runner: two models x two lengths of training, then one speed
    # point in the same root; the report reads the run directories as `make bench` leaves them.
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tiny = [
        "task=long_range",
        "task.n_train=32",
        "task.n_val=16",
        "task.n_test=16",
        "trainer=smoke",
        "logger=none",
        "model.d_model=32",
    ]
    for args in (
        ["model=transformer,lstm", "task.seq_len=16,32"],
        [
            "job=speed",
            "model=transformer",
            "task.seq_len=16",
            "job.min_time_s=0",
            "job.repeats=1",
            "job.warmup=1",
            "job.measure_peak=false",
            "job.precision=fp32",
        ],
    ):
        sweep_dir = tmp_path / "runs" / args[0].split("=")[0]
        out = subprocess.run(
            [sys.executable, "-m", "suite.run", "-m", f"hydra.sweep.dir={sweep_dir}", *tiny, *args],
            cwd=root,
            env={**os.environ, "HYDRA_FULL_ERROR": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode == 0, out.stderr[-3000:]
    assert report_main([str(tmp_path / "runs"), "--name", "sweep", "--out", str(tmp_path / "results")]) == 0
    out_dir = tmp_path / "results" / "sweep"
    table = (out_dir / "results.md").read_text()
    headline = [line for line in table.split("## long_range")[0].splitlines() if line.startswith("| long_range")]
    rows = [line for line in table.split("## long_range")[1].splitlines() if line.startswith("| long_range")]
    assert (
        len(headline) == 2 and len(rows) == 4 and all("1/1 ok" in row for row in rows)
    )  # transformer and lstm at 16 and 32
    assert "| transformer | d32x2 | full | fp32 | 16 | 8 | ok |" in (out_dir / "speed.md").read_text()
    figures = {"accuracy_vs_length.png", "speed_vs_length.png", "memory_vs_length.png"}
    assert figures <= {p.name for p in out_dir.iterdir()}
    assert all(f"src='{name}'" in (out_dir / "index.html").read_text() for name in figures)


def test_cpu_runs_name_the_cpu_model(tmp_path):
    from suite.runtime.record import cpu_name

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\n")
    assert cpu_name(info) == "AMD EPYC 9R14 96-Core Processor"
    assert cpu_name(tmp_path / "absent")  # falls back to what platform knows


def test_runs_that_differ_in_a_setting_are_never_pooled(tmp_path):
    def rec(name, seed, lowercase, rouge2):
        config = {
            "seed": seed,
            "logger": {"mode": "offline"},
            "trainer": {"name": "quick", "progress": seed == 0},
            "task": {"name": "summarization", "lowercase": lowercase, "search": {"beam_size": 4}},
        }
        ResultRecord(
            status="ok",
            task="summarization",
            dataset="aeslc",
            model="transformer",
            seed=seed,
            seq_len=128,
            params=10,
            metrics={"rouge2": rouge2},
            config=config,
        ).write(tmp_path / name)

    rec("a", 0, True, 7.0)
    rec("b", 1, True, 8.0)  # another seed of the same settings: pooled
    rec("c", 0, False, 5.0)
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    table = (tmp_path / "results" / "t" / "results.md").read_text()
    assert "| task.lowercase=true | 2/2 ok | 10 | 7.50 ± 0.71 |" in table
    assert "| task.lowercase=false | 1/1 ok | 10 | 5.00 |" in table


def test_variant_labels_name_only_what_differs():
    from suite.report.run_settings import variant_labels

    a = {"seed": 0, "trainer": {"lr": 0.001, "progress": True}, "task": {"k": None}}
    b = {"seed": 1, "trainer": {"lr": 0.002, "progress": False}}  # lacks task.k, which a leaves null: no difference
    c = {"seed": 2, "trainer": {"lr": 0.001}, "task": {"k": "x"}}
    assert variant_labels([a, b]) == ["trainer.lr=0.001", "trainer.lr=0.002"]
    assert variant_labels([a, c]) == ["task.k=null", "task.k=x"]
    assert variant_labels([a, b, c]) == [
        "task.k=null, trainer.lr=0.001",
        "task.k=unset, trainer.lr=0.002",
        "task.k=x, trainer.lr=0.001",
    ]
    assert variant_labels([a, {**a, "seed": 5}]) == ["", ""]
    # settings that change nothing computed (suite.runtime.differences.NOT_COMPUTED) never tell runs apart: the
    # capability map's plan, a checkpoint interval, a training job's scan kernel; a timing job's kernel still does
    train = {"_target_": "suite.jobs.train.train_job"}
    planned = {
        **a,
        "job": train,
        "capability_map": {"lrs": [0.001]},
        "model": {"backbone": {"kernel": "auto", "depth": 2}},
    }
    grown = {
        **a,
        "job": train,
        "capability_map": {"lrs": [0.0003, 0.001]},
        "trainer": {**a["trainer"], "checkpoint_every_s": 60},
        "model": {"backbone": {"depth": 2}},
    }
    assert variant_labels([planned, grown]) == ["", ""]
    timed = [{**c, "job": {"_target_": "suite.jobs.speed.speed_job"}} for c in (planned, grown)]
    assert variant_labels(timed) == ["model.backbone.kernel=auto", "model.backbone.kernel=unset"]


BUILT = {  # what a model is (attention first, then recurrent) comes from its config, not its name
    "transformer": {"attention": {"_target_": "x"}, "backbone": {"_target_": "y"}},
    "lstm": {"backbone": {"_target_": "z"}},
}


def headline_record(root, name, model, acc, tok_s, right, verdict=None, precision="bf16", cut=False):
    """A sentiment run of ``model`` right on the first ``right`` of 500 test examples (its predictions kept)."""
    write_predictions([{"id": i, "label": 1, "prediction": int(i < right)} for i in range(500)], root / name)
    ResultRecord(
        status="ok",
        task="sentiment",
        dataset="sst2",
        model=model,
        seed=0,
        seq_len=64,
        params=10,
        metrics={"accuracy": acc, "macro_f1": acc - 0.01},
        speed={"train_tokens_per_s": tok_s, "infer_tokens_per_s": 3 * tok_s},
        steps=50 if cut else 100,
        planned_steps=100,
        stop_reason="time_budget" if cut else "max_steps",
        precision=precision,
        convergence={"verdict": verdict} if verdict else {},
        config={"trainer": {"name": "quick", "max_steps": 100}, "model": BUILT[model]},
    ).write(root / name)


def test_a_winner_is_not_bolded_while_a_model_of_its_row_is_still_learning(tmp_path):
    headline_record(tmp_path, "t", "transformer", 0.804, 25_000.0, 402, "plateaued", "bf16")
    headline_record(tmp_path, "l", "lstm", 0.834, 175_200.0, 417, "still learning", "fp32")  # a significant lead
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    table = (tmp_path / "results" / "t" / "results.md").read_text()
    head, detail = table.split("## sentiment")
    assert "| 0.804 | 0.834 (still learning) | lstm − transformer: +0.03 [" in head and "**" not in head
    assert "| no: lstm still learning (budget) | transformer bf16, lstm fp32 |" in head
    assert "| 100 | still learning |" in detail and "| 100 | plateaued |" in detail

    headline_record(tmp_path, "l", "lstm", 0.834, 175_200.0, 417, "plateaued", "fp32")  # both plateaued: a win
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    head = (tmp_path / "results" / "t" / "results.md").read_text().split("## sentiment")[0]
    assert "| 0.804 | **0.834** | lstm − transformer" in head and "| plateaued | transformer bf16, lstm fp32 |" in head


def test_headline_sets_models_side_by_side_marks_the_best_and_flags_cut_runs(tmp_path):
    headline_record(tmp_path, "t", "transformer", 0.804, 25_000.0, right=402)
    # right wherever the transformer is, and on 15 more
    headline_record(tmp_path, "l", "lstm", 0.834, 175_200.0, right=417, cut=True)
    assert report_main([str(tmp_path), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    out_dir = tmp_path / "results" / "t"
    table = (out_dir / "results.md").read_text()
    head = table.split("## sentiment")[0]
    columns = "| task | dataset | length | trainer | metric | transformer | lstm | difference (95 % CI) |"
    assert columns + " converged | precision | speed (train tok/s) |" in head
    assert (
        "| sentiment | sst2 | 64 | quick (100 steps) | accuracy | 0.804 | **0.834** † | lstm − transformer: +0.03 ["
        in head
    )
    # the smallest two-sided p of 1,000 random permutations; records without a curve say so
    assert "p 0.002 | no curve | bf16 | 0.14x transformer/lstm |" in head
    detail = table.split("## sentiment")[1]
    assert (
        "| accuracy | macro_f1 |" in detail and "| 0.834 † | 0.824 † | 175k | 526k | 50 |" in detail
    )  # a column per metric, numbers for people
    assert "cut short by its time cap" in table
    assert "<b>0.834</b>" in (out_dir / "index.html").read_text()
    csv_text = (out_dir / "results.csv").read_text()
    assert "0.834" in csv_text and "175200" in csv_text  # raw figures for machines


def test_numbers_are_formatted_for_people():
    from suite.report import formatting as fmt

    assert [fmt.metric(v) for v in (0.8043, 18.93, 0.0308, 123.4, 2.0)] == ["0.804", "18.9", "0.031", "123", "2.00"]
    assert [fmt.rate(v) for v in (938.2, 9388.0, 175_234.0, 1_234_567.0)] == ["938", "9.39k", "175k", "1.23M"]
    assert fmt.mean_std([0.80, 0.82]) == "0.810 ± 0.014" and fmt.mean_std([]) == ""


def test_compare_pairs_two_benchmark_runs_and_judges_metrics_not_speed(tmp_path, capsys):
    from suite.report.compare import main as compare_main

    def rec(root, name, acc, tok_s):
        ResultRecord(
            status="ok",
            task="sentiment",
            dataset="sst2",
            model="lstm",
            seed=0,
            metrics={"accuracy": acc, "val_accuracy": 0.5},
            speed={"train_tokens_per_s": tok_s, "infer_tokens_per_s": 2 * tok_s},
        ).write(tmp_path / root / name)

    rec("a", "x", 0.8, 100.0), rec("b", "x", 0.8, 150.0)
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "x: ok/ok, metrics same (accuracy 0.8); throughput B/A: train 1.50x, infer 1.50x" in out
    assert "training throughput B/A: 1.50x to 1.50x; beyond 25 %: x 1.50x" in out
    speed = {"train_tokens_per_s": 10.0, "others_cpu_share": 0.0}
    ResultRecord(status="ok", task="t", dataset="d", model="gru", seed=0, speed=speed).write(tmp_path / "a" / "z")
    ResultRecord(
        status="ok", task="t", dataset="d", model="gru", seed=0, speed=speed | {"others_cpu_share": 0.5}
    ).write(tmp_path / "b" / "z")
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert (
        "z: ok/ok, metrics same; throughput B/A: train 1.00x; others' CPU share A 0.00 / B 0.50"
        in capsys.readouterr().out
    )
    rec("a", "y", 0.8, 100.0), rec("b", "y", 0.7, 100.0)
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "y: ok/ok, metrics DIFFERENT" in capsys.readouterr().out


def test_time_calls_keeps_timing_until_the_rounds_span_the_minimum():
    import time as clock

    import torch

    out = time_calls(
        {"a": lambda: clock.sleep(0.002)}, device=torch.device("cpu"), warmup=0, repeats=2, min_seconds=0.1
    )
    assert len(out["a"].samples) >= 20  # 2 ms calls: about 50 rounds to span 0.1 s, never just the 2 asked for
    assert out["a"].others_cpu_share is not None  # the rounds carry the load they ran under (Linux: /proc/stat)
    capped = time_calls(
        {"a": lambda: clock.sleep(0.002)},
        device=torch.device("cpu"),
        warmup=0,
        repeats=2,
        min_seconds=10.0,
        max_repeats=5,
    )
    assert len(capped["a"].samples) == 5


def test_a_new_task_needs_no_name_in_the_report(tmp_path):
    # A task the report has never heard of: its headline metric is the one its records name, and
    # trained at two lengths it is plotted against length (and left out of the per-domain bars).
    from suite.report.plots import domain_bars, length_studies, primary

    def rec(task, length, model="m"):
        return ResultRecord(
            status="ok",
            task=task,
            dataset="d",
            model=model,
            seed=0,
            seq_len=length,
            metrics={"a_score": 0.1, "z_score": 0.7 + length / 1000},
            primary_metric="z_score",
            config={"model": {"backbone": {"_target_": "x"}}},
        )

    swept, single = [rec("newtask", 16), rec("newtask", 32)], [rec("other", 16)]
    assert primary(swept[0]) == ("z_score", 0.716) and primary(
        ResultRecord(status="ok", task="t", dataset="d", model="m", seed=0, metrics={"b": 1.0, "a": 2.0})
    ) == ("a", 2.0)
    assert length_studies(swept + single) == {("newtask", "d")}
    for i, r in enumerate(swept + single):
        r.write(tmp_path / "runs" / str(i))
    assert report_main([str(tmp_path / "runs"), "--name", "t", "--out", str(tmp_path / "results")]) == 0
    assert (tmp_path / "results" / "t" / "accuracy_vs_length.png").exists() and (
        tmp_path / "results" / "t" / "domains.png"
    ).exists()
    assert "| newtask | d | 16 |" in (tmp_path / "results" / "t" / "results.md").read_text()
    assert domain_bars(swept, tmp_path / "bars.png") is None  # a length study has its own figure


def test_speed_points_that_differ_in_a_hidden_setting_are_labelled_by_it():
    from suite.report.sections.speed import speed_rows

    def rec(features, length):
        return ResultRecord(
            status="ok",
            task="long_range",
            dataset="recall",
            seed=0,
            model="transformer",
            seq_len=length,
            attention="performer",
            speed={"train_tokens_per_s": 1e4 / features, "batch_size": 4.0},
            config={
                "job": {"_target_": "suite.jobs.speed_job"},
                "model": {"d_model": 128, "attention": {"n_features": features}},
            },
        )

    rows = speed_rows([rec(256, 1024), rec(64, 1024), rec(256, 4096)])
    assert [(r["length"], r["variant"]) for r in rows] == [
        ("1024", "model.attention.n_features=256"),
        ("1024", "model.attention.n_features=64"),
        ("4096", ""),
    ]


def test_headline_bolds_no_winner_within_noise_or_without_per_example_outputs(tmp_path):
    """Two models whose test predictions differ on a handful of examples either way: '≈' and the interval, no bold;
    runs that kept no per-example outputs: no test, no bold."""
    from suite.report.build import experiments, headline_rows
    from suite.report.significance import Outputs

    def rec(model, acc):
        return ResultRecord(
            status="ok", task="dna", dataset="splice", model=model, seed=0, seq_len=60, metrics={"accuracy": acc},
            config={"trainer": {"name": "quick"}, "model": {}},
        )  # fmt: skip

    records = [rec("transformer", 0.72), rec("lstm", 0.70)]
    guesses = {  # 100 examples; they disagree on 10, the transformer right on 6 of those, the lstm on 4
        "transformer": [int(i < 66 or 90 <= i < 96) for i in range(100)],
        "lstm": [int(i < 66 or 96 <= i < 100) for i in range(100)],
    }
    kept = {
        r.model: Outputs(predictions=[{"id": i, "label": 1, "prediction": p} for i, p in enumerate(guesses[r.model])])
        for r in records
    }
    row = headline_rows(experiments(records), lambda r: kept[r.model])[0]
    assert row["transformer"] == "0.720" and row["lstm"] == "0.700"  # no bold
    assert row["difference (95 % CI)"].startswith("≈ transformer − lstm: +0.02 [-")
    untested = headline_rows(experiments(records))[0]
    assert untested["transformer"] == "0.720" and untested["difference (95 % CI)"] == (
        "not tested: no per-example test outputs"
    )


def test_compare_pairs_runs_by_what_they_are_and_names_the_settings_and_both_figures_that_differ(tmp_path, capsys):
    from suite.report.compare import main as compare_main

    def rec(root, name, steps, acc, model="lstm"):
        config = {"trainer": {"max_steps": steps, "progress": root == "a"}, "data_dir": root}
        ResultRecord(
            status="ok", task="sentiment", dataset="sst2", model=model, seed=0, metrics={"accuracy": acc}, config=config
        ).write(tmp_path / root / name)

    rec("a", "1-sentiment-lstm-s0", 30, 0.61), rec("a", "0-sentiment-gru-s0", 30, 0.7, model="gru")
    rec("b", "2-sentiment-lstm-s0", 300, 0.78), rec("b", "0-sentiment-gru-s0", 30, 0.7, model="gru")
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert (
        "1-sentiment-lstm-s0 ~ 2-sentiment-lstm-s0: ok/ok, metrics DIFFERENT (A accuracy 0.61 / B accuracy 0.78)" in out
    )
    assert "settings differ: trainer.max_steps: 30 -> 300" in out and "missing" not in out
    assert "0-sentiment-gru-s0: ok/ok, metrics same (accuracy 0.7)" in out  # progress and data_dir compute nothing


def test_a_model_that_trains_nothing_reads_not_trained_and_an_old_record_no_curve():
    from dataclasses import replace

    from report_records import trained

    from suite.report.build import experiments

    old = replace(trained("lstm", "sentiment", "sst2", 64, 0.8), convergence={})
    lead = replace(trained("lstm", "summarization", "aeslc", 128, 0.1), convergence={}, steps=0)
    assert [e.converged for e in experiments([old, lead])] == ["no curve", "not trained"]
