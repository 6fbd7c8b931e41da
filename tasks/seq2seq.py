"""Sequence to sequence as a task kind: any domain that maps a text to a text (translation, summarization).

A domain module supplies the text pairs of each split, the tokenizers and a scorer
(hypotheses and pairs -> metrics); this module supplies batching, model building, the loss
and evaluation by generation. Every example keeps a global index, so evaluation scores the
generated text against the raw references (never against re-decoded token ids), and knows
which split or extra test set an example came from.
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, Sequence, runtime_checkable

import torch
import torch.nn.functional as F
from hydra.utils import instantiate
from tokenizers import Tokenizer
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset, Sampler

from suite.data.datadir import DataError
from suite.data.tokenizers import BOS, EOS, PAD, decode, encode
from suite.generation.search import greedy
from suite.models.seq2seq import Seq2Seq, build_seq2seq
from suite.types import Batch, Readable


@dataclass(frozen=True)
class TextPair:
    """One example: the source, the target (the training target and first reference), and further references."""

    source: str
    target: str
    references: tuple[str, ...] = ()


Scorer = Callable[[list[str], list[TextPair]], dict[str, float]]


@runtime_checkable
class ScoresEachExample(Protocol):
    """Optional for a ``Scorer`` whose metrics are means over examples (ROUGE; not corpus BLEU): each example's own
    scores, written beside its output so two runs can be compared example by example."""

    def per_example(self, hypotheses: list[str], pairs: list[TextPair]) -> list[dict[str, float]]: ...


Search = Callable[..., list[list[int]]]  # suite.generation.search.greedy / beam_search with their options bound


@dataclass
class Seq2SeqData:
    """Everything a sequence-to-sequence task needs from its domain.

    Args:
        splits: 'train', 'val', 'test' and any extra test sets (evaluated with 'test', metrics
            prefixed with their name), in that order.
        src_tok, tgt_tok: tokenizers (the same object when the vocabulary is shared).
    """

    splits: dict[str, list[TextPair]]
    src_tok: Tokenizer
    tgt_tok: Tokenizer


class PairDataset(Dataset):
    """Encoded (source ids, target ids, global index) triples."""

    def __init__(self, sources: list[list[int]], targets: list[list[int]], indices: Sequence[int]) -> None:
        self.sources = [torch.as_tensor(s, dtype=torch.long) for s in sources]
        self.targets = [torch.as_tensor(t, dtype=torch.long) for t in targets]
        self.indices = list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, i: int) -> tuple[Tensor, Tensor, int]:
        return self.sources[i], self.targets[i], self.indices[i]


class LengthBatches(Sampler[list[int]]):
    """Batches of similar source length, so little compute goes to padding.

    Training: shuffle, sort within pools of ``pool`` batches, shuffle the batches (seeded).
    Evaluation: sorted by length, in a fixed order.
    """

    def __init__(
        self, lengths: Sequence[int], batch_size: int, generator: torch.Generator | None = None, pool: int = 50
    ) -> None:
        self.lengths, self.batch_size, self.generator, self.pool = list(lengths), batch_size, generator, pool

    def __len__(self) -> int:
        return (len(self.lengths) + self.batch_size - 1) // self.batch_size

    def __iter__(self) -> Iterator[list[int]]:
        if self.generator is None:
            order = sorted(range(len(self.lengths)), key=self.lengths.__getitem__)
            yield from (order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size))
            return
        rng = random.Random(int(torch.randint(2**31, (1,), generator=self.generator)))
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        span = self.batch_size * self.pool
        batches = []
        for start in range(0, len(order), span):
            pool = sorted(order[start : start + span], key=self.lengths.__getitem__)
            batches += [pool[i : i + self.batch_size] for i in range(0, len(pool), self.batch_size)]
        rng.shuffle(batches)
        yield from batches


def pad_stack(seqs: list[Tensor], pad_id: int) -> Tensor:
    """Right-pad 1-D id tensors to (B, longest)."""
    out = torch.full((len(seqs), max(1, max(len(s) for s in seqs))), pad_id, dtype=torch.long)
    for row, s in enumerate(seqs):
        out[row, : len(s)] = s
    return out


def pair_collate(pad_id: int, bos_id: int, eos_id: int) -> Callable[[list[tuple[Tensor, Tensor, int]]], Batch]:
    """Collate triples into a Batch: inputs = sources (B, L), targets = [BOS] target [EOS] (B, T + 2), extra['index']
    (B,)."""

    def collate(items: list[tuple[Tensor, Tensor, int]]) -> Batch:
        bos, eos = torch.tensor([bos_id]), torch.tensor([eos_id])
        src = pad_stack([s for s, _, _ in items], pad_id)
        tgt = pad_stack([torch.cat([bos, t, eos]) for _, t, _ in items], pad_id)
        pad_mask = src == pad_id
        n_tokens = int((~pad_mask).sum() + (tgt[:, 1:] != pad_id).sum())  # what the model reads and predicts
        return Batch(
            inputs=src,
            targets=tgt,
            pad_mask=pad_mask if pad_mask.any() else None,
            n_items=len(items),
            n_tokens=n_tokens,
            extra={"index": torch.tensor([i for _, _, i in items])},
        )

    return collate


class Seq2SeqTask:
    """The ``Task`` contract for text-to-text domains.

    Args:
        name: task name (translation, summarization).
        dataset: dataset name within the task.
        load: builds the ``Seq2SeqData`` (called once, by ``setup``).
        scorer: (hypotheses, pairs) -> metrics, higher is better.
        search: decoding for the test sets (``suite.generation.search`` function with options bound).
        val_search: decoding for validation (model selection), usually the cheaper greedy.
        max_source_len, max_target_len: token limits (longer inputs and targets are truncated;
            generation stops at ``max_target_len`` tokens).
        val_limit: decode only the first so many validation examples each epoch (None: all).
        label_smoothing: cross-entropy label smoothing in training.
        tie_output: the generator reuses the target embedding matrix.
        primary_metric: validation metric for model selection.
        text_model_defaults: values a model of strings (e.g. ``suite.models.lead.Lead``) takes
            from the task where its config leaves them null.
    """

    def __init__(
        self,
        name: str,
        dataset: str,
        load: Callable[[], Seq2SeqData],
        scorer: Scorer,
        search: Search,
        val_search: Search,
        max_source_len: int,
        max_target_len: int,
        val_limit: int | None = None,
        label_smoothing: float = 0.1,
        tie_output: bool = True,
        primary_metric: str = "bleu",
        text_model_defaults: dict[str, Any] | None = None,
    ) -> None:
        self.name, self.dataset, self.load, self.scorer = name, dataset, load, scorer
        self.search, self.val_search = search, val_search
        self.max_source_len, self.max_target_len, self.val_limit = max_source_len, max_target_len, val_limit
        self.label_smoothing, self.tie_output, self.primary_metric = label_smoothing, tie_output, primary_metric
        self.text_model_defaults = text_model_defaults or {}
        self.data: Seq2SeqData | None = None
        self.examples: list[TextPair] = []  # every split's pairs; a batch's extra['index'] points here
        self.groups: list[str] = []  # the split or test set of each example
        self.datasets: dict[str, PairDataset] = {}
        self.outputs: dict[str, dict[int, str]] = {}  # each group's texts from its latest evaluation

    # --- data ---------------------------------------------------------------------------------

    def setup(self) -> None:
        if self.data is not None:
            return
        self.data = self.load()
        self.examples, self.groups, self.datasets, self.outputs = [], [], {}, {}
        for split, pairs in self.data.splits.items():
            if split == "val" and self.val_limit is not None:
                pairs = pairs[: self.val_limit]
            start = len(self.examples)
            self.examples += pairs
            self.groups += [split] * len(pairs)
            sources = [ids[: self.max_source_len] for ids in encode(self.data.src_tok, [p.source for p in pairs])]
            empty = [i for i, ids in enumerate(sources) if not ids]
            if empty:  # an all-padding source row would make attention undefined
                raise DataError(
                    f"{self.dataset} {split}: example {empty[0] + 1} has an empty source ({len(empty)} such)"
                )
            targets = [ids[: self.max_target_len] for ids in encode(self.data.tgt_tok, [p.target for p in pairs])]
            self.datasets[split] = PairDataset(sources, targets, range(start, start + len(pairs)))

    @property
    def ready(self) -> Seq2SeqData:
        if self.data is None:
            raise RuntimeError(f"task {self.name!r} used before setup()")
        return self.data

    def split_sizes(self) -> dict[str, int]:
        self.ready
        return {split: len(ds) for split, ds in self.datasets.items()}

    def seq_len(self) -> int:
        return self.max_source_len

    def special(self, token: str) -> int:
        return self.ready.tgt_tok.token_to_id(token)

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, DataLoader]:
        """Train (length-bucketed, shuffled with ``seed``), val, and test with any extra test sets appended."""
        self.ready
        collate = pair_collate(self.special(PAD), self.special(BOS), self.special(EOS))
        gen = torch.Generator().manual_seed(seed)

        def make(dataset: Dataset, lengths: list[int], size: int, generator: torch.Generator | None) -> DataLoader:
            return DataLoader(dataset, batch_sampler=LengthBatches(lengths, size, generator), collate_fn=collate)

        lengths = {split: [len(s) for s in ds.sources] for split, ds in self.datasets.items()}
        tests = [split for split in self.datasets if split not in ("train", "val")]
        test = torch.utils.data.ConcatDataset([self.datasets[s] for s in tests])
        eval_bs = eval_batch_size or batch_size
        return {
            "train": make(self.datasets["train"], lengths["train"], batch_size, gen),
            "val": make(self.datasets["val"], lengths["val"], eval_bs, None),
            "test": make(test, [n for s in tests for n in lengths[s]], eval_bs, None),
        }

    # --- model, loss ---------------------------------------------------------------------------

    def build_model(self, model_cfg: Any) -> nn.Module:
        """An encoder-decoder from the model config, or a model of strings (``text_model``, e.g. Lead-k)."""
        data = self.ready
        if model_cfg.get("text_model") is not None:
            unset = {k: v for k, v in self.text_model_defaults.items() if model_cfg.text_model.get(k) is None}
            return instantiate(model_cfg.text_model, **unset)
        return build_seq2seq(
            model_cfg,
            src_vocab=data.src_tok.get_vocab_size(),
            tgt_vocab=data.tgt_tok.get_vocab_size(),
            max_len=max(self.max_source_len, self.max_target_len + 2),
            shared_vocab=data.src_tok is data.tgt_tok,
            tie_output=self.tie_output,
            pad_id=self.special(PAD),
        )

    def token_loss(
        self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0, reduction: str = "mean"
    ) -> Tensor:
        """Teacher-forced cross-entropy of the next target token, over real (non-pad) positions."""
        logits = model(batch.inputs, batch.pad_mask, batch.targets[:, :-1])  # (B, T + 1, V)
        return F.cross_entropy(
            logits.flatten(0, 1).float(),
            batch.targets[:, 1:].flatten(),
            ignore_index=self.special(PAD),
            label_smoothing=label_smoothing,
            reduction=reduction,
        )

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        return self.token_loss(model, batch, self.label_smoothing)

    # --- speed (suite.types.Infers, Generates) -------------------------------------------------

    def infer(self, model: nn.Module, batch: Batch) -> Tensor:
        """The teacher-forced pass over source and target, (B, T + 1, V): the forward half of a training step."""
        return model(batch.inputs, batch.pad_mask, batch.targets[:, :-1])

    def generate(self, model: nn.Module, batch: Batch, cache: bool = True) -> list[list[int]]:
        """Greedy decoding of exactly ``max_target_len`` tokens per source (EOS never ends a sequence early)."""
        return greedy(
            model, batch.inputs, batch.pad_mask, bos=self.special(BOS), eos=-1, max_len=self.max_target_len, cache=cache
        )

    def readable(self, model: nn.Module, batch: Batch) -> Readable:
        """The batch's first source without padding, and the model's greedy output as its decoder reads it ([BOS] +
        output)."""
        data = self.ready
        n = batch.inputs.size(1) if batch.pad_mask is None else int((~batch.pad_mask[0]).sum())
        src = batch.inputs[:1, :n]  # (1, n)
        bos = self.special(BOS)
        output = greedy(model, src, None, bos=bos, eos=self.special(EOS), max_len=self.max_target_len)[0]
        tgt = torch.tensor([[bos, *output]], device=src.device)  # (1, 1 + T)
        return Readable(
            lambda: model(src, None, tgt),
            [data.src_tok.id_to_token(i) for i in src[0].tolist()],
            [BOS, *(data.tgt_tok.id_to_token(i) for i in output)],
        )

    # --- evaluation ----------------------------------------------------------------------------

    def for_evaluation(self) -> "Seq2SeqTask":
        """This task with validation decoded by ``search`` too (``job=evaluate``; suite.types.EvaluationVariant)."""
        if self.data is not None:
            raise RuntimeError("for_evaluation() is called before setup(): the variant loads its own data")
        variant = copy.copy(self)  # before setup nothing is shared but settings: setup assigns every container anew
        variant.val_search = self.search
        return variant

    def evaluation_setting(self) -> str:
        """The test search in words: 'beam_search beam_size 4, length_penalty 0.6, ...'."""
        func = getattr(self.search, "func", self.search)
        options = getattr(self.search, "keywords", {})
        return " ".join([func.__name__, ", ".join(f"{k} {v}" for k, v in options.items())]).strip()

    def hypotheses(self, model: nn.Module, batch: Batch) -> list[str]:
        """Generated texts for a batch: decoded by search, or produced directly by a model of strings."""
        index = batch.extra["index"].tolist()
        if not isinstance(model, Seq2Seq):
            return model([self.examples[i].source for i in index])
        return decode(
            self.ready.tgt_tok,
            self.decode_ids(model, batch, "validation" if self.groups[index[0]] == "val" else "test"),
        )

    # --- outputs as targets (suite.types.Decodes: sequence-level distillation) ------------------

    def decode_ids(self, model: nn.Module, batch: Batch, search: str = "test") -> list[list[int]]:
        """The model's output ids (no [BOS], no [EOS]) for the batch's sources, by the test search or the validation
        one."""
        run = self.search if search == "test" else self.val_search
        return run(
            model,
            batch.inputs,
            batch.pad_mask,
            bos=self.special(BOS),
            eos=self.special(EOS),
            max_len=self.max_target_len,
        )

    def with_targets(self, batch: Batch, targets: list[list[int]]) -> Batch:
        """The batch with its targets replaced by ``targets`` (ids without [BOS]/[EOS]), framed as the collate frames
        the references."""
        bos, eos = [self.special(BOS)], [self.special(EOS)]
        framed = pad_stack(
            [torch.tensor(bos + t[: self.max_target_len] + eos, dtype=torch.long) for t in targets], self.special(PAD)
        )
        return replace(batch, targets=framed.to(batch.inputs.device))

    def evaluate(self, model: nn.Module, batches, device: torch.device) -> dict[str, float]:
        """Scores per split or test set: the main one unprefixed, extra test sets as '<name>_<metric>'; plus the token
        loss."""
        hyps: dict[int, str] = {}
        nll, count = 0.0, 0
        for batch in batches:
            if isinstance(model, Seq2Seq):
                nll += self.token_loss(model, batch, reduction="sum").item()
                count += int((batch.targets[:, 1:] != self.special(PAD)).sum())
            hyps.update(zip(batch.extra["index"].tolist(), self.hypotheses(model, batch)))
        by_group: dict[str, list[int]] = defaultdict(list)
        for i in sorted(hyps):
            by_group[self.groups[i]].append(i)
        main = next(g for g in self.datasets if g not in ("train", "val"))
        metrics: dict[str, float] = {}
        for group, idx in by_group.items():
            self.outputs[group] = {i: hyps[i] for i in idx}
            prefix = "" if group in ("val", main) else f"{group}_"
            scores = self.scorer([hyps[i] for i in idx], [self.examples[i] for i in idx])
            metrics.update({prefix + k: v for k, v in scores.items()})
        if count:
            metrics["loss"] = nll / count
        return metrics

    def write_artifacts(self, model: nn.Module, run_dir: Path, device: torch.device) -> list[Path]:
        """The test sets' generated texts beside source and reference, one JSON object a line.

        Written from the latest evaluation, which runs the final weights on test (no decoding is
        repeated); validation texts are left out, as in training they come from the last epoch.
        """
        written = []
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        for group, texts in self.outputs.items():
            if group in ("train", "val"):
                continue
            path = Path(run_dir) / f"outputs_{group}.jsonl"
            order = sorted(texts)
            pairs = [self.examples[i] for i in order]
            rows = [{"source": p.source, "reference": p.target, "output": texts[i]} for i, p in zip(order, pairs)]
            if isinstance(self.scorer, ScoresEachExample):
                for row, scores in zip(rows, self.scorer.per_example([texts[i] for i in order], pairs)):
                    row["scores"] = scores
            with path.open("w", encoding="utf-8") as f:
                f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
            written.append(path)
        return written
