"""Text classification from your own files: a dataset is one config under ``conf/task/data/``, no code.

    python -m suite.run task=text task/data=my_reviews model=lstm

The config (``TextSource``) names the files (TSV, CSV or JSON lines), the text and label columns, the classes, and the
splits: files for each of train / val / test, or one pool (``all``) cut by seeded stratified fractions, or a
validation fraction carved from the training files. Every record and report names the dataset by the config's
``name``. The text is read as it is (no case folding); a byte-pair tokenizer is fitted on the training split only. A
malformed line, an unknown label or a missing column names the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal, Sequence

from suite.data.datadir import DatasetMissing, data_root, handed_out
from suite.data.readers import parse_labels, read_delimited, read_jsonl
from suite.data.splits import dedupe, stratified_split
from suite.data.tokenizers import PAD, encode, train_bpe
from suite.models.embeddings import TokenEmbedding
from tasks.classification import Artifact, ClassificationData, ClassificationTask, TokenDataset, pad_collate

DELIMITERS = {"tsv": "\t", "csv": ","}
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class TextSource:
    """One text-classification dataset, as its config describes it.

    Args:
        name: the dataset's name in every record and report.
        path: the folder, as parts under the data directory (``[text, my_reviews]``), or one absolute path.
        format: 'tsv', 'csv' (a header line names the columns) or 'jsonl' (one JSON object a line).
        files: file names (in ``path``) for any of 'train', 'val', 'test', or 'all' (one pool to split).
        text: the text column (or JSON key).
        label: the label column (or JSON key).
        classes: the labels in class-id order; None: the sorted labels found in the files.
        split: fractions of the pool ('all': train, val and test summing to 1), or {'val': f} taken from the training
            files when no 'val' files are given. Seeded and stratified by label.
        dedupe: drop repeated texts (the first is kept) before splitting.
    """

    name: str
    path: list[str]
    format: Literal["tsv", "csv", "jsonl"] = "tsv"
    files: dict[str, list[str]] = field(default_factory=dict)
    text: str = "text"
    label: str = "label"
    classes: list[str] | None = None
    split: dict[str, float] | None = None
    dedupe: bool = True

    def folder(self, data_dir: str | None) -> Path:
        """The dataset's folder, or a ``DatasetMissing`` naming it and the config to fix."""
        folder = Path(self.path[0]) if len(self.path) == 1 and Path(self.path[0]).is_absolute() else None
        folder = folder or data_root(data_dir).joinpath(*self.path)
        if not folder.is_dir():
            raise DatasetMissing(
                f"dataset {self.name!r}: folder not found: {folder} (its config's path; the data directory is set by "
                "SUITE_DATA_DIR or data_dir=...)"
            )
        return folder


def read_file(source: TextSource, path: Path) -> tuple[list[str], list[str]]:
    """Texts and label strings of one file."""
    if not path.is_file():
        raise DatasetMissing(f"dataset {source.name!r}: file not found: {path} (listed in its config's files)")
    handed_out(path)  # the files its config names, not the whole folder (which may hold anything)
    columns = [source.text, source.label]
    if source.format == "jsonl":
        rows = read_jsonl(path, columns)
        cols = {c: [str(row[c]) for row in rows] for c in columns}
    elif source.format in DELIMITERS:
        cols = read_delimited(path, columns, delimiter=DELIMITERS[source.format])
    else:
        raise ValueError(f"dataset {source.name!r}: format must be tsv, csv or jsonl, got {source.format!r}")
    return [t.strip() for t in cols[source.text]], [v.strip() for v in cols[source.label]]


def read_splits(source: TextSource, data_dir: str | None, split_seed: int) -> tuple[dict, list[str]]:
    """{split: (texts, label ids)} and the class names, from the files and split rule of ``source``."""
    unknown = set(source.files) - {*SPLITS, "all"}
    if unknown or not source.files:
        raise ValueError(f"dataset {source.name!r}: files takes train, val, test or all, got {sorted(source.files)}")
    folder = source.folder(data_dir)
    raw = {
        part: [(folder / name, *read_file(source, folder / name)) for name in names]
        for part, names in source.files.items()
    }
    classes = source.classes or sorted({label for rows in raw.values() for _, _, labels in rows for label in labels})
    ids = {c: i for i, c in enumerate(classes)}
    read: dict[str, tuple[list[str], list[int]]] = {}
    for part, rows in raw.items():
        texts = [t for _, ts, _ in rows for t in ts]
        labels = [i for path, _, ls in rows for i in parse_labels(path, ls, ids)]
        keep = dedupe(texts) if source.dedupe else range(len(texts))
        read[part] = ([texts[i] for i in keep], [labels[i] for i in keep])
    if "all" in read:
        if set(read) != {"all"} or not source.split or set(source.split) != set(SPLITS):
            raise ValueError(f"dataset {source.name!r}: files 'all' goes alone, with split fractions for {SPLITS}")
        return cut(read["all"], source.split, split_seed), classes
    if "val" not in read and source.split and set(source.split) == {"val"}:
        fraction = source.split["val"]
        read |= cut(read["train"], {"train": 1 - fraction, "val": fraction}, split_seed)
    missing = [s for s in SPLITS if s not in read]
    if missing:
        raise ValueError(f"dataset {source.name!r}: no {missing} split: give its files, or split: {{val: 0.1}}")
    return read, classes


def cut(pool: tuple[list[str], list[int]], fractions: dict[str, float], seed: int) -> dict:
    texts, labels = pool
    parts = stratified_split(labels, dict(fractions), seed)
    return {name: ([texts[i] for i in idx], [labels[i] for i in idx]) for name, idx in parts.items()}


def load(
    source: TextSource, data_dir: str | None, vocab_size: int, max_len: int, split_seed: int
) -> ClassificationData:
    """Read and split, fit a BPE tokenizer on the training split only, encode."""
    splits, classes = read_splits(source, data_dir, split_seed)
    tok = train_bpe(splits["train"][0], vocab_size)
    pad_id = tok.token_to_id(PAD)
    return ClassificationData(
        splits={name: TokenDataset(encode(tok, texts), labels) for name, (texts, labels) in splits.items()},
        collate=pad_collate(pad_id, max_len),
        n_classes=len(classes),
        class_names=list(classes),
        embedding=partial(TokenEmbedding, tok.get_vocab_size(), padding_idx=pad_id),
        max_len=max_len,
        token_names=lambda ids: [tok.id_to_token(i) for i in ids],
    )


def build(
    name: str,
    data: dict,
    data_dir: str | None = None,
    vocab_size: int = 8000,
    max_len: int = 128,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
    artifacts: Sequence[Artifact] = (),
) -> ClassificationTask:
    """The text-classification task (``conf/task/text.yaml``) over the dataset config ``data``; ``artifacts`` write
    files about the test split (a confusion matrix)."""
    try:
        source = TextSource(**data)
    except TypeError as err:
        raise ValueError(
            f"task.data {data.get('name')!r} is not a text dataset config ({err}); its keys: name, path, format, "
            "files, text, label, classes, split, dedupe (tasks/text.py, TextSource)"
        ) from None
    loader = partial(load, source, data_dir, vocab_size, max_len, split_seed)
    return ClassificationTask(
        name, source.name, loader, label_smoothing=label_smoothing, artifacts=artifacts, max_len=max_len
    )
