"""End to end through the runner: every task and model writes a valid result.json."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.utils import instantiate

from suite.run import execute
from suite.runtime.record import RESULT_FILE, read_result
from tests.conftest import CONF, TINY_TASK, compose_config, need_data, shrink

ROOT = Path(__file__).resolve().parents[1]
TASKS = sorted(p.stem for p in (CONF / "task").glob("*.yaml"))
# tasks that read files with their default dataset (long_range generates its data, image's digits ship with sklearn)
DATA_OF = {
    "sentiment": ("sentiment", "sst2"),
    "protein": ("protein", "amp_scanner_v2"),
    "dna": ("dna", "uci_splice_junction"),
    "news_topic": ("summarization", "bbc_news_summary"),
    "translation": ("translation", "multi30k"),
    "summarization": ("summarization", "aeslc"),
    "language_model": ("summarization", "bbc_news_summary"),
    "text": ("sentiment", "sst2"),
}
# Every dataset config of the image and sequence tasks: (task, override, data it reads or None).
DATASETS = [
    ("image", "task.dataset=digits", None),
    ("image", "task.dataset=usps", ("image", "usps")),
    ("image", "task.dataset=mnist", ("image", "MNIST")),
    ("image", "task.dataset=fashion_mnist", ("image", "FashionMNIST")),
    ("protein", "task/data=amp_scanner_v2", ("protein", "amp_scanner_v2")),
    ("dna", "task/data=uci_splice_junction", ("dna", "uci_splice_junction")),
    ("text", "task/data=sst2_plain", ("sentiment", "sst2")),
]
METRIC_RANGE = {
    "accuracy": (0.0, 1.0),
    "bleu": (0.0, 100.0),
    "rougeL": (0.0, 100.0),
    "neg_bits_per_byte": (-float("inf"), 0.0),
}  # each task's primary metric
REQUIRED = {
    "status",
    "task",
    "dataset",
    "model",
    "seq_len",
    "params",
    "seed",
    "metrics",
    "speed",
    "train_seconds",
    "steps",
    "device",
    "versions",
    "git_commit",
    "config",
}


def run_tiny(tmp_path: Path, *overrides: str):
    cfg = shrink(compose_config(*overrides))
    return execute(cfg, tmp_path)


def primary_metric(task: str) -> str:
    """The metric the task selects models by (instantiating a task reads no data)."""
    return instantiate(compose_config(f"task={task}").task).primary_metric


# The GRU and the RNN take the LSTM's path through every task (a recurrent backbone, the same heads and data): they run
# in the slow set, which .ci/run runs too, so that the fast set stays within its time.
@pytest.mark.parametrize(
    "model",
    ["transformer", "lstm", pytest.param("gru", marks=pytest.mark.slow), pytest.param("rnn", marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("task", TASKS)
def test_every_task_runs_end_to_end(task, model, tmp_path, request):
    if task in DATA_OF:
        need_data(*DATA_OF[task])
    tiny = [*TINY_TASK[task], f"data_dir={request.getfixturevalue('subset_data')}"] if task in TINY_TASK else []
    record = run_tiny(tmp_path, f"task={task}", f"model={model}", *tiny)
    assert record.status == "ok", record.error
    data = json.loads((tmp_path / RESULT_FILE).read_text())
    assert REQUIRED <= data.keys()
    assert data["params"] > 0 and data["steps"] == 3 and data["seq_len"] > 0
    metric = primary_metric(task)
    low, high = METRIC_RANGE[metric]
    assert low <= data["metrics"][metric] <= high and low <= data["metrics"][f"val_{metric}"] <= high
    assert data["speed"]["train_tokens_per_s"] > 0 and data["speed"]["infer_items_per_s"] > 0
    assert data["config"]["model"]["name"] == model
    assert (tmp_path / "checkpoints" / "best.pt").exists()
    # the learning curve and its verdict (3 steps: a curve too short to judge, said so)
    assert data["curves"]["step"][-1] == 3 and len(data["curves"][f"val_{metric}"]) == len(data["curves"]["step"])
    assert data["convergence"]["verdict"] == "too few evaluations" and data["convergence"]["metric"] == metric
    if task in ("sentiment", "dna", "protein", "image"):  # a classifier: the labels it was scored on, counted
        scored = (tmp_path / "predictions_test.jsonl").read_text().splitlines()
        assert sum(data["test_label_counts"].values()) == len(scored) > 0


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_copy_head_runs_end_to_end(model, tmp_path, subset_data):
    record = run_tiny(
        tmp_path,
        "task=summarization",
        f"model={model}",
        "model/copy=pointer",
        *TINY_TASK["summarization"],
        f"data_dir={subset_data}",
    )
    assert record.status == "ok", record.error
    assert record.config["model"]["copy"]["_target_"] == "suite.models.copy.PointerGenerator"
    assert record.model == f"{model}+copy"  # never pooled with the same model without copying
    assert 0.0 <= record.metrics["rougeL"] <= 100.0 and record.metrics["loss"] > 0


def test_every_dataset_is_listed_above():
    from tasks.image import SOURCES

    listed = {override.split("=")[1] for _, override, _ in DATASETS}
    assert set(SOURCES) | {p.stem for p in (CONF / "task" / "data").glob("*.yaml")} == listed


@pytest.mark.parametrize("task, dataset, data", DATASETS, ids=[o.split("=")[1] for _, o, _ in DATASETS])
def test_every_dataset_runs_end_to_end(task, dataset, data, tmp_path):
    # The test above runs every model on each task's default dataset; here each dataset, with the attention model.
    if data:
        need_data(*data)
    record = run_tiny(tmp_path, f"task={task}", dataset, "model=vit" if task == "image" else "model=transformer")
    assert record.status == "ok", record.error
    assert read_result(tmp_path / RESULT_FILE).dataset == dataset.split("=")[1]
    assert record.steps == 3 and 0.0 <= record.metrics["accuracy"] <= 1.0
    assert record.artifacts == ["predictions_test.jsonl", "confusion_matrix.png"]  # the per-example outputs, then the
    assert (tmp_path / "confusion_matrix.png").stat().st_size > 0  # task's own artifacts


EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))


JOB_LIMITS = {  # measurement jobs, cut to one call
    "train_job": [
        "trainer.max_steps=1",
        "trainer.limit_train_batches=1",
        "trainer.limit_eval_batches=1",
        "trainer.eval_batch_size=16",
        "trainer.progress=false",
    ],
    "speed_job": ["job.min_time_s=0", "job.repeats=1", "job.warmup=1", "job.measure_peak=false", "task.seq_len=32"],
    "gradient_flow_job": ["job.n_models=1", "job.batch_size=4", "task.seq_len=32"],
    "context_use_job": [
        "trainer.max_steps=1",
        "trainer.limit_train_batches=1",
        "trainer.limit_eval_batches=1",
        "trainer.eval_batch_size=16",
        "trainer.progress=false",
        "job.contexts=[4,8]",
        "job.n_targets=8",
    ],
    "generation_cost_job": [
        "job.lengths=[4,8]",
        "job.compare_tokens=4",
        "job.prompt_tokens=2",
        "job.repeats=1",
        "job.warmup=0",
        "job.min_time_s=0",
        "job.vocab_size=40",
    ],
    "compress_job": ["job.min_time_s=0", "job.repeats=1", "job.warmup=1", "job.bf16_reference=false"],
}
TRAINS = {"train_job", "context_use_job"}  # jobs that fit a model (context_use without a checkpoint trains first)


EXPERIMENT_TINY = {  # their ListOps at 1-2K: thousands of expressions take from seconds to minutes to generate
    lra: ["task.seq_len=64", "task.n_train=64", "task.n_val=16", "task.n_test=16"] for lra in ("lra", "lra_cpu")
}
# Forced bf16 where the job's precision path is another experiment's too (the compression job scores in fp32 whatever
# the trainer says; tuning trains as the train job does): in the slow set, which .ci/run runs too.
SLOW_STEPS = {("compression", "bf16"), ("tune", "bf16")}
assert {e for e, _ in SLOW_STEPS} <= set(EXPERIMENTS), "SLOW_STEPS names an experiment conf/experiment/ lacks"


@pytest.mark.parametrize(  # precision forced: each CPU kind runs the other kind's path too
    ("experiment", "precision"),
    [
        pytest.param(e, p, marks=[pytest.mark.slow] if (e, p) in SLOW_STEPS else [], id=f"{e}-{p}")
        for e in EXPERIMENTS
        for p in ("fp32", "bf16")
    ],
)
def test_every_experiment_runs_a_step(experiment, precision, tmp_path, request):
    composed = compose_config(f"experiment={experiment}")
    task, job = composed.task.name, composed.job._target_.rpartition(".")[2]
    if task in DATA_OF:
        need_data(*DATA_OF[task])
    tiny = [*TINY_TASK[task], f"data_dir={request.getfixturevalue('subset_data')}"] if task in TINY_TASK else []
    tiny += EXPERIMENT_TINY.get(experiment, [])
    limits = [*JOB_LIMITS[job], f"trainer.precision={precision}"] + (
        [f"job.precision={precision}"] if "precision" in composed.job else []
    )
    if (
        job == "compress_job"
    ):  # it compresses trained weights: a tiny model of the experiment's task, trained for a step
        teacher = execute(
            shrink(
                compose_config(
                    f"experiment={experiment}", "job=train", "logger=none", *JOB_LIMITS["train_job"], *tiny, tiny=False
                )
            ),
            tmp_path / "teacher",
        )
        assert teacher.status == "ok", teacher.error
        limits = [*limits, f"job.checkpoint={tmp_path / 'teacher' / 'checkpoints' / 'best.pt'}"]
    cfg = shrink(
        compose_config(f"experiment={experiment}", "logger=none", *limits, *tiny, tiny=False)
    )  # its own trainer, cut short
    record = execute(cfg, tmp_path / "run")
    assert record.status == "ok", record.error
    assert record.steps == (1 if job in TRAINS else 0)
    # A compressed model is scored and timed as it runs (fp32 inputs); the gradient probe measures fp32 gradients
    # whatever the trainer says.
    assert record.precision == {"compress_job": "fp32", "gradient_flow_job": None}.get(job, precision)


RECIPES = sorted(p.stem for p in (CONF / "recipe").glob("*.yaml"))


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_applies_to_its_task_and_trainer_only(recipe, tmp_path, request):
    # conf/recipe/<task>_<trainer>.yaml is picked by the defaults list for that pair alone.
    task, _, trainer = recipe.rpartition("_")
    own = compose_config(f"task={task}", f"trainer={trainer}", tiny=False)
    other = compose_config(f"task={task}", "trainer=full" if trainer != "full" else "trainer=quick", tiny=False)
    assert own.trainer.time_budget_s != other.trainer.time_budget_s or own.trainer.max_steps != other.trainer.max_steps
    assert (
        compose_config(f"task={task}", f"trainer={trainer}", "trainer.max_steps=7", tiny=False).trainer.max_steps == 7
    )  # the command line wins
    if task in DATA_OF:
        need_data(*DATA_OF[task])
    tiny = [*TINY_TASK[task], f"data_dir={request.getfixturevalue('subset_data')}"] if task in TINY_TASK else []
    cfg = shrink(
        compose_config(f"task={task}", f"trainer={trainer}", "logger=none", *JOB_LIMITS["train_job"], *tiny, tiny=False)
    )
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error


def test_lead_baseline_is_evaluated_without_training(tmp_path, subset_data):
    record = run_tiny(
        tmp_path, "task=summarization", "model=lead", *TINY_TASK["summarization"], f"data_dir={subset_data}"
    )
    assert record.status == "ok", record.error
    data = json.loads((tmp_path / RESULT_FILE).read_text())
    assert data["params"] == 0 and data["steps"] == 0 and data["stop_reason"] == "no_parameters"
    assert {"rouge1", "rouge2", "rougeL", "ann_rougeL", "val_rougeL"} <= data["metrics"].keys()
    assert 0.0 < data["metrics"]["rougeL"] <= 100.0  # Lead-1 shares words with the subjects


def test_same_seed_same_metrics(tmp_path):
    a = run_tiny(
        tmp_path / "a", "task=long_range", "model=transformer", "trainer.max_steps=5", "trainer.limit_train_batches=5"
    )
    b = run_tiny(
        tmp_path / "b", "task=long_range", "model=transformer", "trainer.max_steps=5", "trainer.limit_train_batches=5"
    )
    c = run_tiny(
        tmp_path / "c",
        "task=long_range",
        "model=transformer",
        "trainer.max_steps=5",
        "trainer.limit_train_batches=5",
        "seed=1",
    )
    assert a.metrics == b.metrics
    assert a.metrics != c.metrics


def test_wandb_offline_run_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    record = run_tiny(tmp_path, "task=long_range", "model=lstm", "logger=wandb")
    assert record.status == "ok", record.error
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb"))


def test_missing_dataset_names_path_and_make_data(tmp_path):
    record = run_tiny(tmp_path, "task=sentiment", "model=lstm", f"data_dir={tmp_path / 'nowhere'}")
    assert record.status == "failed"
    assert str(tmp_path / "nowhere" / "sentiment" / "sst2") in record.error and "make data" in record.error
    assert read_result(tmp_path / RESULT_FILE).status == "failed"


def test_malformed_line_names_file_and_line(tmp_path):
    bad = tmp_path / "data" / "sentiment" / "sst2"
    bad.mkdir(parents=True)
    (bad / "train.tsv").write_text("sentence\tlabel\ngood film \t1\nbad film \t0\n")
    (bad / "dev.tsv").write_text("sentence\tlabel\nfine \t1\nnot fine \tmaybe\n")
    (bad / "test.tsv").write_text("sentence\tlabel\nok \t1\n")
    record = run_tiny(tmp_path / "run", "task=sentiment", "model=lstm", f"data_dir={tmp_path / 'data'}")
    assert record.status == "failed"
    assert f"{bad / 'dev.tsv'}:3:" in record.error and "'maybe'" in record.error


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "WANDB_MODE": "offline", "HYDRA_FULL_ERROR": "0"}
    return subprocess.run(
        [sys.executable, "-m", "suite.run", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_unknown_choice_lists_the_options():
    out = cli("task=nope")
    assert out.returncode != 0
    assert "nope" in out.stderr and "sentiment" in out.stderr and "long_range" in out.stderr
    out = cli("model=nope")
    assert "lstm" in out.stderr and "transformer" in out.stderr


def test_multirun_records_a_failure_and_goes_on(tmp_path):
    # The transformer's 4 heads cannot split d_model=30: that job fails, the LSTM job still runs.
    out = cli(
        "-m",
        f"hydra.sweep.dir={tmp_path}",
        "task=long_range",
        "model=transformer,lstm",
        "trainer=smoke",
        "logger=none",
        "model.d_model=30",
        "task.seq_len=16",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    records = {r.model: r for r in (read_result(p) for p in tmp_path.rglob(RESULT_FILE))}
    assert records["transformer"].status == "failed" and "divisible" in records["transformer"].error
    assert records["lstm"].status == "ok"
    assert "result:" in out.stdout


def test_single_run_failure_exits_nonzero(tmp_path):
    out = cli(
        f"hydra.run.dir={tmp_path}",
        "task=sentiment",
        f"data_dir={tmp_path / 'nowhere'}",
        "trainer=smoke",
        "logger=none",
    )
    assert out.returncode == 1
    assert "make data" in out.stdout and read_result(tmp_path / RESULT_FILE).status == "failed"


def test_evaluate_job_rescores_a_checkpoint_as_the_training_run_did(tmp_path, subset_data):
    common = [
        "task=summarization",
        "model=transformer",
        *TINY_TASK["summarization"],
        f"data_dir={subset_data}",
        "trainer.max_steps=3",
    ]
    trained = run_tiny(tmp_path / "train", *common)
    assert trained.status == "ok", trained.error
    checkpoint = tmp_path / "train" / "checkpoints" / "best.pt"
    # The same weights and decoding give the training run's own test figures.
    again = run_tiny(tmp_path / "eval", *common, "job=evaluate", f"job.checkpoint={checkpoint}")
    assert again.status == "ok", again.error
    assert again.steps == 0 and again.stop_reason == "evaluated"
    tested = {k: v for k, v in trained.metrics.items() if not k.startswith("val_")}
    assert {k: again.metrics[k] for k in tested} == pytest.approx(tested)
    # Both runs leave the test set's texts beside the record, the same texts.
    assert trained.artifacts == again.artifacts == ["outputs_test.jsonl"]
    rows = [json.loads(line) for line in (tmp_path / "train" / "outputs_test.jsonl").read_text().splitlines()]
    assert 0 < len(rows) <= trained.split_sizes["test"] and set(rows[0]) == {
        "source",
        "reference",
        "output",
        "scores",  # ROUGE is a mean over examples: each one's own, for a paired comparison
    }  # smoke decodes a few batches
    assert (tmp_path / "eval" / "outputs_test.jsonl").read_text() == (
        tmp_path / "train" / "outputs_test.jsonl"
    ).read_text()
    # Validation alone, decoded with task.search (here beam 1, which is greedy: the training run's
    # validation decoding), and no test figure computed: settings are chosen without looking at test.
    val_only = run_tiny(
        tmp_path / "val",
        *common,
        "job=evaluate",
        f"job.checkpoint={checkpoint}",
        "job.splits=[val]",
        "task.search.beam_size=1",
    )
    assert val_only.status == "ok", val_only.error
    assert val_only.metrics == pytest.approx({k: v for k, v in trained.metrics.items() if k.startswith("val_")})


def test_evaluate_job_names_a_missing_or_mismatched_checkpoint(tmp_path, subset_data):
    common = [
        "task=summarization",
        "model=transformer",
        *TINY_TASK["summarization"],
        f"data_dir={subset_data}",
        "job=evaluate",
    ]
    missing = run_tiny(tmp_path / "a", *common, f"job.checkpoint={tmp_path / 'none.pt'}")
    assert (
        missing.status == "failed"
        and str(tmp_path / "none.pt") in missing.error
        and "checkpoints/best.pt" in missing.error
    )
    trained = run_tiny(
        tmp_path / "b",
        "task=summarization",
        "model=transformer",
        *TINY_TASK["summarization"],
        f"data_dir={subset_data}",
        "trainer.max_steps=1",
    )
    assert trained.status == "ok", trained.error
    wrong = run_tiny(
        tmp_path / "c",
        *common,
        f"job.checkpoint={tmp_path / 'b' / 'checkpoints' / 'best.pt'}",
        "model.decoder.n_layers=2",
    )
    assert wrong.status == "failed" and "does not fit this model" in wrong.error


def test_evaluate_job_decodes_validation_with_the_search_it_scores():
    from functools import partial

    from suite.generation.search import beam_search
    from suite.jobs.evaluate import evaluation_task

    task = evaluation_task(compose_config("task=summarization", "task.search.length_penalty=1.7").task)
    assert isinstance(task.val_search, partial) and task.val_search.func is beam_search
    assert task.val_search.keywords["length_penalty"] == 1.7
    assert (
        task.evaluation_setting() == "beam_search beam_size 4, length_penalty 1.7, no_repeat_ngram 0, min_len 0"
    )  # the record's scored_with
    assert (
        evaluation_task(compose_config("task=sentiment").task).name == "sentiment"
    )  # a task that does not decode is unchanged


def test_test_predictions_are_kept_and_reproduce_the_recorded_metrics(tmp_path):
    """predictions_test.jsonl: every test example once, in the split's order, and the accuracy and macro-F1 the
    record holds, recomputed from it; job=evaluate keeps its own when it scores test, none when only validation."""
    from sklearn.metrics import accuracy_score, f1_score

    from suite.runtime.predictions import PREDICTIONS_FILE, read_predictions

    record = run_tiny(tmp_path / "train", "task=long_range", "model=transformer", "task.n_test=40")
    assert record.status == "ok", record.error
    rows = read_predictions(tmp_path / "train")
    assert PREDICTIONS_FILE in record.artifacts and [r["id"] for r in rows] == list(range(40))
    labels, preds = [r["label"] for r in rows], [r["prediction"] for r in rows]
    assert record.metrics["accuracy"] == pytest.approx(accuracy_score(labels, preds))
    assert record.metrics["macro_f1"] == pytest.approx(f1_score(labels, preds, average="macro", zero_division=0))
    best = tmp_path / "train" / "checkpoints" / "best.pt"
    for splits, kept in (("[val]", False), ("[val,test]", True)):
        again = run_tiny(
            tmp_path / splits, "task=long_range", "model=transformer", "task.n_test=40", "job=evaluate",
            f"job.checkpoint={best}", f"job.splits={splits}",
        )  # fmt: skip
        assert again.status == "ok", again.error
        assert (tmp_path / splits / PREDICTIONS_FILE).is_file() == kept
    assert read_predictions(tmp_path / "[val,test]") == rows  # the same weights, the same test predictions


def test_a_malformed_predictions_file_names_its_line(tmp_path):
    from suite.runtime.predictions import read_predictions

    (tmp_path / "predictions_test.jsonl").write_text('{"id": 0}\n{"id": 1\n')
    with pytest.raises(ValueError, match=r"predictions_test.jsonl:2: not a JSON line"):
        read_predictions(tmp_path)
    with pytest.raises(FileNotFoundError, match="no per-example test predictions"):
        read_predictions(tmp_path / "nowhere")
