"""The contracts that keep tasks, models and measurements interchangeable.

Shapes: B batch, L source length, T target length, D model width.
Masks follow PyTorch's ``key_padding_mask`` convention: ``True`` marks padding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

import torch
from torch import Tensor, nn


@dataclass
class Batch:
    """One mini-batch plus the counts that measurement needs.

    Args:
        inputs: model input, e.g. token ids (B, L) or images (B, C, H, W).
        targets: what the loss compares against, e.g. class ids (B,).
        pad_mask: (B, L) bool, True at padding; None when nothing is padded.
        n_items: number of examples (sequences, images) in the batch.
        n_tokens: number of real (non-pad) input positions, for token throughput.
        extra: task-specific tensors (e.g. target masks) moved with the batch.
    """

    inputs: Tensor
    targets: Tensor
    pad_mask: Tensor | None = None
    n_items: int = 0
    n_tokens: int = 0
    extra: dict[str, Tensor] = field(default_factory=dict)

    def to(self, device: torch.device | str) -> "Batch":
        """Move every tensor to ``device`` in one call (non-blocking where possible)."""
        move = lambda t: t.to(device, non_blocking=True) if isinstance(t, Tensor) else t  # noqa: E731
        return replace(
            self,
            inputs=move(self.inputs),
            targets=move(self.targets),
            pad_mask=move(self.pad_mask),
            extra={k: move(v) for k, v in self.extra.items()},
        )


@runtime_checkable
class Backbone(Protocol):
    """A sequence-to-sequence map of the same length: Transformer encoder, RNN, LSTM, GRU."""

    d_model: int

    def __call__(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None -> (B, L, D)."""
        ...


@runtime_checkable
class Declared(Protocol):
    """A Backbone that says what it is (``suite.models.declaration``): what the built instance can do, the family whose
    measured precision policy applies, and the numbers a sequence carries between steps."""

    capabilities: frozenset[str]
    precision_family: str

    def state_size(self, length: int) -> int:
        """Numbers per sequence carried from one step to the next after ``length`` positions (a recurrence: constant;
        attention: its key/value cache)."""
        ...


State = dict[str, Tensor]
"""Generation state: batch-first tensors only, so beam search reorders any model's state alike."""


def scoped(state: State, prefix: str) -> State:
    """The entries of ``state`` under ``prefix`` (e.g. one layer's), with the prefix taken off."""
    return {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}


def prefixed(state: State, prefix: str) -> State:
    """``state`` with ``prefix`` put before every key: the inverse of ``scoped``."""
    return {prefix + k: v for k, v in state.items()}


@runtime_checkable
class CausalBackbone(Backbone, Protocol):
    """A Backbone in which position t reads positions <= t only, and can go on one step at a time
    (a language model's body: the causal Transformer stack, a unidirectional RNN)."""

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """The next positions x (B, t, D) after those in ``state`` ({} at the start) -> ((B, t, D), the new state).

        Equals the matching positions of ``__call__`` on the whole sequence, at the cost of the new positions only.
        """
        ...


