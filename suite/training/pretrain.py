"""Self-pretraining on the task's own training inputs before the supervised fit (Amos, Berant and Gupta, ICLR 2024,
"Never Train from Scratch"): ``pretrain=denoise``.

The classifier's own input embedding and backbone are trained first on a token objective, with a temporary output
layer, through the one training loop (``Trainer.fit``) and a task wrapper (``DenoisingTask``):

- ``masked`` (a backbone that reads both ways: the Transformer encoder, a bidirectional RNN): a share of the input
  positions, in spans, is replaced by a learned mask vector and predicted back;
- ``next_token`` (a backbone that reads one way: an LSTM, GRU or RNN): each position predicts the next input token.

Only the training split's inputs are read (never a label, never validation or test for training); validation inputs,
masked with a fixed seed, pick the best pretraining epoch. The supervised fit then starts from those weights.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.training.checkpoint import PRETRAINED, read_pretrained, rng_kept, write_pretrained
from suite.types import Batch, Declared

log = logging.getLogger("suite.training.pretrain")

OBJECTIVES = ("auto", "masked", "next_token")


class PretrainError(ValueError):
    """A model or task that self-pretraining cannot serve, named with what is missing."""


def objective_for(backbone: nn.Module, objective: str) -> str:
    """'auto': masked tokens for a backbone that reads both ways, the next token for one that reads one way."""
    if objective not in OBJECTIVES:
        raise PretrainError(f"pretrain.objective must be one of {OBJECTIVES}, got {objective!r}")
    if objective != "auto":
        return objective
    if isinstance(backbone, Declared):  # what the backbone says it is (suite.models.declaration)
        return "masked" if "bidirectional" in backbone.capabilities else "next_token"
    one_way = getattr(backbone, "bidirectional", True) is False or bool(getattr(backbone, "causal", False))
    return "next_token" if one_way else "masked"


def vocabulary(content: nn.Module) -> int:
    """The number of token ids the classifier's input embedding takes (a ``TokenEmbedding``)."""
    table = getattr(content, "embed", None)
    if not isinstance(table, nn.Embedding):
        raise PretrainError(
            f"pretrain=denoise needs token inputs; this task's input embedding is {type(content).__name__} "
            "(images have no tokens to predict)"
        )
    return table.num_embeddings


def span_mask(pad_mask: Tensor | None, shape: torch.Size, rate: float, span: int, generator=None) -> Tensor:
    """(B, L) bool, True at the positions to hide: spans of ``span`` positions starting at a ``rate / span`` share of
    the positions (about ``rate`` of them hidden), never padding; at least one position a sequence."""
    starts = torch.rand(shape, generator=generator) < rate / span
    hidden = starts.clone()
    for shift in range(1, span):
        hidden[:, shift:] |= starts[:, :-shift]
    real = ~pad_mask.cpu() if pad_mask is not None else torch.ones(shape, dtype=torch.bool)
    hidden &= real
    empty = ~hidden.any(dim=1)
    if empty.any():  # a short sequence that drew nothing hides its first real position
        first = real.float().argmax(dim=1)
        hidden[empty, first[empty]] = True
    return hidden


class TokenModel(nn.Module):
    """The classifier's embedding, positions and backbone with a token output layer: (B, L) ids -> (B, L, V) logits.

    The input is laid out as the classifier lays it out: its pooler's [CLS] (if any) first, so every token sits at the
    position it has in the supervised fit and [CLS] is trained as context; [CLS]'s own output predicts nothing.

    Args:
        classifier: a ``suite.models.classifier.Classifier``; its modules are shared, not copied, so the supervised
            fit starts from what this model learns.
        vocab: token ids to predict.
    """

    def __init__(self, classifier: nn.Module, vocab: int) -> None:
        super().__init__()
        self.content, self.positions, self.backbone = classifier.content, classifier.positions, classifier.backbone
        self.pooler, self.dropout = classifier.pooler, classifier.dropout
        d = classifier.backbone.d_model
        self.mask_vector = nn.Parameter(torch.zeros(d))
        self.out = nn.Linear(d, vocab)

    def features(self, ids: Tensor, pad_mask: Tensor | None = None, hidden: Tensor | None = None) -> Tensor:
        """(B, L) ids, (B, L) padding, (B, L) positions to hide -> (B, L, D), the backbone's output at the tokens."""
        x = self.content(ids)  # (B, L, D)
        if hidden is not None:
            x = torch.where(hidden[..., None], self.mask_vector.to(x.dtype), x)
        x, pad_mask = self.pooler.prepend(x, pad_mask)  # (B, P + L, D): P prepended, as in the classifier
        h = self.backbone(self.dropout(self.positions(x)), pad_mask)  # (B, P + L, D)
        return h[:, h.size(1) - ids.size(1) :]

    def forward(self, ids: Tensor, pad_mask: Tensor | None = None, hidden: Tensor | None = None) -> Tensor:
        return self.out(self.features(ids, pad_mask, hidden))  # (B, L, V)


