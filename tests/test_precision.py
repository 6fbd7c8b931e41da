"""Every CPU kind: the per-family precision policy, bf16 paths forced on whatever CPU runs the tests, the matmul peak.

Also the benchmark that re-checks the policy.
"""

import pytest
import torch

from suite.measure.flops import matmul_peak
from suite.models.rnn import RecurrentEncoder, run_cell
from suite.run import execute
from suite.runtime import numerics
from suite.runtime.precision_policy import ATTENTION, CONVOLUTION, POLICY, RECURRENT_CELLS, SCAN, family_of
from suite.tools.precision_check import Row
from suite.tools.precision_check import main as precision_check
from tests.conftest import TINY_TASK, compose_config, shrink

CPU = torch.device("cpu")


@pytest.fixture
def amx(monkeypatch):
    """Pretend the CPU has AMX tiles (the policy's other branch on a machine without them)."""
    monkeypatch.setattr(numerics, "fast_bf16", lambda device: device.type == "cpu")
    monkeypatch.setattr(numerics, "cpu_bf16_kind", lambda: "amx")


def model_of(name: str) -> torch.nn.Module:
    cfg = shrink(compose_config("task=long_range", f"model={name}"))
    from hydra.utils import instantiate

    from suite.jobs.prepare import prepare

    return prepare(cfg, CPU, instantiate(cfg.task)).model


@pytest.mark.parametrize(
    "name, family",
    [
        ("transformer", ATTENTION),
        ("lstm", RECURRENT_CELLS),
        ("gru", RECURRENT_CELLS),
        ("rnn", RECURRENT_CELLS),
        ("mingru", SCAN),
        ("mamba", SCAN),
        ("s4d", CONVOLUTION),
    ],
)
def test_auto_follows_the_declared_familys_measured_policy_on_amx(amx, name, family):
    model = model_of(name)
    assert family_of(model) == family  # declared by the backbone, not guessed from its class
    choice = numerics.choose("auto", CPU, model)
    assert choice.precision == ("bf16" if family == ATTENTION else "fp32")
    assert choice.reason.startswith(f"auto: {family} on amx: ")
    measured = POLICY[("amx", family)].measured
    assert (measured in choice.reason) if measured else "not measured for this family" in choice.reason


