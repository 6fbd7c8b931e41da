"""Sweeps through the local launchers; the SLURM config composes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from suite.runtime.record import RESULT_FILE, read_result
from tests.conftest import CONF

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "task=long_range",
    "task.seq_len=16",
    "task.n_train=32",
    "task.n_val=16",
    "task.n_test=16",
    "trainer=smoke",
    "logger=none",
    "model.d_model=32",
    "model=lstm,gru",
]


def sweep(tmp_path: Path, launcher: str) -> list:
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "suite.run", "-m", f"hydra/launcher={launcher}", f"hydra.sweep.dir={tmp_path}", *TINY],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return [read_result(p) for p in sorted(tmp_path.rglob(RESULT_FILE))]


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_local_launchers_run_every_point(tmp_path, launcher):
    records = sweep(tmp_path, launcher)
    assert sorted(r.model for r in records) == ["gru", "lstm"] and all(r.status == "ok" for r in records)


def test_slurm_launcher_config_composes():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.gpus_per_node == 1 and launcher.timeout_min == 240
