"""The generic sequence loader: datasets as configs, errors that name file and record, k-mers, splits."""

import shutil
from collections import Counter

import pytest
import torch
from hydra.utils import instantiate

from suite.data.datadir import DataError
from suite.run import execute
from tasks.sequences import UNK, KmerVocab, SequenceSource, load
from tests.conftest import compose_config, need_data, shrink


def fasta_source(**changes) -> SequenceSource:
    """A made-up protein dataset given only as config: labels from the header, splits from the files."""
    cfg = dict(
        name="toy",
        path=["toy"],
        format="fasta",
        files={"train": ["train.fa"], "val": ["val.fa"], "test": ["test.fa"]},
        label={"field": "header", "pattern": r"class=(\w+)"},
        classes=["neg", "pos"],
        alphabet="ACDEFGHIKLMNPQRSTVWY",
        ambiguous="X",
    )
    return SequenceSource.from_config(cfg | changes)


def write_toy(
    root,
    train: str,
    val: str = ">v1 class=pos\nACDE\n>v2 class=neg\nKKLL\n",
    test: str = ">t1 class=neg\nMMNP\n>t2 class=pos\nGGHA\n",
):
    folder = root / "toy"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {"train.fa": train, "val.fa": val, "test.fa": test}.items():
        (folder / name).write_text(text)
    return folder


def load_toy(root, source=None):
    return load(source or fasta_source(), str(root), kmer=1, stride=1, max_len=64, split_seed=0)


def test_a_new_dataset_is_only_a_config(tmp_path):
    write_toy(tmp_path, ">s1 class=pos\nACDX\n>s2 some words class=neg\nkkll\n")
    data = load_toy(tmp_path)
    ids, label = data.splits["train"][0]
    assert label == 1 and len(ids) == 4 and ids[-1] == UNK  # X is an ambiguity code: [UNK], no error
    assert data.splits["train"][1][1] == 0 and data.n_classes == 2 and data.class_names == ["neg", "pos"]


def test_headers_never_reach_the_model(tmp_path):
    write_toy(tmp_path / "a", ">AP00085 class=pos\nACDEFG\n>UniRef50_Q75 class=neg\nKLMN\n")
    write_toy(tmp_path / "b", ">x class=pos\nACDEFG\n>y class=neg\nKLMN\n")
    a, b = load_toy(tmp_path / "a"), load_toy(tmp_path / "b")
    for i in range(2):
        assert torch.equal(a.splits["train"][i][0], b.splits["train"][i][0])
        assert a.splits["train"][i][1] == b.splits["train"][i][1]


def test_unknown_residue_names_file_record_and_position(tmp_path):
    folder = write_toy(tmp_path, ">s1 class=pos\nACDE\n>s2 class=neg\nAC1E\n")
    with pytest.raises(DataError) as err:
        load_toy(tmp_path)
    message = str(err.value)
    assert str(folder / "train.fa") in message and "record 2 ('s2')" in message and "'1' at position 3" in message


@pytest.mark.parametrize(
    "text, expected",
    [
        ("this is not fasta\n>s1 class=pos\nACDE\n", "malformed FASTA"),
        (">s1 class=pos\n\n>s2 class=neg\nACDE\n", "record 1 ('s1'): empty sequence"),
        (">s1 class=maybe\nACDE\n", "record 1 ('s1'): label 'maybe' is not one of ['neg', 'pos']"),
        (">s1 no label here\nACDE\n", "record 1 ('s1'): label pattern"),
        ("", "no FASTA records"),
    ],
    ids=["text-before-header", "empty-sequence", "unknown-label", "no-label", "empty-file"],
)
def test_malformed_fasta_names_file_and_record(tmp_path, text, expected):
    folder = write_toy(tmp_path, text)
    with pytest.raises(DataError) as err:
        load_toy(tmp_path)
    assert str(folder / "train.fa") in str(err.value) and expected in str(err.value)


def test_csv_errors_name_file_and_line(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "seqs.csv").write_text("label,sequence\nA, ACGT\nB, ACGT\nA, ACQT\n")
    source = SequenceSource.from_config(
        dict(
            name="toy",
            path=["toy"],
            format="csv",
            files={"all": ["seqs.csv"]},
            label={"field": "column", "column": "label"},
            classes=["A", "B"],
            alphabet="ACGT",
            split={"train": 0.5, "val": 0.25, "test": 0.25},
        )
    )
    with pytest.raises(DataError, match=rf"{folder / 'seqs.csv'}:4: unknown residue 'Q' at position 3"):
        load(source, str(tmp_path), 1, 1, 64, 0)


