"""Sequence classification from files: proteins, DNA, any alphabet, one loader for all.

A dataset is a config file (``conf/task/data/<name>.yaml``, read into ``SequenceSource``):
the files, where each label comes from (the file name, a column, or a FASTA header field),
the alphabet and its ambiguity codes, and the split rule. A new dataset needs no code.

FASTA is read with Biopython's ``SeqIO``, CSV/TSV through Hugging Face ``datasets``
(``suite.data.readers``). Only the sequence reaches the model: FASTA headers can leak the label
(AMP Scanner's ids tell AMPs from decoys) and are used for nothing but the label rule and
error messages. Residues become overlapping k-mer tokens (k=1: one token per residue); a
k-mer holding an ambiguity code (e.g. IUPAC N) becomes [UNK]; any other symbol is an error
naming the file and record, raised while loading, before any training.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from suite.data.datadir import DataError, require
from suite.data.readers import read_delimited
from suite.data.splits import consistent_unique, stratified_split
from suite.models.embeddings import TokenEmbedding
from tasks.classification import (
    Artifact,
    ClassificationData,
    ClassificationTask,
    Metrics,
    TokenDataset,
    accuracy_f1,
    pad_collate,
)

log = logging.getLogger(__name__)
PAD, UNK = 0, 1
SPLITS = ("train", "val", "test")
DELIMITERS = {"csv": ",", "tsv": "\t"}

# --- the dataset description -----------------------------------------------------------------------


@dataclass(frozen=True)
class LabelRule:
    """Where a record's label comes from.

    Args:
        field: 'file_name' (the file's name), 'column' (a CSV/TSV column) or 'header' (a FASTA description line).
        pattern: regular expression searched in that text; its first group (else the whole match) is the label.
            None: the whole text is the label.
        column: the column's name, for field='column'.
    """

    field: Literal["file_name", "column", "header"]
    pattern: str | None = None
    column: str | None = None


@dataclass(frozen=True)
class SequenceSource:
    """A sequence-classification dataset, as its config file describes it.

    Args:
        name: the dataset's name (recorded with each run).
        path: its folder under the data directory, as parts, e.g. [protein, amp_scanner_v2].
        format: 'fasta', 'csv' or 'tsv'.
        files: split ('train', 'val', 'test' or 'all') -> file names or globs under ``path``.
        label: where labels come from.
        classes: class names; their order gives the class ids (binary tasks: the positive class last).
        alphabet: the symbols that are tokens (upper case; sequences are upper-cased on reading).
        ambiguous: accepted codes standing for several symbols (IUPAC N, R, ...): k-mers holding one become [UNK].
        sequence_column: the sequence's column (csv/tsv).
        split: fractions that divide the 'all' part (else the 'train' part) into named splits,
            seeded and stratified, e.g. {train: 0.8, val: 0.1, test: 0.1}; None: the files give the splits.
        dedupe: before dividing, keep one copy of each repeated sequence and drop sequences seen with two labels.
    """

    name: str
    path: Sequence[str]
    format: Literal["fasta", "csv", "tsv"]
    files: Mapping[str, Sequence[str]]
    label: LabelRule
    classes: Sequence[str]
    alphabet: str
    ambiguous: str = ""
    sequence_column: str = "sequence"
    split: Mapping[str, float] | None = None
    dedupe: bool = False

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "SequenceSource":
        """Build from a config mapping; an unknown or missing key is an error naming the dataset."""
        cfg = dict(cfg)
        try:
            return cls(**{**cfg, "label": LabelRule(**cfg.get("label", {}))})
        except TypeError as err:
            raise ValueError(f"sequence dataset config {cfg.get('name', '?')!r}: {err}") from err

    def __post_init__(self) -> None:
        where = f"sequence dataset config {self.name!r}"
        if self.format not in ("fasta", *DELIMITERS):
            raise ValueError(f"{where}: format {self.format!r} is not one of ['csv', 'fasta', 'tsv']")
        if self.label.field not in ("file_name", "column", "header"):
            raise ValueError(
                f"{where}: label.field {self.label.field!r} is not one of ['column', 'file_name', 'header']"
            )
        if (self.label.field, self.format == "fasta") in (("column", True), ("header", False)):
            raise ValueError(f"{where}: label.field {self.label.field!r} does not fit format {self.format!r}")
        if self.label.field == "column" and not self.label.column:
            raise ValueError(f"{where}: label.field 'column' needs label.column")
        parts = set(self.files) | set(self.split or {})
        if not set(SPLITS) <= parts:
            raise ValueError(f"{where}: files and split give {sorted(parts)}, not all of {list(SPLITS)}")


@dataclass
class Example:
    """One record: its sequence, class id, and where it came from (for error messages)."""

    sequence: str
    label: int
    where: str


# --- reading ---------------------------------------------------------------------------------------


def label_from(rule: LabelRule, text: str, where: str) -> str:
    """The label inside ``text`` by the rule's pattern (the whole text when there is none)."""
    if rule.pattern is None:
        return text
    match = re.search(rule.pattern, text)
    if match is None:
        raise DataError(f"{where}: label pattern {rule.pattern!r} does not match {text!r}")
    return match.group(1) if match.groups() else match.group(0)


def class_id(source: SequenceSource, label: str, where: str) -> int:
    if label not in source.classes:
        raise DataError(f"{where}: label {label!r} is not one of {list(source.classes)}")
    return list(source.classes).index(label)


def read_fasta(path: Path, source: SequenceSource) -> list[Example]:
    """Every record of one FASTA file; the header serves the label rule only."""
    from Bio import SeqIO

    try:
        records = list(SeqIO.parse(path, "fasta"))
    except ValueError as err:  # e.g. text before the first '>' header
        raise DataError(f"{path}: malformed FASTA: {str(err).splitlines()[0]}") from err
    if not records:
        raise DataError(f"{path}: no FASTA records (a record starts with a '>' header line)")
    examples = []
    for number, record in enumerate(records, start=1):
        where = f"{path}: record {number} ({record.id!r})"
        sequence = str(record.seq).upper()
        if not sequence:
            raise DataError(f"{where}: empty sequence")
        text = path.name if source.label.field == "file_name" else record.description
        examples.append(Example(sequence, class_id(source, label_from(source.label, text, where), where), where))
    return examples


def read_table(path: Path, source: SequenceSource) -> list[Example]:
    """Every row of one headed CSV/TSV file (fields stripped of padding)."""
    by_column = source.label.field == "column"
    columns = [source.sequence_column] + ([source.label.column] if by_column else [])
    table = read_delimited(path, columns, delimiter=DELIMITERS[source.format], strip=True)
    examples = []
    for row, sequence in enumerate(table[source.sequence_column]):
        where = f"{path}:{row + 2}"  # line numbers count the header
        text = table[source.label.column][row] if by_column else path.name
        if not sequence:
            raise DataError(f"{where}: empty sequence")
        examples.append(
            Example(sequence.upper(), class_id(source, label_from(source.label, text, where), where), where)
        )
    return examples


def read_parts(source: SequenceSource, data_dir: str | None) -> dict[str, list[Example]]:
    """Each ``files`` entry read into its part, in the order the config lists the files."""
    root = require(data_dir, *source.path)
    read = read_fasta if source.format == "fasta" else read_table
    parts = {}
    for part, patterns in source.files.items():
        paths: list[Path] = []
        for pattern in [patterns] if isinstance(patterns, str) else patterns:
            found = sorted(root.glob(pattern))
            if not found:
                require(data_dir, *source.path, pattern)  # raises DatasetMissing naming the path and `make data`
            paths += found
        parts[part] = [example for path in paths for example in read(path, source)]
    return parts


# --- splits and tokens -----------------------------------------------------------------------------


def make_splits(source: SequenceSource, parts: dict[str, list[Example]], split_seed: int) -> dict[str, list[Example]]:
    """train/val/test: the files' own split, or a seeded stratified division of the 'all' (else 'train') part."""
    if source.split is None:
        return {name: parts[name] for name in SPLITS}
    base = "all" if "all" in parts else "train"
    pool = parts[base]
    if source.dedupe:
        keep = consistent_unique([e.sequence for e in pool], [e.label for e in pool])
        log.info("%s: %d records, %d after removing repeats and conflicting labels", source.name, len(pool), len(keep))
        pool = [pool[i] for i in keep]
    divided = stratified_split([e.label for e in pool], dict(source.split), split_seed)
    splits = {name: parts[name] for name in SPLITS if name in parts and name != base}
    return splits | {name: [pool[i] for i in idx] for name, idx in divided.items()}


class KmerVocab:
    """Overlapping k-mers over an alphabet -> ids: [PAD]=0, [UNK]=1, then every k-mer in alphabet order.

    Args:
        alphabet: symbols that form k-mers.
        ambiguous: accepted codes; a k-mer holding one is [UNK].
        k: k-mer length (1: one token per symbol).
        stride: step between k-mers (1: overlapping, as DNABERT; k: non-overlapping).
    """

    def __init__(self, alphabet: str, ambiguous: str = "", k: int = 1, stride: int = 1) -> None:
        if k < 1 or stride < 1:
            raise ValueError(f"k and stride must be positive, got k={k}, stride={stride}")
        self.alphabet, self.ambiguous, self.k, self.stride = alphabet, ambiguous, k, stride
        self.ids = {"".join(kmer): i for i, kmer in enumerate(itertools.product(alphabet, repeat=k), start=2)}

    def __len__(self) -> int:
        return 2 + len(self.ids)

    def encode(self, sequence: str, where: str) -> list[int]:
        """A sequence -> k-mer ids; an unknown symbol or a too-short sequence is a ``DataError`` naming ``where``."""
        for position, symbol in enumerate(sequence, start=1):
            if symbol not in self.alphabet and symbol not in self.ambiguous:
                codes = f", ambiguity codes {self.ambiguous}" if self.ambiguous else ""
                raise DataError(
                    f"{where}: unknown residue {symbol!r} at position {position} (alphabet {self.alphabet}{codes})"
                )
        if len(sequence) < self.k:
            raise DataError(f"{where}: sequence of length {len(sequence)} is shorter than k={self.k}")
        return [self.ids.get(sequence[i : i + self.k], UNK) for i in range(0, len(sequence) - self.k + 1, self.stride)]


def load(
    source: SequenceSource, data_dir: str | None, kmer: int, stride: int, max_len: int, split_seed: int
) -> ClassificationData:
    """Read, encode (checking every residue of every record first), split; longer inputs are truncated to ``max_len``
    tokens."""
    parts = read_parts(source, data_dir)
    vocab = KmerVocab(source.alphabet, source.ambiguous, kmer, stride)
    ids_of = {e.sequence: vocab.encode(e.sequence, e.where) for examples in parts.values() for e in examples}
    splits = make_splits(source, parts, split_seed)
    encoded = {name: [ids_of[e.sequence] for e in examples] for name, examples in splits.items()}
    overlap = {e.sequence for e in splits["train"]} & {e.sequence for e in splits["test"]}
    if overlap:
        log.warning("%s: %d test sequences also occur in training", source.name, len(overlap))
    longest = max(len(ids) for ids in itertools.chain.from_iterable(encoded.values()))
    return ClassificationData(
        splits={name: TokenDataset(encoded[name], [e.label for e in splits[name]]) for name in SPLITS},
        collate=pad_collate(PAD, max_len),
        n_classes=len(source.classes),
        class_names=list(source.classes),
        embedding=partial(TokenEmbedding, len(vocab), padding_idx=PAD),
        max_len=min(max_len, longest),
    )


def build(
    name: str,
    dataset: str,
    data: Mapping[str, Any],
    data_dir: str | None = None,
    kmer: int = 1,
    stride: int = 1,
    max_len: int = 512,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
    metrics: Metrics = accuracy_f1,
    primary_metric: str = "accuracy",
    artifacts: Sequence[Artifact] = (),
) -> ClassificationTask:
    """A sequence-classification task (``conf/task/protein.yaml``, ``conf/task/dna.yaml``) over the dataset ``data``."""
    source = SequenceSource.from_config(data)
    loader = partial(load, source, data_dir, kmer, stride, max_len, split_seed)
    return ClassificationTask(
        name,
        dataset,
        loader,
        label_smoothing=label_smoothing,
        metrics=metrics,
        primary_metric=primary_metric,
        artifacts=artifacts,
        max_len=max_len,
    )