@pytest.mark.parametrize("unit", [None, "avx512_bf16"])
def test_without_amx_auto_is_fp32_for_every_family_with_its_measurement_and_a_forced_precision_says_so(
    monkeypatch, unit
):
    monkeypatch.setattr(numerics, "fast_bf16", lambda device: False)
    monkeypatch.setattr(numerics, "cpu_bf16_kind", lambda: unit)
    for name in ("transformer", "lstm", "mamba", "s4d"):
        choice, family = numerics.choose("auto", CPU, model_of(name)), family_of(model_of(name))
        kind = unit or "none"
        assert choice == numerics.Choice("fp32", f"auto: {family} on {kind}: {POLICY[(kind, family)].measured}")
    assert numerics.choose("bf16", CPU, model_of("lstm")) == numerics.Choice("bf16", "set: precision=bf16")
    with pytest.raises(ValueError, match="precision must be one of"):
        numerics.choose("fp16", CPU)


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_a_training_record_keeps_the_choice_and_its_reason(amx, name, tmp_path):
    # On a (pretended) AMX CPU, auto trains the Transformer in bf16 and the LSTM in fp32, and the record says why.
    record = execute(shrink(compose_config("task=long_range", f"model={name}", "trainer.precision=auto")), tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == ("bf16" if name == "transformer" else "fp32")
    assert record.precision_reason == numerics.choose("auto", CPU, model_of(name)).reason


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("task", ["long_range", "translation"])
def test_recurrent_models_train_and_score_in_bf16_on_any_cpu(name, task, tmp_path, request):
    # Translation runs the LSTM decoder unpacked, where oneDNN's bf16 LSTM fails to build on an AVX2-only CPU.
    extra = [*TINY_TASK[task], f"data_dir={request.getfixturevalue('subset_data')}"] if task in TINY_TASK else []
    record = execute(
        shrink(compose_config(f"task={task}", f"model={name}", "trainer.precision=bf16", *extra)), tmp_path
    )
    assert record.status == "ok", record.error
    assert record.precision == "bf16" and record.precision_reason == "set: precision=bf16" and record.steps == 3


def test_an_lstm_under_bf16_autocast_without_a_bf16_kernel_runs_in_fp32(monkeypatch):
    encoder = RecurrentEncoder(16, "lstm", n_layers=2).eval()
    x = torch.randn(3, 7, 16)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 5:] = True
    with torch.no_grad():
        fp32 = [encoder(x), encoder(x, pad)]
        monkeypatch.setattr(numerics, "cpu_bf16_lstm", lambda: False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            fallback = [encoder(x), encoder(x, pad)]
            out, (h, c) = run_cell(encoder.rnn, x.bfloat16())
    for a, b in zip(fp32, fallback):
        assert b.dtype == torch.float32 and torch.equal(a, b)  # the same fp32 kernel, not an approximation of it
    assert out.dtype == h.dtype == c.dtype == torch.float32


def test_the_matmul_peak_is_the_best_round_and_measured_once_per_process():
    peak = matmul_peak(CPU, 128, torch.float32, rounds=3, round_seconds=0.02, warmup_seconds=0.05)
    assert len(peak.rounds) == 3 and peak.flops == max(peak.rounds) > 0
    assert 0 <= peak.spread < 1 and peak.dtype == "float32" and peak.size == 128
    assert (
        matmul_peak(CPU, 128, torch.float32, rounds=3, round_seconds=0.02, warmup_seconds=0.05) is peak
    )  # cached: every point divides by the same


def test_precision_check_prints_both_precisions_side_by_side(capsys):
    rows = precision_check(
        [
            "--models",
            "transformer,lstm",
            "--length",
            "16",
            "--batch",
            "2",
            "--repeats",
            "2",
            "--min-seconds",
            "0",
            "--no-peak",
            "model.d_model=32",
        ]
    )
    out = capsys.readouterr().out
    assert [r.model for r in rows] == ["transformer", "lstm"] and [r.family for r in rows] == [
        "attention",
        "recurrent cells",
    ]
    for r in rows:
        assert min(r.train.values()) > 0 and min(r.infer.values()) > 0
        assert f"| {r.model} | {r.family} | {r.auto} |" in out and f"{r.ratio('train'):.2f}x" in out


def test_a_contradicted_pick_is_one_beyond_the_noise():
    row = lambda auto, ratio: Row(
        "m", "attention", auto, {"fp32": 100.0, "bf16": 100.0 * ratio}, {"fp32": 1.0, "bf16": 1.0}
    )  # noqa: E731
    assert row("bf16", 0.5).contradicted() and row("fp32", 1.5).contradicted()
    assert (
        not row("bf16", 1.5).contradicted()
        and not row("fp32", 0.5).contradicted()
        and not row("fp32", 1.05).contradicted()
    )


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_flops_are_counted_alike_in_either_precision(model, tmp_path):
    from tests.test_measure import speed_cfg

    records = [execute(speed_cfg(model, 16, f"job.precision={p}"), tmp_path / p) for p in ("fp32", "bf16")]
    assert all(r.status == "ok" for r in records), [r.error for r in records]
    for key in ("flops_train_step", "flops_infer"):
        assert records[0].speed[key] == records[1].speed[key] > 0


def test_compare_never_calls_runs_of_another_precision_or_cpu_kind_the_same(tmp_path, capsys):
    from suite.report.compare import main as compare_main
    from suite.runtime.record import ResultRecord

    def rec(root, name, precision, capability):
        ResultRecord(
            status="ok",
            task="sentiment",
            dataset="sst2",
            model="transformer",
            seed=0,
            metrics={"accuracy": 0.8},
            precision=precision,
            device="cpu:AMD EPYC x1 threads",
            numerics={"cpu_capability": capability, "cpu_bf16_unit": None},
            speed={"train_tokens_per_s": 100.0, "infer_tokens_per_s": 200.0},
        ).write(tmp_path / root / name)

    rec("a", "same", "fp32", "AVX2"), rec("b", "same", "fp32", "AVX2")
    rec("a", "precision", "fp32", "AVX2"), rec("b", "precision", "bf16", "AVX2")
    rec("a", "cpu", "fp32", "AVX512"), rec("b", "cpu", "fp32", "AVX2")
    assert compare_main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "same: ok/ok, metrics same (accuracy 0.8); throughput B/A: train 1.00x" in out
    assert (
        "precision: ok/ok, metrics DIFFERENT (accuracy 0.8); throughput B/A (precision A fp32 "
        "/ B bf16: not a reproduction)" in out
    )
    assert (
        "cpu: ok/ok, metrics DIFFERENT (accuracy 0.8); throughput B/A (CPU A cpu:AMD EPYC (AVX512, bf16 unit None) / "
        "B cpu:AMD EPYC (AVX2, bf16 unit None)" in out
    )
    assert "1 of 3 runs give identical test metrics and status in the same precision on the same CPU kind" in out
