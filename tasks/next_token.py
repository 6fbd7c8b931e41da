"""Next-token prediction as a task kind: documents become token streams, streams become windows.

Each split's documents are joined into one stream, each document followed by [EOS] and the
stream opened by one, so every document is read as a start after an [EOS]. Training reads
non-overlapping windows of ``seq_len`` tokens in a seeded order, and every model starts each
window from nothing (no state carried over), so all models read the same tokens with the same
context. Validation and test slide a window of ``seq_len`` tokens forward by ``stride`` and score
only the targets that are new in it: every target is scored exactly once, with between
``seq_len - stride + 1`` and ``seq_len`` tokens of context (fewer only for the first ``seq_len``
targets of a stream).

Metrics: ``loss`` (nats per token), ``perplexity`` per token = exp(loss), ``bits_per_byte`` = summed
negative log-likelihood / (ln 2 x the UTF-8 bytes of the scored text; [EOS] counts as one byte,
the break that ends a document), which does not depend on the tokenizer; ``neg_bits_per_byte``
(higher is better: model selection); and ``unigram_perplexity``, the same targets scored by their
training frequencies (add-one), the floor a model must beat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from suite.models.language_model import LanguageModel, build_language_model
from suite.types import Batch

Window = tuple[int, int]  # (first input position in the stream, offset of the first scored target)
CHUNK_TOKENS = 4096  # positions whose logits are held at once when scoring: (positions, V) floats


@dataclass
class Corpus:
    """What a language-modelling task reads.

    Args:
        documents: 'train', 'val', 'test' texts (generation prompts come from them).
        streams: each split as one 1-D id tensor: [EOS] doc [EOS] doc [EOS] ...
        tokenizer: fitted to the training documents.
        token_bytes: (V,) UTF-8 bytes each id stands for ([EOS]: 1, other specials 0).
        eos_id, pad_id: special ids.
    """

    documents: dict[str, list[str]]
    streams: dict[str, Tensor]
    tokenizer: Tokenizer
    token_bytes: Tensor
    eos_id: int
    pad_id: int


def join_documents(ids: list[list[int]], eos_id: int) -> Tensor:
    """Encoded documents -> one stream (N,): [EOS] d1 [EOS] d2 [EOS] ..."""
    return torch.tensor([eos_id] + [t for doc in ids for t in (*doc, eos_id)], dtype=torch.long)


def sliding_windows(n_tokens: int, length: int, stride: int) -> list[Window]:
    """Windows that score each of a stream's ``n_tokens - 1`` targets exactly once.

    A window (a, s) reads stream[a : a + length] and predicts stream[a + 1 : a + length + 1];
    it scores its targets from offset s on. The first window scores all of its targets; each
    next one ends ``stride`` targets later (the last one at the stream's end) and scores only
    those, so target j of window (a, s), j >= s, has j + 1 >= length - stride + 1 tokens of context.
    A stream shorter than ``length + 1`` is one window of ``n_tokens - 1``.
    """
    if not 1 <= stride <= length:
        raise ValueError(f"the stride must be between 1 and the window length {length}, got {stride}")
    length = min(length, n_tokens - 1)
    windows, end = [(0, 0)], length  # end: targets stream[1 : end + 1] are scored
    while end < n_tokens - 1:
        new_end = min(end + stride, n_tokens - 1)
        windows.append((new_end - length, length - (new_end - end)))
        end = new_end
    return windows


def training_windows(n_tokens: int, length: int) -> list[Window]:
    """Non-overlapping full windows over a stream, every target scored (the tail that fills no window is left out)."""
    return [(a, 0) for a in range(0, n_tokens - length, length)]


def document_index(stream: Tensor, eos_id: int) -> Tensor:
    """(N,) the document each stream position belongs to: the index of the document whose text, or closing [EOS], is
    there (-1 at the opening [EOS], which is never a target)."""
    eos = (stream == eos_id).long()
    return torch.cumsum(eos, 0) - eos - 1  # the [EOS]s strictly before a position, less the opening one


class Windows(Dataset):
    """Windows of a stream: each item is (ids (length + 1,), offset of the first scored target, and the document of
    each target (length,) where ``documents`` (``document_index``) is given, else None)."""

    def __init__(self, stream: Tensor, windows: list[Window], length: int, documents: Tensor | None = None) -> None:
        self.stream, self.windows, self.length, self.documents = stream, windows, length, documents

    def __len__(self) -> int:
        return len(self.windows)

    def __getitem__(self, i: int) -> tuple[Tensor, int, Tensor | None]:
        start, first = self.windows[i]
        docs = self.documents[start + 1 : start + self.length + 1] if self.documents is not None else None
        return self.stream[start : start + self.length + 1], first, docs


def window_collate(items: list[tuple[Tensor, int, Tensor | None]]) -> Batch:
    """Items of one length -> inputs (B, L), targets (B, L) shifted by one, extra['scored'] (B, L) bool, and
    extra['document'] (B, L), each target's document, where the windows know them."""
    ids = torch.stack([w for w, _, _ in items])  # (B, L + 1)
    first = torch.tensor([f for _, f, _ in items])
    extra = {"scored": torch.arange(ids.size(1) - 1)[None, :] >= first[:, None]}
    if all(d is not None for _, _, d in items):
        extra["document"] = torch.stack([d for _, _, d in items])
    return Batch(ids[:, :-1], ids[:, 1:], n_items=len(items), n_tokens=ids[:, :-1].numel(), extra=extra)


def scored_nll(model: nn.Module, inputs: Tensor, targets: Tensor, scored: Tensor) -> Tensor:
    """Negative log-likelihood of the scored targets: (B, L) ids, targets and bool ``scored`` -> (N,) nats, float32, N =
    scored.sum().

    Only the scored positions go through the output layer (``model.features``, then
    ``model.generator``): a sliding window scores its last ``stride`` positions, a context-use
    window one, and at V = 4000 the output layer costs more per position than the backbone. Rows go
    through the model a few at a time, so at most ``CHUNK_TOKENS`` positions are held at once.
    """
    rows = max(1, CHUNK_TOKENS // inputs.size(1))
    parts = [
        F.cross_entropy(model.generator(model.features(x)[s]).float(), y[s], reduction="none")
        for x, y, s in zip(inputs.split(rows), targets.split(rows), scored.split(rows))
    ]
    return torch.cat(parts)


@dataclass
class Tally:
    """Sums over scored targets, turned into the metrics at the end; per document too, where the batches name each
    target's document (``documents()``: what a paired comparison of two models resamples)."""

    nll: float = 0.0  # nats
    unigram_nll: float = 0.0
    tokens: int = 0
    bytes: int = 0
    parts: list[tuple[Tensor, Tensor, Tensor]] = field(default_factory=list)  # (document, nll, bytes) per target

    def add(
        self,
        nll: Tensor,
        targets: Tensor,
        scored: Tensor,
        token_bytes: Tensor,
        unigram: Tensor,
        documents: Tensor | None = None,
    ) -> None:
        """nll (N,) of the scored targets (``scored_nll``), targets and scored (B, L); token_bytes and unigram (V,)
        tables on the targets' device; documents (B, L), each target's document, or None."""
        picked = targets[scored]
        self.nll += nll.double().sum().item()
        self.unigram_nll += unigram[picked].double().sum().item()
        self.tokens += int(scored.sum())
        self.bytes += int(token_bytes[picked].sum())
        if documents is not None:
            self.parts.append((documents[scored].cpu(), nll.double().cpu(), token_bytes[picked].cpu()))

    def documents(self) -> list[dict[str, Any]]:
        """Per document with a scored target, in the split's order: 'id' (its index), 'nll' (nats summed over its
        targets), 'tokens' and 'bytes' (of those targets)."""
        if not self.parts:
            return []
        docs, nll, size = (torch.cat(x) for x in zip(*self.parts))
        n = int(docs.max()) + 1
        sums = torch.zeros(n, dtype=torch.float64).index_add_(0, docs, nll)
        tokens = torch.bincount(docs, minlength=n)
        size = torch.bincount(docs, weights=size.double(), minlength=n)
        return [
            {"id": k, "nll": sums[k].item(), "tokens": int(tokens[k]), "bytes": int(size[k])}
            for k in range(n)
            if tokens[k] > 0
        ]

    def metrics(self) -> dict[str, float]:
        loss = self.nll / max(1, self.tokens)
        bpb = self.nll / (math.log(2) * max(1, self.bytes))
        return {
            "loss": loss,
            "perplexity": math.exp(loss),
            "bits_per_byte": bpb,
            "neg_bits_per_byte": -bpb,
            "unigram_perplexity": math.exp(self.unigram_nll / max(1, self.tokens)),
        }


def unigram_nll(stream: Tensor, vocab_size: int) -> Tensor:
    """(V,) -log p(id) from a stream's counts, add-one smoothed."""
    counts = torch.bincount(stream, minlength=vocab_size).double() + 1.0
    return (counts.sum().log() - counts.log()).float()


class NextTokenTask:
    """The ``Task`` contract for language modelling.

    Args:
        name, dataset: as recorded.
        load: builds the ``Corpus`` (called once, by ``setup``).
        seq_len: window length L: the context every model is trained and scored with.
        stride: targets newly scored per evaluation window (1 <= stride <= L).
        tie_output: the output layer shares the embedding matrix.
    """

    primary_metric = "neg_bits_per_byte"

    def __init__(
        self, name: str, dataset: str, load: Callable[[], Corpus], seq_len: int, stride: int, tie_output: bool = True
    ) -> None:
        if not 1 <= stride <= seq_len:
            raise ValueError(f"task.stride must be between 1 and task.seq_len={seq_len}, got {stride}")
        self.name, self.dataset, self.load = name, dataset, load
        self.length, self.stride, self.tie_output = seq_len, stride, tie_output
        self.corpus: Corpus | None = None
        self.unigram: Tensor | None = None
        self.latest: Tally | None = None

    def setup(self) -> None:
        if self.corpus is None:
            self.corpus = self.load()
            self.unigram = unigram_nll(self.corpus.streams["train"], self.vocab_size)

    @property
    def ready(self) -> Corpus:
        if self.corpus is None:
            raise RuntimeError(f"task {self.name!r} used before setup()")
        return self.corpus

    @property
    def vocab_size(self) -> int:
        return self.ready.tokenizer.get_vocab_size()

    def split_sizes(self) -> dict[str, int]:
        """Documents per split, and tokens (``<split>_tokens``)."""
        c = self.ready
        return {**{s: len(d) for s, d in c.documents.items()}, **{f"{s}_tokens": len(t) for s, t in c.streams.items()}}

    def seq_len(self) -> int:
        return self.length

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, DataLoader]:
        streams = self.ready.streams
        gen = torch.Generator().manual_seed(seed)
        train = Windows(streams["train"], training_windows(len(streams["train"]), self.length), self.length)
        loaders = {
            "train": DataLoader(train, batch_size=batch_size, shuffle=True, generator=gen, collate_fn=window_collate)
        }
        for split in ("val", "test"):
            windows = Windows(
                streams[split],
                sliding_windows(len(streams[split]), self.length, self.stride),
                self.length,
                document_index(streams[split], self.ready.eos_id),
            )
            loaders[split] = DataLoader(windows, batch_size=eval_batch_size or batch_size, collate_fn=window_collate)
        return loaders

    def build_model(self, model_cfg: Any) -> LanguageModel:
        return build_language_model(
            model_cfg, self.vocab_size, self.length, pad_id=self.ready.pad_id, tie_output=self.tie_output
        )

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        """Mean cross-entropy over the scored targets (all of them in training windows)."""
        logits = model(batch.inputs)  # (B, L, V)
        scored = batch.extra["scored"]
        return F.cross_entropy(logits[scored].float(), batch.targets[scored])

    def infer(self, model: nn.Module, batch: Batch) -> Tensor:
        """The inference pass ``job=speed`` times (``suite.types.Infers``): (B, L, V) logits, every position at once."""
        return model(batch.inputs)

    # --- what generation and the context-use measurement read (``suite.types.LanguageTask``) ---

    def eos_id(self) -> int:
        return self.ready.eos_id

    def encode(self, text: str) -> list[int]:
        return self.ready.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: list[int]) -> str:
        return self.ready.tokenizer.decode(ids, skip_special_tokens=True)

    def documents(self, split: str) -> list[str]:
        return self.ready.documents[split]

    def exact_context_batches(
        self, split: str, contexts: list[int], n_targets: int, batch_size: int, seed: int
    ) -> dict[int, DataLoader]:
        """For each context length c, batches that score the same ``n_targets`` targets of ``split``, each
        given exactly the c tokens before it (one scored target a window).

        The targets are drawn (seeded) from the positions that have ``max(contexts)`` tokens before them.
        """
        stream = self.ready.streams[split]
        reach = max(contexts)
        if len(stream) <= reach:
            raise ValueError(f"the {split} stream has {len(stream)} tokens: too few for a context of {reach}")
        candidates = torch.arange(reach, len(stream))
        pick = torch.randperm(len(candidates), generator=torch.Generator().manual_seed(seed))[:n_targets]
        targets = candidates[pick].sort().values.tolist()
        return {
            c: DataLoader(
                Windows(stream, [(t - c, c - 1) for t in targets], c), batch_size=batch_size, collate_fn=window_collate
            )
            for c in contexts
        }

    def evaluate(self, model: nn.Module, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
        """Perplexity, bits per byte and the unigram baseline over every scored target of the split."""
        tally = Tally()
        token_bytes, unigram = self.ready.token_bytes.to(device), self.unigram.to(device)
        for batch in batches:
            scored = batch.extra["scored"]
            nll = scored_nll(model, batch.inputs, batch.targets, scored)
            tally.add(nll, batch.targets, scored, token_bytes, unigram, batch.extra.get("document"))
        self.latest = tally
        return tally.metrics()

    def predictions(self) -> list[dict[str, Any]]:
        """The latest evaluation per document of its split (``Tally.documents``): summed over documents, the record's
        loss, perplexity and bits per byte."""
        if self.latest is None:
            raise RuntimeError(f"task {self.name!r}: predictions() before any evaluate()")
        return self.latest.documents()
