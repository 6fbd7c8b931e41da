"""Sequence-level distillation (Kim and Rush 2016): the student learns the teacher's outputs instead of the references.

Before the student's training starts, the teacher decodes every training source once with the
task's search (the test search, beam search by default); its outputs are kept by example index.
Decoding there, not inside the loss, keeps the first steps' time honest: the trainer's budget plan
times them. The student's loss is the task's own (teacher-forced cross-entropy with its label
smoothing) on the teacher's outputs, framed as the task frames references. Validation and test
score the student against the real references, as any run.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from suite.compress.method import Context, Method
from suite.types import Batch, Decodes, Task

SEARCHES = ("test", "validation")


class SequenceDistillationTask:
    """The task with each training target replaced by the teacher's decoding of its source; everything else is the
    task's.

    Args:
        task: a sequence-to-sequence task (``suite.types.Decodes``; set up: batches carry ``extra['index']``).
        teacher: the trained model, decoding in eval mode without gradients.
        search: 'test' (the task's test search) or 'validation' (its cheaper validation search).
    """

    def __init__(self, task: Decodes, teacher: nn.Module, search: str = "test") -> None:
        self.task, self.teacher, self.search = task, teacher.eval(), search
        self.outputs: dict[int, list[int]] = {}  # example index -> the teacher's output ids

    def __getattr__(self, name: str) -> Any:  # loaders, evaluate, metrics...: the task's own
        return getattr(self.task, name)

    def teacher_outputs(self, batch: Batch) -> list[list[int]]:
        """The teacher's output ids for each of the batch's sources, decoded the first time a source is seen."""
        index = batch.extra["index"].tolist()
        if any(i not in self.outputs for i in index):
            with torch.no_grad():
                self.outputs.update(zip(index, self.task.decode_ids(self.teacher, batch, self.search)))
        return [self.outputs[i] for i in index]

    def decode_training_set(self, batch_size: int = 64) -> None:
        """Decode every training source now (``batch_size`` at a time), before training starts."""
        device = next(self.teacher.parameters()).device
        for batch in self.task.loaders(batch_size, 0)["train"]:
            self.teacher_outputs(batch.to(device))

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        return self.task.loss(model, self.task.with_targets(batch, self.teacher_outputs(batch)))


class SequenceDistillation(Method):
    """Train a fresh student (``compress.student``) on the teacher's decoded training targets with the run's trainer.

    Args:
        search: 'test' (the task's test search: beam search, as Kim and Rush) or 'validation' (greedy, cheaper).
        fine_tune: trainer settings over the run's (an empty dict: the run's trainer as it is).
    """

    name = "sequence_distillation"

    def __init__(self, search: str = "test", fine_tune: dict[str, Any] | None = None) -> None:
        super().__init__({} if fine_tune is None else fine_tune)
        if search not in SEARCHES:
            raise ValueError(f"compress.search must be one of {list(SEARCHES)}, got {search!r}")
        self.search = search

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        if not isinstance(context.task, Decodes):
            raise ValueError(
                f"compress={self.name} distils sequence-to-sequence tasks (translation, summarization); "
                f"task {context.task.name!r} does not decode its inputs into targets (classifiers: "
                "compress=distill_transformer or distill_lstm)"
            )
        if context.build_model is None:
            raise ValueError(
                f"compress={self.name} needs a student: a compress.student model config "
                "(conf/compress/distill_sequence.yaml)"
            )
        return context.build_model()

    def training_task(self, task: Task, teacher: nn.Module) -> Task:
        distilled = SequenceDistillationTask(task, teacher, self.search)
        distilled.decode_training_set()
        return distilled

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "search": self.search}
