"""Sequence-level knowledge distillation (Kim and Rush 2016): the student learns the teacher's outputs instead of the references.

The teacher decodes each training source with the task's search (the test search, beam search by
default) the first time the source appears in a batch; its output is kept by the example's index,
so later epochs read it back instead of decoding again (the cost is one decoding of the training
set, spread over the first epoch). The student's loss is the task's own, teacher-forced
cross-entropy with its label smoothing, on ``[BOS] output [EOS]``. Validation and test score the
student against the real references, as any run.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pad_sequence

from suite.compress.method import Context, Method
from suite.text import BOS, EOS, PAD
from suite.types import Batch, Task

SEARCHES = ("test", "validation")
NEEDS = ("search", "val_search", "max_target_len", "special")  # what a sequence-to-sequence task offers (tasks/seq2seq.py)


class SequenceDistillationTask:
    """The task with each training target replaced by the teacher's decoding of its source; everything else is the task's.

    Args:
        task: a sequence-to-sequence task (set up: batches carry ``extra['index']``).
        teacher: the trained model, decoding in eval mode without gradients.
        search: 'test' (the task's test search) or 'validation' (its cheaper validation search).
    """

    def __init__(self, task: Task, teacher: nn.Module, search: str = "test") -> None:
        self.task, self.teacher = task, teacher.eval()
        self.decode = task.search if search == "test" else task.val_search
        self.outputs: dict[int, list[int]] = {}  # example index -> the teacher's output ids (no BOS, no EOS)

    def __getattr__(self, name: str) -> Any:  # loaders, evaluate, metrics...: the task's own
        return getattr(self.task, name)

    def teacher_targets(self, batch: Batch) -> Tensor:
        """``[BOS] teacher output [EOS]`` for every source of the batch, right-padded, (B, T + 2)."""
        index = batch.extra["index"].tolist()
        new = [row for row, i in enumerate(index) if i not in self.outputs]
        if new:
            rows = torch.tensor(new, device=batch.inputs.device)
            mask = None if batch.pad_mask is None else batch.pad_mask[rows]
            with torch.no_grad():
                ids = self.decode(self.teacher, batch.inputs[rows], mask, bos=self.task.special(BOS), eos=self.task.special(EOS), max_len=self.task.max_target_len)
            self.outputs.update((index[row], out) for row, out in zip(new, ids))
        bos, eos = self.task.special(BOS), self.task.special(EOS)
        rows = [torch.tensor([bos, *self.outputs[i], eos], dtype=torch.long) for i in index]
        return pad_sequence(rows, batch_first=True, padding_value=self.task.special(PAD)).to(batch.inputs.device)

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        return self.task.loss(model, replace(batch, targets=self.teacher_targets(batch)))


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
        missing = [name for name in NEEDS if not hasattr(context.task, name)]
        if missing:
            raise ValueError(f"compress={self.name} distils sequence-to-sequence tasks (translation, summarization); task {context.task.name!r} "
                             f"has no {', '.join(missing)} (classifiers: compress=distill_transformer or distill_lstm)")
        if context.build_model is None:
            raise ValueError(f"compress={self.name} needs a student: a compress.student model config (conf/compress/distill_sequence.yaml)")
        return context.build_model()

    def training_task(self, task: Task, teacher: nn.Module) -> Task:
        return SequenceDistillationTask(task, teacher, self.search)

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "search": self.search}