def test_tsv_with_labels_from_file_names(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "pos.tsv").write_text("id\tsequence\n1\tACGT\n2\tAACC\n")
    (folder / "neg.tsv").write_text("id\tsequence\n3\tTTGG\n")
    source = SequenceSource.from_config(
        dict(
            name="toy",
            path=["toy"],
            format="tsv",
            files={"train": ["*.tsv"], "val": ["pos.tsv"], "test": ["neg.tsv"]},
            label={"field": "file_name", "pattern": r"^(\w+)\.tsv$"},
            classes=["neg", "pos"],
            alphabet="ACGT",
        )
    )
    data = load(source, str(tmp_path), 1, 1, 64, 0)
    assert [y for _, y in data.splits["train"]] == [0, 1, 1]  # neg.tsv sorts before pos.tsv


def test_missing_files_name_the_path_and_make_data(tmp_path):
    write_toy(tmp_path, ">s1 class=pos\nACDE\n")
    with pytest.raises(DataError, match="make data") as err:
        load_toy(tmp_path, fasta_source(files={"train": ["nope*.fa"], "val": ["val.fa"], "test": ["test.fa"]}))
    assert str(tmp_path / "toy" / "nope*.fa") in str(err.value)


def test_config_mistakes_are_named():
    with pytest.raises(ValueError, match="'toy'.*unexpected keyword argument 'colour'"):
        fasta_source(colour="red")
    with pytest.raises(ValueError, match="does not fit format 'fasta'"):
        fasta_source(label={"field": "column", "column": "y"})
    with pytest.raises(ValueError, match="does not fit format 'csv'"):
        fasta_source(format="csv", label={"field": "header"})
    with pytest.raises(ValueError, match="not all of"):
        fasta_source(files={"train": ["train.fa"]})


def test_kmers_overlap_and_ambiguity_becomes_unk():
    vocab = KmerVocab("ACGT", "NDRS", k=3)
    assert len(vocab) == 2 + 64
    ids = vocab.encode("ACGTN", "here")
    assert ids == [vocab.ids["ACG"], vocab.ids["CGT"], UNK]
    assert KmerVocab("ACGT", k=2, stride=2).encode("ACGTAC", "here") == [
        KmerVocab("ACGT", k=2).ids[m] for m in ("AC", "GT", "AC")
    ]
    with pytest.raises(DataError, match="shorter than k=3"):
        vocab.encode("AC", "here")


def test_amp_scanner_keeps_its_own_split():
    need_data("protein", "amp_scanner_v2")
    task = instantiate(compose_config("task=protein").task)
    task.setup()
    assert task.dataset == "amp_scanner_v2"
    assert task.split_sizes() == {"train": 1424, "val": 708, "test": 1424}
    assert Counter(y for _, y in task.ready.splits["test"]) == {0: 712, 1: 712}


def test_splice_is_deduplicated_then_split_seeded_and_stratified():
    need_data("dna", "uci_splice_junction")
    cfg = compose_config("task=dna").task
    task = instantiate(cfg)
    task.setup()
    splits = task.ready.splits
    # 3,005 distinct sequences, one of them with two labels: 3,004 remain.
    assert sum(task.split_sizes().values()) == 3004
    seqs = {name: {tuple(ids.tolist()) for ids, _ in ds} for name, ds in splits.items()}
    assert not seqs["train"] & seqs["test"] and not seqs["train"] & seqs["val"] and not seqs["val"] & seqs["test"]
    shares = {name: Counter(y for _, y in ds) for name, ds in splits.items()}
    for c in range(3):  # stratified: each class has the same share in train and test (to a few examples)
        assert abs(shares["train"][c] / len(splits["train"]) - shares["test"][c] / len(splits["test"])) < 0.02
    again = instantiate(cfg)
    again.setup()
    assert all(torch.equal(a[0], b[0]) for a, b in zip(splits["test"], again.ready.splits["test"]))
    assert any(UNK in ids.tolist() for ds in splits.values() for ids, _ in ds)  # the N/D/R/S codes


def test_splice_kmer_option():
    need_data("dna", "uci_splice_junction")
    task = instantiate(compose_config("task=dna", "task.kmer=3").task)
    task.setup()
    ids, _ = task.ready.splits["train"][0]
    assert len(ids) == 58 and task.seq_len() == 58  # 60 nt -> 58 overlapping 3-mers


def test_a_bad_record_fails_the_run_before_training_and_names_it(tmp_path):
    source = need_data("protein", "amp_scanner_v2")
    copy = tmp_path / "data" / "protein" / "amp_scanner_v2"
    shutil.copytree(source, copy)
    with open(copy / "DECOY.te.fa", "a") as f:
        f.write(">UniRef50_BAD\nMKVLA*\n")
    record = execute(
        shrink(compose_config("task=protein", "model=lstm", f"data_dir={tmp_path / 'data'}")), tmp_path / "run"
    )
    assert record.status == "failed" and record.steps is None
    assert f"{copy / 'DECOY.te.fa'}: record 713 ('UniRef50_BAD'): unknown residue '*' at position 6" in record.error


def test_consistent_unique_keeps_first_copies_and_drops_conflicts():
    from suite.data.splits import consistent_unique

    assert consistent_unique(["a", "b", "a", "c", "c"], [0, 1, 0, 1, 2]) == [0, 1]
