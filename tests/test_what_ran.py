"""A record says what ran and on what: the data a task read (its folder and a fingerprint of its files) and the steps
its trainer planned and why a run stopped (suite.data.datadir.identity, suite.runtime.record.trainer_name)."""

from __future__ import annotations

import random

from suite.data.datadir import identity
from suite.run import execute
from suite.runtime.record import ResultRecord, stopped_by, trainer_name
from tests.conftest import compose_config, shrink

TRAIN_JOB = {"_target_": "suite.jobs.train.train_job"}


def record(accuracy: float, seed: int = 0, data: dict | None = None, **fields) -> ResultRecord:
    """A quick-profile SST-2 run of the LSTM (30 steps, 3 epochs, a 900 s cap) that took its 30 steps."""
    trainer = {"name": "quick", "max_steps": 30, "max_epochs": 3, "time_budget_s": 900}
    return ResultRecord(
        status="ok",
        task="sentiment",
        dataset="sst2",
        model="lstm",
        seed=seed,
        seq_len=64,
        metrics={"accuracy": accuracy},
        primary_metric="accuracy",
        data=data if data is not None else {"dir": "/data/sentiment/sst2", "fingerprint": "aaaaaaaaaaaa"},
        config={"job": TRAIN_JOB, "trainer": trainer, "seed": seed},
        **({"steps": 30, "planned_steps": 30, "stop_reason": "max_steps"} | fields),
    )


def write_sst2(folder, seed: int, lines: int = 200) -> None:
    """A small SST-2 in GLUE's layout: two labels, each with its own words."""
    rng = random.Random(seed)
    words = {0: ["dull", "awful", "poor", "bad"], 1: ["fine", "great", "lovely", "good"]}
    folder.mkdir(parents=True)
    for name, n in (("train.tsv", lines), ("dev.tsv", lines // 4), ("test.tsv", lines // 4)):
        rows = [(i % 2, " ".join(rng.choice(words[i % 2]) for _ in range(5)) + f" {name[:2]}{i}") for i in range(n)]
        (folder / name).write_text("sentence\tlabel\n" + "".join(f"{text}\t{label}\n" for label, text in rows))


# --- on what ----------------------------------------------------------------------------------------------------


def test_a_run_records_the_folder_it_read_and_a_fingerprint_of_its_files(tmp_path):
    write_sst2(tmp_path / "mine" / "sentiment" / "sst2", 0)
    cfg = shrink(compose_config("task=sentiment", "model=lstm", f"data_dir={tmp_path / 'mine'}"))
    done = execute(cfg, tmp_path / "run")
    assert done.status == "ok" and done.dataset == "sst2"  # the name says which task reading; data says which files
    assert done.data == identity([tmp_path / "mine" / "sentiment" / "sst2"])
    assert done.data["dir"] == str((tmp_path / "mine" / "sentiment" / "sst2").resolve())


def test_the_data_identity_follows_the_files_not_the_path_to_them(tmp_path):
    write_sst2(tmp_path / "real" / "sst2", 0)
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "sst2").symlink_to(tmp_path / "real" / "sst2")  # as make data links the shared copy
    first = identity([tmp_path / "linked" / "sst2"])
    assert first == identity([tmp_path / "real" / "sst2"]) and first["dir"] == str((tmp_path / "real" / "sst2"))
    with (tmp_path / "real" / "sst2" / "train.tsv").open("a") as f:
        f.write("one more\t1\n")
    assert identity([tmp_path / "real" / "sst2"])["fingerprint"] != first["fingerprint"]
    assert identity([]) == {}


# --- what ran ---------------------------------------------------------------------------------------------------


def test_a_label_names_the_steps_the_run_planned_never_a_limit_that_set_none():
    assert trainer_name(record(0.8)) == "quick (30 steps)"  # its 900 s time cap never reached: not named
    assert trainer_name(record(0.8, steps=9, planned_steps=9, stop_reason="max_epochs")) == (
        "quick (9 of 30 steps: epoch cap)"
    )
    no_max = record(0.8, steps=90, planned_steps=90, stop_reason="max_epochs")
    no_max.config["trainer"]["max_steps"] = None
    assert trainer_name(no_max) == "quick (90 steps: 3 epochs)"


def test_a_run_cut_short_says_what_stopped_it_and_keeps_the_label_of_its_seeds():
    cut = record(0.6, 1, steps=20, stop_reason="time_budget")
    assert stopped_by(cut) == "time cap 900 s" and stopped_by(record(0.8)) == ""
    assert trainer_name(cut) == trainer_name(record(0.8))  # the seeds of one setting pool
    reached = record(0.9, steps=12, stop_reason="target_reached")
    reached.config["trainer"]["stop_at"] = 0.9
    assert stopped_by(reached) == "target 0.9 reached" and trainer_name(reached) == "quick (30 steps, stop at 0.9)"


def test_a_run_its_epoch_cap_ends_is_labelled_so(tmp_path):
    cfg = shrink(compose_config("task=long_range", "task.seq_len=32", "task.n_train=64", "trainer.max_steps=30"))
    done = execute(cfg, tmp_path)  # smoke: one epoch of three batches
    assert (done.steps, done.planned_steps, done.stop_reason) == (3, 3, "max_epochs")
    assert trainer_name(done) == "smoke (3 of 30 steps: epoch cap)"
    assert done.data == {}  # generated data: nothing read
