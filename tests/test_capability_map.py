"""The capability map's driver: the grid's commands for a sized model (its own settings and each task's, every rate,
seed 0, its own directory a job) and the rate each task takes to its other seeds (the best seed-0 validation score;
a failed run never wins)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from suite.runtime.record import RESULT_FILE, ResultRecord
from tasks.capabilities.map import (
    LEDGER,
    MapConfig,
    chosen_rates,
    command,
    knob_commands,
    main,
    map_seconds,
    only_knobs,
    read_map,
    run_env,
    timed,
)
from tasks.capabilities.sizing import Sized


def a_map(tmp_path: Path) -> MapConfig:
    return MapConfig(
        tasks=["parity", "mqar", "s5"], models=["mamba2"], sizes=[100_000], lrs=[1e-3, 3e-3], seeds=[0, 1, 2],
        overrides={"mamba2": ["model.backbone.mixer.head_dim=16"]}, task_overrides={"mqar": ["task.seq_len=64"]},
        sweep_dir=tmp_path,
    )  # fmt: skip


def test_the_grid_runs_each_task_group_with_its_settings_every_rate_and_seed_zero(tmp_path):
    m = a_map(tmp_path)
    commands = command(Sized("mamba2", 100_000, 80, 102_380), m, m.tasks, m.lrs, m.seeds[:1], ["x=1"])
    assert len(commands) == 2  # the diagnostics together, MQAR with its own settings
    plain, mqar = (" ".join(c[2:]) for c in commands)
    assert (
        "model=mamba2 model.d_model=80 model.backbone.mixer.head_dim=16 task=capability/parity,capability/s5" in plain
    )
    assert "task=mqar task.seq_len=64" in mqar and "task.seq_len" not in plain
    for line in (plain, mqar):
        assert "trainer.optimizer.lr=0.001,0.003 seed=0" in line and line.endswith("x=1")
        assert f"hydra.sweep.dir={tmp_path}" in line


def write(sweep: Path, task: str, lr: float, val: float, status: str = "ok", model: str = "mamba2",
          attention: str | None = None) -> None:  # fmt: skip
    run = sweep / f"{task}-{model}{f'-{attention}' if attention else ''}-d80-lr{lr:g}-s0"
    run.mkdir(parents=True)
    record = ResultRecord(status=status, task=task, dataset=task, model=model, seed=0, attention=attention,
                          metrics={"val_accuracy": val}, config={"trainer": {"optimizer": {"lr": lr}}})  # fmt: skip
    (run / RESULT_FILE).write_text(json.dumps(asdict(record)))


def test_each_task_takes_the_rate_whose_seed_zero_run_scored_best_on_validation(tmp_path):
    m = a_map(tmp_path)
    write(tmp_path, "parity", 1e-3, 0.6)
    write(tmp_path, "parity", 3e-3, 0.9)
    write(tmp_path, "s5", 1e-3, 0.3)
    write(tmp_path, "s5", 3e-3, 0.99, status="diverged")  # a failed run never wins
    write(tmp_path, "mqar", 3e-3, 1.0, model="lstm")  # another model's run is not this one's
    assert chosen_rates(Sized("mamba2", 100_000, 80, 102_380), m) == {"parity": 3e-3, "s5": 1e-3}


def test_a_transformer_with_another_core_is_a_row_of_its_own(tmp_path):
    m = MapConfig(**{**a_map(tmp_path).__dict__, "overrides": {"transformer-local": ["model.attention.window=16"]}})
    (line,) = (" ".join(c[2:]) for c in command(Sized("transformer-local", 100_000, 64, 100_096), m, ["parity"],
                                                  m.lrs, [0], []))  # fmt: skip
    assert "model=transformer model/attention=local model.d_model=64 model.attention.window=16 " in line
    write(tmp_path, "parity", 1e-3, 0.9, model="transformer")  # full attention's run is another row's
    write(tmp_path, "parity", 3e-3, 0.6, model="transformer", attention="local")
    write(tmp_path, "mqar", 1e-3, 0.5, model="transformer", attention="linear")
    assert chosen_rates(Sized("transformer-local", 100_000, 80, 100_096), m) == {"parity": 3e-3}
    assert chosen_rates(Sized("transformer", 100_000, 80, 100_096), m) == {"parity": 1e-3}


def test_a_row_naming_a_core_that_does_not_exist_or_cannot_read_left_to_right_is_refused():
    with pytest.raises(SystemExit, match=r"\['transformer-nope'\] name attention cores that conf/model/attention/"):
        read_map(["capability_map.models=[transformer-nope]"])
    with pytest.raises(SystemExit, match=r"\['transformer-reformer'\] name attention cores with no causal mode"):
        read_map(["capability_map.models=[lstm,transformer-reformer]"])


def test_the_map_reads_its_plan_from_the_experiment():
    m = read_map()
    assert len(m.tasks) >= 12 and "transformer" in m.models and len(m.sizes) == 2 and len(m.seeds) == 3
    assert len(m.lrs) >= 3 and m.sweep_dir.name == "capabilities"


def test_a_variant_runs_its_own_tasks_alone_after_the_models(tmp_path):
    m = MapConfig(**{**a_map(tmp_path).__dict__, "variants": {"deltanet_negative": ["parity", "s5"]}})
    assert m.everyone == ["mamba2", "deltanet_negative"]
    assert m.tasks_of("deltanet_negative") == ["parity", "s5"] and m.tasks_of("mamba2") == m.tasks
    assert m.tasks_of("deltanet_negative", ["mqar", "s5"]) == ["s5"]  # --tasks narrows a variant's tasks too
    assert read_map().tasks_of("deltanet_negative") == ["parity", "sum_mod_5", "a4"]  # the experiment's variant


def test_a_variant_naming_a_task_the_map_lacks_or_a_models_name_is_refused():
    with pytest.raises(SystemExit, match=r"variants names tasks the map does not have: \{'odd': \['nope'\]\}"):
        read_map(["+capability_map.variants.odd=[parity,nope]"])
    with pytest.raises(SystemExit, match=r"\['lstm'\] named both in capability_map.models and in its variants"):
        read_map(["+capability_map.variants.lstm=[parity]"])


def test_the_driver_runs_a_variant_on_its_own_tasks_and_refuses_one_left_with_none(capsys):
    assert main(["--dry-run", "--models", "deltanet_negative", "deltanet", "--tasks", "parity", "mqar", "--sizes",
                 "100000", "--no-knobs"]) == 0  # fmt: skip
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("python -m suite.run")]
    assert [("model=deltanet_negative" in line, "task=capability/parity" in line) for line in lines] == [
        (True, True),  # the variant: parity alone
        (False, True),
        (False, False),  # DeltaNet: parity, then MQAR with its own settings
    ]
    with pytest.raises(SystemExit, match=r"\['deltanet_negative'\] run none of the tasks asked for \(\['mqar'\]\)"):
        main(["--dry-run", "--models", "deltanet_negative", "--tasks", "mqar", "--sizes", "100000"])
    # every model (here the map's models cut to one, so that the test sizes two): the variant drops out
    assert main(["capability_map.models=[deltanet]", "--dry-run", "--tasks", "mqar", "--sizes", "100000"]) == 0
    out = capsys.readouterr().out
    assert "model=deltanet " in out and "deltanet_negative" not in out


def test_the_knob_stage_runs_every_seed_at_the_chosen_rate_a_directory_a_value(tmp_path):
    m = a_map(tmp_path)
    m = MapConfig(**{**m.__dict__, "knobs": {"mqar": {"seq_len": [32, 128]}}})
    commands = knob_commands(Sized("mamba2", 100_000, 80, 102_380), m, "mqar", 3e-3, ["x=1"])
    assert len(commands) == 2
    for command_line, value in zip((" ".join(c[2:]) for c in commands), (32, 128)):
        assert f"hydra.sweep.dir={tmp_path / f'knob-seq_len-{value}'}" in command_line
        assert "trainer.optimizer.lr=0.003 seed=0,1,2" in command_line
        assert f"capability_stage=knob capability_knob=seq_len task.seq_len={value}" in command_line
        assert "task.seq_len=64" not in command_line  # the task's own value in the map gives way to the knob's
    assert knob_commands(Sized("mamba2", 100_000, 80, 102_380), m, "parity", 3e-3, []) == []


def test_the_knob_stage_narrows_to_the_settings_named_and_refuses_one_no_task_has(tmp_path):
    knobs = {"selective_copying": {"n_tokens": [4, 16], "seq_len": [256]}, "mqar": {"n_pairs": [4]}}
    m = MapConfig(**{**a_map(tmp_path).__dict__, "knobs": knobs})
    assert only_knobs(m, ["seq_len"]).knobs == {"selective_copying": {"seq_len": [256]}}
    assert only_knobs(m, ["n_pairs", "n_tokens"]).knobs == {
        "selective_copying": {"n_tokens": [4, 16]},
        "mqar": {"n_pairs": [4]},
    }
    with pytest.raises(SystemExit, match=r"\['depth'\].*\['n_pairs', 'n_tokens', 'seq_len'\]"):
        only_knobs(m, ["depth", "seq_len"])


def test_the_ledger_sums_each_commands_wall_time_over_sessions(tmp_path):
    ledger = tmp_path / LEDGER
    assert map_seconds(tmp_path) == 0.0
    for _ in range(2):  # two sessions, each one command
        timed([sys.executable, "-c", "import time; time.sleep(0.2)", "a", "b"], ledger)
    entries = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert len(entries) == 2 and entries[0]["command"] == ["a", "b"]
    assert 0.4 <= map_seconds(tmp_path) < 10


def test_the_maps_runs_write_their_bytecode_even_where_the_machine_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    out = tmp_path / "flag"
    check = f"import sys; open({str(out)!r}, 'w').write(str(sys.dont_write_bytecode))"
    timed([sys.executable, "-c", check, "a"], tmp_path / LEDGER)
    assert out.read_text() == "False"


def test_each_job_gets_its_share_of_the_cores_unless_the_threads_are_set(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert run_env({}, 2)["OMP_NUM_THREADS"] == "4" and run_env({}, 16)["OMP_NUM_THREADS"] == "1"
    assert run_env({"OMP_NUM_THREADS": "3"}, 2)["OMP_NUM_THREADS"] == "3"  # the caller's setting stays
    monkeypatch.undo()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    out = tmp_path / "threads"
    check = f"import torch; open({str(out)!r}, 'w').write(str(torch.get_num_threads()))"
    timed([sys.executable, "-c", check, "a"], tmp_path / LEDGER, jobs=len(os.sched_getaffinity(0)))
    assert out.read_text() == "1"  # a job a core: one thread each, in the child torch itself


def test_a_launcher_named_in_the_extras_replaces_joblib(tmp_path):
    m = a_map(tmp_path)
    sized = Sized("mamba2", 100_000, 80, 102_380)
    (plain,) = command(sized, m, ["parity"], m.lrs, [0], [], jobs=1)
    assert plain[-2:] == ["hydra/launcher=joblib", "hydra.launcher.n_jobs=1"]
    (slurm,) = command(sized, m, ["parity"], m.lrs, [0], ["hydra/launcher=slurm"])
    assert "hydra/launcher=joblib" not in slurm and slurm[-1] == "hydra/launcher=slurm"
