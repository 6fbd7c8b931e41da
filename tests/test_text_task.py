"""task=text: a researcher's own labelled text through one config, named by that config; bad files named by line."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hydra.utils import instantiate

from suite.data.datadir import DataError, DatasetMissing
from suite.runtime.record import RESULT_FILE, read_result
from tasks.text import TextSource, read_splits
from tests.conftest import CONF, compose_config, need_data

WORDS = {"pos": ["good", "great", "fine", "lovely"], "neg": ["bad", "awful", "dull", "poor"]}


def lines(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        label = "pos" if i % 2 else "neg"
        out.append((" ".join(rng.choice(WORDS[label]) for _ in range(6)) + f" n{i}", label))
    return out


def source(folder, **kw) -> TextSource:
    return TextSource(**({"name": "mine", "path": [str(folder)]} | kw))


def test_a_200_line_tsv_of_ones_own_runs_through_its_config_alone_and_is_named_by_it(tmp_path):
    data = tmp_path / "reviews"
    data.mkdir()
    (data / "all.tsv").write_text("review\tstars\n" + "".join(f"{t}\t{y}\n" for t, y in lines(200)))
    conf = tmp_path / "conf" / "task" / "data"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(
        f"name: mine\npath: [{data}]\nformat: tsv\nfiles: {{all: [all.tsv]}}\ntext: review\nlabel: stars\n"
        "split: {train: 0.8, val: 0.1, test: 0.1}\n"
    )
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "suite.run", "task=text", "task/data=mine", "model=lstm", "model.d_model=16",
         "trainer.max_steps=5", "logger=none", f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
         f"hydra.run.dir={run_dir}"],
        cwd=CONF.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    record = read_result(run_dir / RESULT_FILE)
    assert record.status == "ok" and record.task == "text" and record.dataset == "mine"
    assert record.split_sizes == {"train": 160, "val": 20, "test": 20}
    assert "text/mine lstm" in done.stdout


def test_json_lines_and_csv_read_alike_and_case_is_kept(tmp_path):
    rows = lines(40)
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"text": t.upper(), "label": y}) + "\n" for t, y in rows))
    (tmp_path / "a.csv").write_text("text,label\n" + "".join(f"{t.upper()},{y}\n" for t, y in rows))
    split = {"train": 0.5, "val": 0.25, "test": 0.25}
    got = [
        read_splits(source(tmp_path, format=f, files={"all": [f"a.{f}"]}, split=split), None, 0)
        for f in ("jsonl", "csv")
    ]
    assert got[0] == got[1]
    splits, classes = got[0]
    assert classes == ["neg", "pos"] and sum(len(t) for t, _ in splits.values()) == 40
    assert all(t.isupper() or not t.isalpha() for t in splits["train"][0][0].split())  # not case-folded


def test_a_bad_json_line_and_an_unknown_label_name_their_file_and_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"text": "a", "label": "pos"}\n{"text": "b", "label": \n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: not a JSON object"):
        read_splits(source(tmp_path, format="jsonl", files={"all": ["bad.jsonl"]}, split={"train": 1.0}), None, 0)
    (tmp_path / "t.tsv").write_text("text\tlabel\nfine\tpos\nodd\tmaybe\n")
    with pytest.raises(DataError, match=r"t.tsv:3: label 'maybe'"):
        files = {"train": ["t.tsv"], "val": ["t.tsv"], "test": ["t.tsv"]}
        read_splits(source(tmp_path, files=files, classes=["neg", "pos"]), None, 0)


def test_a_missing_folder_or_file_is_named_and_a_sequence_config_is_refused(tmp_path):
    with pytest.raises(DatasetMissing, match="folder not found"):
        read_splits(source(tmp_path / "nowhere", files={"train": ["x.tsv"]}), None, 0)
    with pytest.raises(DatasetMissing, match="x.tsv"):
        read_splits(source(tmp_path, files={"train": ["x.tsv"], "val": ["x.tsv"], "test": ["x.tsv"]}), None, 0)
    cfg = compose_config("task=text", "task/data=uci_splice_junction")
    with pytest.raises(Exception, match="not a text dataset config"):
        instantiate(cfg.task)


def test_the_shipped_example_reads_sst2_as_plain_text_under_its_own_name():
    need_data("sentiment", "sst2")
    task = instantiate(compose_config("task=text").task)
    task.setup()
    sizes = task.split_sizes()
    assert task.dataset == "sst2_plain" and sizes["test"] == 872 and sizes["val"] > 0