@runtime_checkable
class Decoder(Protocol):
    """Target side of a sequence-to-sequence model: Transformer decoder, recurrent decoder with attention."""

    d_model: int

    def __call__(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """tgt (B, T, D), memory (B, L, D), memory_mask (B, L) bool | None -> (B, T, D).

        Position t depends on tgt[:, :t + 1] only (teacher forcing, all positions at once).
        """
        ...

    def init_cache(self, memory: Tensor, memory_mask: Tensor | None = None) -> State:
        """The state before the first generated position (e.g. the memory's cross-attention keys)."""
        ...

    def step(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None, cache: State) -> tuple[Tensor, State]:
        """The next positions tgt (B, t, D) after those in the cache -> ((B, t, D), the new cache).

        Equals the matching positions of ``__call__`` on the whole prefix, at the cost of the new positions only.
        """
        ...


@runtime_checkable
class Task(Protocol):
    """A domain: data, input embedding, head, loss and metrics. Loss and metrics never live in the model."""

    name: str
    dataset: str
    primary_metric: str  # higher is better; drives model selection and early stopping

    def setup(self) -> None:
        """Load and split the data (idempotent)."""
        ...

    def split_sizes(self) -> dict[str, int]:
        """Number of examples per split, for the result record."""
        ...

    def loaders(self, batch_size: int, seed: int) -> Mapping[str, Iterable[Batch]]:
        """DataLoaders for 'train', 'val' and 'test' (train shuffled with ``seed``)."""
        ...

    def build_model(self, model_cfg: Any) -> nn.Module:
        """Compose the task's input embedding and head around the configured backbone."""
        ...

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        """Scalar training loss for one batch."""
        ...

    def evaluate(self, model: nn.Module, batches: Iterable[Batch], device: torch.device) -> dict[str, float]:
        """Metrics over a whole split; the model is already in eval mode."""
        ...

    def seq_len(self) -> int | None:
        """The (maximum) input length the task feeds the model.

        Before ``setup``: the length its configuration asks for, or None where only the data
        tells (an image's patch count); a run that fails before its data is read keeps its place
        on a length axis, and a speed point beyond its cap is skipped without reading any data.
        After ``setup``: the data's, never above the configured one (60 for 60-nt DNA windows
        configured with ``max_len: 512``).
        """
        ...


@runtime_checkable
class LanguageTask(Task, Protocol):
    """A ``Task`` over text streams (``tasks.next_token``): what generation and the context-use measurement read."""

    def eos_id(self) -> int:
        """The id that ends a document; a stream opens with it, so a prompt starts with it too."""
        ...

    def encode(self, text: str) -> list[int]:
        """Text -> ids (no special tokens)."""
        ...

    def decode(self, ids: list[int]) -> str:
        """Ids -> text (special tokens dropped)."""
        ...

    def documents(self, split: str) -> list[str]:
        """The raw texts of 'train', 'val' or 'test'."""
        ...

    def exact_context_batches(
        self, split: str, contexts: list[int], n_targets: int, batch_size: int, seed: int
    ) -> dict[int, Iterable[Batch]]:
        """Per context length c, batches scoring the same targets of ``split``, each with exactly c tokens before it."""
        ...


@runtime_checkable
class KeepsPredictions(Protocol):
    """Optional for a ``Task``: the per-example outputs of its latest ``evaluate``, so that two runs' test scores can be
    compared example by example after the fact (``suite.report.significance``)."""

    def predictions(self) -> list[dict[str, Any]]:
        """One dict per example, in the split's order: 'id' (its index in the split), 'label' and 'prediction'."""
        ...


@runtime_checkable
class WritesArtifacts(Protocol):
    """Optional for a ``Task``: files about the finished run (plots, tables) left in its run directory."""

    def write_artifacts(self, model: nn.Module, run_dir: Path, device: torch.device) -> list[Path]:
        """Called once after fit, with the best weights in place; returns the files written (under run_dir)."""
        ...


@runtime_checkable
class Infers(Protocol):
    """Optional for a ``Task``: how its model runs on a batch at inference, as ``job=speed`` times it.

    A task without it is taken for a classifier (``inference`` below).
    """

    def infer(self, model: nn.Module, batch: Batch) -> Any:
        """One forward pass over ``batch`` without training (e.g. a teacher-forced pass of an encoder-decoder)."""
        ...


def inference(task: Any, model: nn.Module, batch: Batch) -> Any:
    """The task's inference call on ``batch``: its ``infer`` where it has one, else a classifier's ``model(inputs,
    pad_mask)``."""
    if isinstance(task, Infers):
        return task.infer(model, batch)
    return model(batch.inputs, batch.pad_mask)


@runtime_checkable
class Generates(Protocol):
    """Optional for a ``Task`` whose model writes sequences: ``job=speed`` also times generation, with and without the
    cache."""

    def generate(self, model: nn.Module, batch: Batch, cache: bool = True) -> list[list[int]]:
        """Greedy ids for each of the batch's B inputs, as many for every input (no early end: the
        speed of the model, not of its outputs' lengths); ``cache``: incremental decoding, else the
        whole prefix re-run at each step."""
        ...


@runtime_checkable
class Decodes(Protocol):
    """Optional for a sequence-to-sequence ``Task``: a model's outputs for a batch's sources, usable as training targets
    (sequence-level distillation)."""

    def decode_ids(self, model: nn.Module, batch: Batch, search: str = "test") -> list[list[int]]:
        """Output ids (no start or end marker) for each of the batch's sources, by the task's 'test' or 'validation'
        search."""
        ...

    def with_targets(self, batch: Batch, targets: list[list[int]]) -> Batch:
        """The batch with its targets replaced by ``targets``, framed as the task frames its references."""
        ...


@runtime_checkable
class EvaluationVariant(Protocol):
    """Optional for a ``Task`` that scores saved weights (``job=evaluate``) otherwise than training validates them."""

    def for_evaluation(self) -> "Task":
        """This task scoring validation as it scores test (e.g. decoded with the test search, not
        the cheaper one training validates with), so a setting chosen on validation is the one
        test is scored with. Called before ``setup``."""
        ...

    def evaluation_setting(self) -> str:
        """That scoring in words, for the record's ``scored_with`` (e.g. 'beam_search beam_size 4, length_penalty
        0.6')."""
        ...


@dataclass
class Readable:
    """One example as a model reads it, for ``job=attention_maps``.

    Args:
        forward: runs the model once on the example (the pass whose attention is drawn).
        source: the input's tokens as the encoder sees them ([CLS] first where the model prepends it).
        target: the tokens the decoder reads (an encoder-decoder's [BOS] and output), else None.
    """

    forward: Callable[[], Any]
    source: list[str]
    target: list[str] | None = None


@runtime_checkable
class ShowsAttention(Protocol):
    """Optional for a ``Task`` whose inputs are tokens: its example in readable form (``job=attention_maps``)."""

    def readable(self, model: nn.Module, batch: Batch) -> Readable:
        """The batch's first example, with the call that runs the model on it (no padding) and its tokens."""
        ...
