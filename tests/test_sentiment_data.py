"""Sentiment data: the GLUE protocol for SST-2, MR's encoding, and seeded stratified splits."""

from collections import Counter

import pytest

from suite.data.splits import dedupe, stratified_split
from tasks.sentiment import read_polarity, rt_polarity_splits, sst2_splits
from tests.conftest import need_data


def test_stratified_split_is_seeded_disjoint_and_balanced():
    labels = [0] * 600 + [1] * 400
    a = stratified_split(labels, {"train": 0.8, "val": 0.1, "test": 0.1}, seed=3)
    b = stratified_split(labels, {"train": 0.8, "val": 0.1, "test": 0.1}, seed=3)
    assert a == b
    assert sum(len(v) for v in a.values()) == 1000 and not set(a["train"]) & set(a["test"])
    assert Counter(labels[i] for i in a["test"]) == {0: 60, 1: 40}


def test_dedupe_keeps_first():
    assert dedupe(["a", "b", "a", "c", "b"]) == [0, 1, 3]


def test_sst2_follows_glue_protocol():
    need_data("sentiment", "sst2")
    splits = sst2_splits(None, val_fraction=0.1, split_seed=0)
    assert len(splits["test"][0]) == 872  # GLUE's dev set
    assert Counter(splits["test"][1]) == {0: 428, 1: 444}
    train, val = set(splits["train"][0]), set(splits["val"][0])
    assert not train & val and 500 < len(val) < 1000  # a tenth of the ~6,900 full sentences
    # No training row is a part of a validation sentence (GLUE's rows are parse-tree phrases).
    assert not any(" ".join(w) in train for s in list(val)[:200] for w in [s.split()[1:], s.split()[:-1]] if w)


def test_rt_polarity_decodes_cp1252_and_splits_on_newline_only():
    root = need_data("sentiment", "rt_polarity")
    pos = read_polarity(root / "rt-polarity.pos")
    assert len(pos) == 5331  # splitlines() would break at 0x85 and give 5,344
    assert any("é" in line for line in pos)
    splits = rt_polarity_splits(None, 0.1, 0.1, split_seed=0)
    assert sum(len(t) for t, _ in splits.values()) <= 10662
    assert not set(splits["train"][0]) & set(splits["test"][0])


def test_a_byte_that_is_not_utf8_names_file_and_line(tmp_path):
    from suite.data.datadir import DataError
    from tasks.sentiment import read_sst2

    path = tmp_path / "train.tsv"
    path.write_bytes(
        b"sentence\tlabel\ngood film \t1\nna\xefve \xff film \t0\nfine \t1\n"
    )  # 0xef starts a 3-byte sequence 0xff cannot continue
    with pytest.raises(DataError, match=rf"^{path}:3: byte 0xef at column 3 is not UTF-8"):
        read_sst2(path)


def test_a_label_that_is_not_an_integer_names_file_and_line(tmp_path):
    # Beyond the parser's first block of rows (10,000 in datasets' CSV reader) the column was
    # inferred as integers, and a later 'positive' failed in Arrow naming no line.
    from suite.data.datadir import DataError
    from tasks.sentiment import read_sst2

    path = tmp_path / "train.tsv"
    path.write_text(
        "sentence\tlabel\n" + "".join(f"film {i} \t{i % 2}\n" for i in range(12_000)) + "a fine film \tpositive\n"
    )
    with pytest.raises(DataError, match=rf"^{path}:12002: label 'positive' is not one of \['0', '1'\]"):
        read_sst2(path)
