"""job=compress end to end: a trained checkpoint compressed, measured against itself, the weights left as they were.

Bad input is named before any work.
"""

import hashlib
from pathlib import Path

import pytest

from suite.run import execute
from suite.runtime import numerics
from tests.conftest import compose_config, shrink

TINY = ["task=long_range", "task.seq_len=16", "task.n_train=64", "task.n_val=16", "task.n_test=16"]
QUICK = ["job.min_time_s=0", "job.repeats=2", "job.warmup=1"]


def run(path, *overrides):
    return execute(shrink(compose_config(*TINY, *overrides)), path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Checkpoints of a tiny Transformer and LSTM (trainer=smoke)."""
    root = tmp_path_factory.mktemp("trained")
    out = {}
    for model in ("transformer", "lstm"):
        record = run(root / model, f"model={model}")
        assert record.status == "ok", record.error
        out[model] = root / model / "checkpoints" / "best.pt"
    return out


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_dynamic_int8_is_recorded_beside_the_uncompressed_model(trained, tmp_path):
    checkpoint = trained["transformer"]
    before = digest(checkpoint)
    record = run(
        tmp_path, "model=transformer", "job=compress", "compress=dynamic_int8", f"job.checkpoint={checkpoint}", *QUICK
    )
    assert record.status == "ok", record.error
    assert digest(checkpoint) == before  # the original weights are only read
    c = record.compression
    assert c["method"] == "dynamic_int8" and c["backend"] == "torch" and c["artefact"] == "compressed/model.pt"
    assert (tmp_path / "compressed" / "model.pt").stat().st_size == c["bytes"]
    assert c["weights"] == c["reference_weights"] == record.params
    assert c["linear_bytes"] < c["reference_linear_bytes"] and c["size_ratio"] > 1
    for key in (
        "latency_ms",
        "throughput_items_per_s",
    ):  # the same figures for both, and under bf16 autocast for the uncompressed one
        assert c[key] > 0 and c[f"reference_{key}"] > 0 and c[f"reference_bf16_autocast_{key}"] > 0
    assert c["throughput_speedup"] == pytest.approx(c["throughput_items_per_s"] / c["reference_throughput_items_per_s"])
    assert 0 <= c["others_cpu_share"] <= 1 and "reference_others_cpu_share" not in c  # how quiet the machine was, once
    assert c["latency_speedup"] == pytest.approx(c["reference_latency_ms"] / c["latency_ms"])
    assert (
        0 <= record.metrics["accuracy"] <= 1
        and "val_accuracy" in record.metrics
        and "accuracy" in c["reference_metrics"]
    )
    assert c["primary_delta"] == pytest.approx(record.metrics["accuracy"] - c["reference_metrics"]["accuracy"])
    assert record.steps == 0 and record.stop_reason == "compressed"


def test_onnx_fp32_through_the_job_gives_the_same_outputs(trained, tmp_path):
    record = run(
        tmp_path,
        "model=transformer",
        "job=compress",
        "compress=onnx_fp32",
        f"job.checkpoint={trained['transformer']}",
        *QUICK,
        "job.bf16_reference=false",
    )
    assert record.status == "ok", record.error
    c = record.compression
    assert c["artefact"] == "compressed/model.onnx" and c["max_abs_output_difference"] < 1e-4
    assert record.metrics["accuracy"] == pytest.approx(c["reference_metrics"]["accuracy"])
    assert "reference_bf16_autocast_latency_ms" not in c


def test_pruning_fine_tunes_through_the_trainer_and_stays_sparse(trained, tmp_path):
    record = run(
        tmp_path,
        "model=transformer",
        "job=compress",
        "compress=prune_80",
        "compress.fine_tune.max_steps=2",
        f"job.checkpoint={trained['transformer']}",
        *QUICK,
    )
    assert record.status == "ok", record.error
    c = record.compression
    assert record.steps == c["fine_tune_steps"] == 2 and c["target_sparsity"] == 0.8
    assert (
        c["nonzero_weights"] < 0.5 * c["reference_nonzero_weights"]
    )  # the Linear weights at 80 %, the embedding whole
    assert (
        tmp_path / "checkpoints" / "best.pt"
    ).is_file()  # the fine-tuning's own best weights, in this run's directory


def test_distillation_trains_the_student_the_job_names(trained, tmp_path):
    record = run(
        tmp_path,
        "model=transformer",
        "job=compress",
        "compress=distill_lstm",
        f"job.checkpoint={trained['transformer']}",
        *QUICK,
    )
    assert record.status == "ok", record.error
    c = record.compression
    assert (
        c["student"] == "lstm" and c["method"] == "distillation" and record.steps == 3
    )  # the run's trainer (smoke: 3 steps)
    assert c["weights"] != c["reference_weights"]
    assert "linear_size_ratio" not in c  # an LSTM's Linear layers are not the Transformer's: no ratio between them


METHODS = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "conf" / "compress").glob("*.yaml"))
FOR_LSTM = {"prune_units"}  # methods that apply to a recurrent model only
SEQ2SEQ_ONLY = {"distill_sequence"}  # test_compress_distill runs it on a translation model, in bf16 too


@pytest.mark.parametrize("method", [m for m in METHODS if m not in SEQ2SEQ_ONLY])
def test_every_method_runs_with_a_bf16_trainer(trained, tmp_path, method):
    # Fine-tuning and distillation train under bf16 autocast whatever the CPU; the compressed model is scored and
    # timed in fp32.
    model = "lstm" if method in FOR_LSTM else "transformer"
    short = (
        ["compress.fine_tune.max_steps=2"]
        if compose_config("job=compress", f"compress={method}").compress.get("fine_tune") is not None
        else []
    )
    record = run(
        tmp_path,
        f"model={model}",
        "job=compress",
        f"compress={method}",
        f"job.checkpoint={trained[model]}",
        "trainer.precision=bf16",
        *QUICK,
        *short,
    )
    assert record.status == "ok", record.error
    assert record.precision == "fp32" and record.compression["reference_bf16_autocast_latency_ms"] > 0
    assert record.steps == record.compression.get("fine_tune_steps", 0)


def test_no_checkpoint_is_named_with_the_command_that_trains_one(tmp_path):
    record = run(tmp_path, "model=transformer", "job=compress", "compress=dynamic_int8", *QUICK)
    assert record.status == "failed" and "job.checkpoint=<run dir>/checkpoints/best.pt" in record.error
    assert (
        "python -m suite.run task=long_range model=transformer" in record.error
        and not (tmp_path / "compressed").exists()
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["model=lstm", "job=compress", "compress=prune_heads"],
            "compress=structured_pruning .*applies to Transformer encoders",
        ),
        (
            ["model=transformer", "job=compress", "compress=prune_50", "compress.sparsity=1.2"],
            r"compress.sparsity must be in \[0, 1\)",
        ),
        (["model=transformer", "job=compress"], "job=compress needs a method: compress=<name>"),
        (["model=lstm", "job=compress", "compress=onnx_int8"], "compress=onnx.*packed sequences"),
        (
            ["model=transformer", "job=compress", "compress=dynamic_int8", "compress.backend=tensorrt"],
            "compress.backend must be one of",
        ),
    ],
)
def test_bad_input_is_named_before_any_work(trained, tmp_path, overrides, message):
    model = overrides[0].split("=")[1]
    record = run(tmp_path, *overrides, f"job.checkpoint={trained[model]}", *QUICK)
    assert record.status == "failed" and __import__("re").search(message, record.error), record.error
    assert not (tmp_path / "compressed").exists() or not any((tmp_path / "compressed").iterdir())


def test_a_checkpoint_that_does_not_fit_is_named(trained, tmp_path):
    record = run(
        tmp_path,
        "model=transformer",
        "model.head.hidden=16",
        "job=compress",
        "compress=bf16_weights",
        f"job.checkpoint={trained['transformer']}",
        *QUICK,
    )
    assert (
        record.status == "failed"
        and "does not fit this model" in record.error
        and str(trained["transformer"]) in record.error
    )


def test_every_method_config_builds_and_every_method_has_a_config():
    import importlib
    import inspect

    from suite.compress.method import Method
    from suite.jobs.compress import method_of
    from tests.conftest import CONF

    built = set()
    for path in sorted((CONF / "compress").glob("*.yaml")):
        method, _ = method_of(compose_config("job=compress", f"compress={path.stem}"))
        built.add(type(method))
    modules = [
        importlib.import_module(f"suite.compress.{p.stem}")
        for p in (CONF.parent / "suite" / "compress").glob("*.py")
        if p.stem != "__init__"
    ]
    methods = {
        c
        for m in modules
        for _, c in inspect.getmembers(m, inspect.isclass)
        if issubclass(c, Method) and c is not Method
    }
    assert methods == built


# --- a sequence-to-sequence model (Multi30k subset): quantized, scored by BLEU, its generation timed ------------------


@pytest.fixture(scope="module")
def translators(subset_data, tmp_path_factory):
    """Checkpoints of a tiny translation Transformer and LSTM trained on the Multi30k subset (trainer=smoke), and their
    configs' overrides."""
    from tests.conftest import TINY_TASK

    root = tmp_path_factory.mktemp("translators")
    out = {}
    for model in ("transformer", "lstm"):
        overrides = ["task=translation", f"model={model}", *TINY_TASK["translation"], f"data_dir={subset_data}"]
        record = execute(shrink(compose_config(*overrides)), root / model)
        assert record.status == "ok", record.error
        out[model] = (overrides, root / model / "checkpoints" / "best.pt")
    return out


@pytest.mark.parametrize(
    "model, method",
    [
        ("transformer", "dynamic_int8"),
        ("transformer", "dynamic_int8_embedding"),
        ("transformer", "dynamic_int8_torchao"),
        ("transformer", "bf16_weights"),
        ("lstm", "dynamic_int8"),
        ("lstm", "bf16_weights"),
    ],
)
def test_a_translation_model_is_quantized_scored_and_its_generation_timed(translators, tmp_path, model, method):
    overrides, checkpoint = translators[model]
    record = execute(
        shrink(
            compose_config(*overrides, "job=compress", f"compress={method}", f"job.checkpoint={checkpoint}", *QUICK)
        ),
        tmp_path,
    )
    if (
        model == "lstm" and method == "bf16_weights" and not numerics.cpu_bf16_lstm()
    ):  # an AVX2-only CPU: refused by name, before any work
        assert (
            record.status == "failed"
            and "no bf16 LSTM kernel" in record.error
            and not (tmp_path / "compressed").exists()
        )
        return
    assert record.status == "ok", record.error
    c = record.compression
    assert (
        "bleu" in record.metrics
        and "bleu" in c["reference_metrics"]
        and c["primary_delta"] == pytest.approx(record.metrics["bleu"] - c["reference_metrics"]["bleu"])
    )
    assert (
        c["generate_tokens_per_s"] > 0
        and c["reference_generate_tokens_per_s"] > 0
        and c["reference_bf16_autocast_generate_tokens_per_s"] > 0
    )
    assert c["generate_speedup"] == pytest.approx(c["generate_tokens_per_s"] / c["reference_generate_tokens_per_s"])
    assert c["size_ratio"] > 1.2 and record.speed["generate_tokens_per_s"] == c["generate_tokens_per_s"]


def test_onnx_refuses_a_translation_model_naming_what_it_cannot_export(translators, tmp_path):
    overrides, checkpoint = translators["transformer"]
    record = execute(
        shrink(
            compose_config(*overrides, "job=compress", "compress=onnx_fp32", f"job.checkpoint={checkpoint}", *QUICK)
        ),
        tmp_path,
    )
    assert (
        record.status == "failed" and "compress=onnx (precision fp32): a sequence-to-sequence model" in record.error
    ), record.error
    assert not (tmp_path / "compressed").exists()  # refused before any work