class DenoisingTask:
    """The ``Task`` contract around a classification task's inputs: its training inputs, a token objective.

    Args:
        task: the set-up classification task (its loaders give the inputs; the labels are never read).
        objective: 'masked' or 'next_token'.
        mask_rate, span: the masked objective's share of hidden positions and span length.
    """

    primary_metric = "token_accuracy"

    def __init__(self, task: Any, objective: str, mask_rate: float = 0.15, span: int = 1) -> None:
        if objective not in ("masked", "next_token"):
            raise PretrainError(f"objective must be 'masked' or 'next_token', got {objective!r}")
        if not 0.0 < mask_rate < 1.0 or span < 1:
            raise PretrainError(f"pretrain.mask_rate must be in (0, 1) and span >= 1, got {mask_rate}, {span}")
        self.task, self.objective, self.mask_rate, self.span = task, objective, mask_rate, span
        self.name, self.dataset = f"{task.name}:pretrain", task.dataset

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, Iterable[Batch]]:
        loaders = self.task.loaders(batch_size, seed, eval_batch_size=eval_batch_size)
        return {"train": loaders["train"], "val": loaders["val"]}

    def setup(self) -> None:
        self.task.setup()

    def split_sizes(self) -> dict[str, int]:
        return {k: v for k, v in self.task.split_sizes().items() if k != "test"}

    def seq_len(self) -> int | None:
        return self.task.seq_len()

    def targets(self, model: TokenModel, batch: Batch, generator=None) -> tuple[Tensor, Tensor, Tensor]:
        """(logits (N, V), targets (N,)) at the scored positions, and how many were scored."""
        ids, pad = batch.inputs, batch.pad_mask
        # The output layer (D x V, V in the thousands) only where a token is scored: most of the step's cost
        # otherwise, and 85 % of it thrown away under masking.
        if self.objective == "masked":
            hidden = span_mask(pad, ids.shape, self.mask_rate, self.span, generator).to(ids.device)
            return model.out(model.features(ids, pad, hidden)[hidden]), ids[hidden], hidden.sum()
        h = model.features(ids, pad)[:, :-1]  # position t predicts token t + 1
        scored = torch.ones_like(ids[:, 1:], dtype=torch.bool) if pad is None else ~pad[:, 1:]
        return model.out(h[scored]), ids[:, 1:][scored], scored.sum()

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        logits, targets, _ = self.targets(model, batch)
        return F.cross_entropy(logits.float(), targets)

    def evaluate(self, model: nn.Module, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
        generator = torch.Generator().manual_seed(0)  # the same hidden positions at every validation
        right = total = 0
        loss = 0.0
        for batch in batches:
            logits, targets, n = self.targets(model, batch, generator)
            loss += float(F.cross_entropy(logits.float(), targets, reduction="sum"))
            right += int((logits.argmax(-1) == targets).sum())
            total += int(n)
        return {"token_accuracy": right / max(total, 1), "loss": loss / max(total, 1)}


def shared_state(classifier: nn.Module) -> dict[str, Tensor]:
    """The weights pretraining changes: the embedding, positions, [CLS] (the pooler's) and backbone."""
    changed = ("content", "positions", "pooler", "backbone")
    return {k: v for k, v in classifier.state_dict().items() if k.split(".")[0] in changed}


def pretrain(
    classifier: nn.Module,
    task: Any,
    make_trainer: Callable[..., Any],
    device: torch.device,
    seed: int,
    directory: Path | None,
    steps: int,
    objective: str = "auto",
    mask_rate: float = 0.15,
    span: int = 1,
) -> dict[str, Any]:
    """Pretrain ``classifier``'s embedding and backbone in place for ``steps`` optimizer steps; returns the record's
    ``pretrain`` fields. Every global random state is as it was before: the supervised fit draws what a run from
    scratch draws (its data order, dropout), so the two differ in their starting weights alone.

    Args:
        make_trainer: ``**overrides -> Trainer``, the run's own trainer with the pretraining budget.
        directory: where the pretraining checkpoints go (a killed run resumes there; a finished pretraining is read
            back from ``pretrained.pt`` and not repeated).
    """
    with rng_kept():
        chosen = objective_for(classifier.backbone, objective)
        model = TokenModel(classifier, vocabulary(classifier.content)).to(device)
        done = directory / PRETRAINED if directory is not None else None
        if done is not None and done.is_file():
            weights, fields = read_pretrained(done, device)
            classifier.load_state_dict(weights, strict=False)
            log.info("pretrained weights read back from %s", done)
            return fields
        trainer = make_trainer(max_steps=steps, max_epochs=10**6, stop_at=None, patience=0, callbacks=[])
        fit = trainer.fit(model, DenoisingTask(task, chosen, mask_rate, span), device, seed, checkpoint_dir=directory)
        fields = {
            "objective": chosen,
            "steps": fit.steps,
            "epochs": fit.epochs,
            "seconds": fit.train_seconds,
            "mask_rate": mask_rate if chosen == "masked" else None,
            "span": span if chosen == "masked" else None,
            "val_token_accuracy": fit.val.get("token_accuracy"),
        }
        if done is not None:
            write_pretrained(shared_state(classifier), fields, done)
        log.info(
            "pretrained (%s) for %d steps: validation token accuracy %.4g",
            chosen,
            fit.steps,
            fields["val_token_accuracy"] or 0.0,
        )
        return fields
