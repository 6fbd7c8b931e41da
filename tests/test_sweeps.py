"""No sweep writes two jobs into one directory: every experiment's subdir names the attention variant.

The runner refuses a collision.
"""

import json
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf, open_dict

from suite.run import SweepCollision, execute
from suite.runtime.differences import computed_differences, computed_part, same_computation
from suite.runtime.record import RESULT_FILE, read_result
from tests.conftest import CONF, compose_config, need_data, shrink

ROOT = CONF.parent
WITH_SUBDIR = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml") if "subdir:" in p.read_text())
# compression sweeps methods over one trained checkpoint (which fixes the model): its subdir names the method.
# tune's sweeper names each job's subdir (its trial); its sweep directory names the model.
BY_ATTENTION = [e for e in WITH_SUBDIR if e not in ("compression", "tune")]


def resolved(key: str, *overrides: str) -> str:
    """``key`` of a sweep job with these overrides, resolved as Hydra resolves it at run time."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.job.num = 0
    HydraConfig.instance().set_config(cfg)
    try:
        return str(OmegaConf.select(cfg, key))
    finally:
        HydraConfig.instance().cfg = None


def subdir(*overrides: str) -> str:
    """The sweep subdir a job of these overrides would get."""
    return resolved("hydra.sweep.subdir", *overrides)


def test_every_experiment_but_compression_sets_a_subdir_and_is_checked_here():
    assert "speed_vs_length" in BY_ATTENTION and "attention_speed" in BY_ATTENTION and len(BY_ATTENTION) >= 9


@pytest.mark.parametrize("experiment", BY_ATTENTION)
def test_two_attention_variants_get_two_directories(experiment):
    full, local = (
        subdir(f"experiment={experiment}", "model=transformer", f"model/attention={a}") for a in ("full", "local")
    )
    assert full != local and "local" in local


def test_two_studies_of_two_attention_variants_get_two_directories():
    full, local = (
        resolved("hydra.sweep.dir", "experiment=tune", "task=dna", f"model/attention={a}") for a in ("full", "local")
    )
    assert full == "runs/tune/dna-uci_splice_junction-L512-transformer" and local != full and "local" in local


def test_a_recurrent_model_needs_no_attention_in_its_name():
    assert subdir("experiment=speed_vs_length", "model=lstm", "task.seq_len=256") == "lstm-L256-auto"


def test_compression_names_the_method():
    assert subdir("experiment=compression", "compress=prune_50") != subdir(
        "experiment=compression", "compress=prune_80"
    )


def test_a_sweep_over_attention_variants_leaves_one_record_each(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "suite.run",
            "-m",
            "experiment=speed_vs_length",
            "model=transformer",
            "model/attention=full,local,linear",
            "task.seq_len=128",  # local's window of 64 would reach every key of 16 positions: refused at build
            "model.d_model=16",
            "job.min_time_s=0",
            "job.repeats=1",
            "job.warmup=1",
            "job.measure_peak=false",
            "logger=none",
            f"hydra.sweep.dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = {p.parent.name: read_result(p) for p in tmp_path.rglob(RESULT_FILE)}
    assert sorted(records) == ["transformer-L128-auto", "transformer-linear-L128-auto", "transformer-local-L128-auto"]
    assert {r.attention for r in records.values()} == {"full", "local", "linear"} and all(
        r.status == "ok" for r in records.values()
    )


def test_the_runner_refuses_to_overwrite_another_configs_record_and_resumes_its_own(tmp_path):
    first = shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16"))
    record = execute(first, tmp_path, multirun=True)
    assert record.status == "ok", record.error
    before = (tmp_path / RESULT_FILE).read_text()
    other = shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16", "seed=1"))
    with pytest.raises(SweepCollision, match=r"seed: 0 -> 1.*hydra.sweep.subdir"):
        execute(other, tmp_path, multirun=True)
    assert (tmp_path / RESULT_FILE).read_text() == before  # nothing lost
    again = execute(
        first, tmp_path, multirun=True
    )  # the same config: skipped, as a resumed sweep skips what it finished
    assert json.loads((tmp_path / RESULT_FILE).read_text())["wall_seconds"] == again.wall_seconds == record.wall_seconds


def test_a_plan_or_a_log_setting_changes_nothing_computed_so_a_finished_run_is_skipped_not_refused(tmp_path):
    # the capability map's plan (its grid and task settings, read by its driver) and how a run logs are not what it
    # computes: a map whose plan grew a task resumes its finished runs
    first = shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16"))
    record = execute(first, tmp_path, multirun=True)
    assert record.status == "ok", record.error
    replanned = shrink(
        compose_config(
            "task=long_range",
            "model=lstm",
            "task.seq_len=16",
            "+capability_map.tasks=[parity]",
            "trainer.progress=true",
        )
    )
    again = execute(replanned, tmp_path, multirun=True)
    assert again.wall_seconds == record.wall_seconds  # skipped: the record is the first run's
    with pytest.raises(SweepCollision, match=r"trainer.optimizer.lr"):  # what it computes still counts
        execute(
            shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16", "trainer.optimizer.lr=0.5")),
            tmp_path,
            multirun=True,
        )


def test_the_settings_that_change_nothing_computed_are_left_out_of_the_comparison_only():
    saved = {"trainer": {"progress": True, "optimizer": {"lr": 1e-3}}, "capability_map": {"lrs": [1e-3]}, "seed": 0}
    current = {"trainer": {"progress": False, "optimizer": {"lr": 1e-3}}, "seed": 0}
    assert same_computation(saved, current)
    assert not same_computation(saved, {**current, "seed": 1})
    assert not same_computation(saved, {**current, "trainer": {"optimizer": {"lr": 3e-3}}})
    assert computed_part(saved) == {"trainer": {"optimizer": {"lr": 1e-3}}, "seed": 0}
    assert computed_differences(saved, current) == []
    assert computed_differences(saved, {**current, "seed": 1}) == ["seed: 0 -> 1"]  # the plan and the logging unnamed
    assert saved["trainer"]["progress"] is True and "capability_map" in saved  # the caller's config is left as it was


TRAIN = {"_target_": "suite.jobs.train.train_job", "test": True}
SPEED = {"_target_": "suite.jobs.speed.speed_job", "repeats": 5}


def test_a_scan_kernel_is_how_a_training_run_computes_not_what():
    """A minGRU run trained with the log-space scan (whose config had no kernel) is the same run with the loop."""
    saved = {"model": {"backbone": {"cell": "gru", "chunk": 256}}, "job": TRAIN, "seed": 0}
    current = {"model": {"backbone": {"cell": "gru", "chunk": 256, "kernel": "loop"}}, "job": TRAIN, "seed": 0}
    assert same_computation(saved, current) and computed_differences(saved, current) == []
    pscan = {**current, "model": {"backbone": {"cell": "gru", "chunk": 256, "kernel": "pscan"}}}
    assert computed_differences(current, pscan) == []
    changed = {"model": {"backbone": {"cell": "lstm", "chunk": 256, "kernel": "loop"}}, "job": TRAIN, "seed": 0}
    assert computed_differences(saved, changed) == ["model.backbone.cell: 'gru' -> 'lstm'"]
    assert current["model"]["backbone"]["kernel"] == "loop"  # the caller's config is left as it was


def test_the_scan_kernels_left_out_are_the_models_own():
    from suite.models import mamba, minrnn
    from suite.runtime.differences import SCAN_KERNELS

    assert SCAN_KERNELS == set(minrnn.KERNELS) | set(mamba.KERNELS)


def test_a_scan_kernel_counts_where_it_is_timed_and_a_kernel_width_counts_everywhere():
    loop, log = ({"model": {"backbone": {"kernel": k}}, "job": SPEED} for k in ("loop", "log"))
    assert computed_differences(loop, log) == ["model.backbone.kernel: 'loop' -> 'log'"]  # what a speed job measures
    narrow, wide = ({"model": {"backbone": {"kernel": k}}, "job": TRAIN} for k in (4, 8))  # gated_conv's width
    assert computed_differences(narrow, wide) == ["model.backbone.kernel: 4 -> 8"]
    assert not same_computation(narrow, wide)


SMALL_RECALL = ["task=recall", "task.seq_len=16", "task.n_train=32", "task.n_val=16", "task.n_test=16"]
SHORT = ["model.d_model=16", "trainer.max_steps=2", "trainer.progress=false", "logger=none"]


def sweep(directory, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "suite.run", "-m", *overrides, *SHORT, f"hydra.sweep.dir={directory}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def kept(directory) -> dict[str, object]:
    return {p.parent.name: read_result(p) for p in directory.rglob(RESULT_FILE)}


def test_a_learning_rate_swept_through_a_named_experiment_keeps_both_points(tmp_path):
    done = sweep(tmp_path, "experiment=long_range", *SMALL_RECALL, "model=lstm", "trainer.optimizer.lr=0.001,0.0003")
    assert done.returncode == 0, done.stderr[-3000:]
    records = kept(tmp_path)
    assert sorted(records) == [
        "recall-lstm-L16-s0,trainer.optimizer.lr=0.0003",
        "recall-lstm-L16-s0,trainer.optimizer.lr=0.001",
    ]
    assert {r.config["trainer"]["optimizer"]["lr"] for r in records.values()} == {0.001, 0.0003}
    assert all(r.status == "ok" for r in records.values())


@pytest.mark.slow  # two training runs through a subprocess; the learning-rate sweep above keeps the fast set's check
def test_a_dropout_swept_through_the_bench_experiment_keeps_both_points(tmp_path):
    need_data("dna", "uci_splice_junction")
    done = sweep(tmp_path, "experiment=bench_tasks", "task=dna", "model=lstm", "model.embed_dropout=0.0,0.2")
    assert done.returncode == 0, done.stderr[-3000:]
    records = kept(tmp_path)
    assert len(records) == 2 and {r.config["model"]["embed_dropout"] for r in records.values()} == {0.0, 0.2}


def test_the_same_point_twice_is_refused_before_any_job_runs(tmp_path):
    done = sweep(tmp_path, "experiment=long_range", *SMALL_RECALL, "model=lstm", "seed=0,0")
    assert done.returncode != 0 and "two jobs of this sweep have the same settings" in done.stderr
    assert not kept(tmp_path)


@pytest.mark.slow  # a sweep run twice through a subprocess
def test_a_point_whose_directory_holds_another_configs_record_is_refused_before_any_job_runs(tmp_path):
    first = sweep(tmp_path / "a", "experiment=long_range", *SMALL_RECALL, "model=lstm")
    assert first.returncode == 0, first.stderr[-3000:]
    (tmp_path / "a" / "recall-lstm-L16-s0").rename(tmp_path / "a" / "recall-gru-L16-s0")  # now in gru's place
    done = sweep(tmp_path / "a", "experiment=long_range", *SMALL_RECALL, "model=rnn,gru")
    assert done.returncode != 0 and "holds the record of another configuration" in done.stderr
    assert "model=gru" in done.stderr and "model.name: 'lstm' -> 'gru'" in done.stderr
    assert sorted(kept(tmp_path / "a")) == ["recall-gru-L16-s0"]  # the rnn point never ran


def test_points_sharing_a_name_get_the_settings_that_tell_them_apart_and_the_name_survives_hydras_parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from suite.runtime.sweep_dirs import quoted, told_apart

    jobs = [{"model": "lstm", "model/attention": "full", "lr": "0.1"}, {"model": "lstm", "model/attention": "local"}]
    assert told_apart("x-s0", jobs) == ["x-s0,model.attention=full,lr=0.1", "x-s0,model.attention=local,lr="]
    for name in ("recall-lstm-L16-s0,trainer.optimizer.lr=0.001", "it's [a] {b}=c,d"):
        (parsed,) = OverridesParser.create().parse_overrides([f"hydra.sweep.subdir={quoted(name)}"])
        assert parsed.value() == name


@pytest.mark.parametrize(
    "overrides, sweeper",
    [
        ([], "hydra_plugins.suite_sweep.every_point.EveryPointSweeper"),
        (["experiment=long_range"], "hydra_plugins.suite_sweep.every_point.EveryPointSweeper"),
        (["experiment=tune", "task=dna", "model=lstm"], "hydra_plugins.suite_tune.tune_sweeper.TuneSweeper"),
    ],
)
def test_every_sweep_keeps_every_point_by_default_and_the_tuning_study_keeps_its_own_sweeper(overrides, sweeper):
    assert resolved("hydra.sweeper._target_", *overrides) == sweeper
