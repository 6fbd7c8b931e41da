"""The floating-point environment: denormals really flushed (probed on every thread), precision resolved per device."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from suite.run import execute
from suite.runtime import numerics
from suite.runtime.record import RESULT_FILE, ResultRecord, read_result
from tests.conftest import compose_config, shrink

X86 = pytest.mark.skipif(
    not torch.backends.cpu.get_cpu_capability().startswith("AVX"), reason="flush-to-zero is an x86 mode"
)
ROOT = Path(__file__).resolve().parents[1]


def run_cli(tmp_path: Path, *overrides: str) -> ResultRecord:
    """A smoke run in a fresh process (the flush mode is per thread and inherited by threads created later)."""
    env = {**os.environ, "OMP_NUM_THREADS": "2"}  # two threads: a worker thread must be flushed too
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "suite.run",
            "task=long_range",
            "model=lstm",
            "trainer=smoke",
            "logger=none",
            f"hydra.run.dir={tmp_path}",
            *overrides,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return read_result(tmp_path / RESULT_FILE)


@X86
@pytest.mark.parametrize("flush", [True, False])
def test_a_run_has_denormals_flushed_and_records_it(flush, tmp_path):
    record = run_cli(tmp_path, f"flush_denormals={str(flush).lower()}")
    # Probed after the run set it (a subnormal multiplied on every thread), not copied from the config.
    assert record.numerics["flush_denormals"] is flush
    assert record.precision == "fp32"  # the smoke profile's


@X86
def test_the_probe_tells_flushed_from_not():
    script = (
        "import torch; from suite.runtime import numerics as n; torch.set_num_threads(2); a = n.denormals_flushed(); "
        "b = n.set_flush_denormals(True); print(a, b)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["False", "True"]


def test_precision_resolves_per_device():
    cpu = torch.device("cpu")
    # no model: nothing declares a family whose measured policy could pick bf16, so fp32 on every kind (AMX too);
    # the per-family choices are tests/test_precision.py's
    assert numerics.resolve_precision("auto", cpu) == "fp32"
    assert numerics.resolve_precision("fp32", cpu) == "fp32" and numerics.resolve_precision("bf16", cpu) == "bf16"
    with pytest.raises(ValueError, match="precision must be one of"):
        numerics.resolve_precision("fp16", cpu)
    with pytest.raises(ValueError, match="resolve the precision first"):
        numerics.autocast("auto", cpu)


def test_bf16_autocast_computes_in_bf16():
    layer = torch.nn.Linear(8, 8)
    with numerics.autocast("bf16", torch.device("cpu")):
        assert layer(torch.randn(2, 8)).dtype == torch.bfloat16
    with numerics.autocast("fp32", torch.device("cpu")):
        assert layer(torch.randn(2, 8)).dtype == torch.float32


def test_bf16_training_runs_and_says_so(tmp_path):
    record = execute(shrink(compose_config("task=long_range", "model=transformer", "trainer.precision=bf16")), tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == "bf16" and record.steps == 3
    assert record.planned_steps == 3 and not record.shortened
