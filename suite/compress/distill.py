"""Knowledge distillation (Hinton et al. 2015): a student trained on the teacher's softened outputs and the labels.

The loss lives in a task wrapper (``DistillationTask``), never in the model: the student is
trained by the ordinary trainer on ``mix * CE(student, labels) + (1 - mix) * T^2 * KL(teacher_T || student_T)``,
where ``_T`` is a softmax at temperature T (the T^2 keeps the soft term's gradients at the scale
of the hard one's as T changes). The student is any model config (``compress.student``): a
smaller Transformer, or the LSTM (Tang et al. 2019).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.compress.method import Context, Method
from suite.types import Batch, Task, inference


def distillation_loss(student: Tensor, teacher: Tensor, targets: Tensor, temperature: float, mix: float) -> Tensor:
    """Hinton's loss for logits (N, C) and class ids (N,): ``mix`` weighs the hard-label cross-entropy, ``1 - mix`` the
    softened KL (times T^2)."""
    hard = F.cross_entropy(student, targets)
    if mix == 1.0:
        return hard
    soft = F.kl_div(
        F.log_softmax(student / temperature, dim=-1),
        F.log_softmax(teacher / temperature, dim=-1),
        log_target=True,
        reduction="batchmean",
    )
    return mix * hard + (1.0 - mix) * temperature**2 * soft


class DistillationTask:
    """The task, its training loss replaced by ``distillation_loss`` against a frozen teacher; everything else is the
    task's.

    Args:
        task: a classification task (its model maps a batch to logits (B, C)).
        teacher: the trained model, run in eval mode without gradients.
        temperature, mix: as ``distillation_loss``.
    """

    def __init__(self, task: Task, teacher: nn.Module, temperature: float, mix: float) -> None:
        self.task, self.teacher, self.temperature, self.mix = task, teacher.eval(), temperature, mix

    def __getattr__(self, name: str) -> Any:  # loaders, evaluate, metrics...: the task's own
        return getattr(self.task, name)

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        with torch.no_grad():
            teacher = inference(self.task, self.teacher, batch).float()
        student = inference(self.task, model, batch).float()
        return distillation_loss(student, teacher, batch.targets, self.temperature, self.mix)


class Distillation(Method):
    """Train a fresh student (``compress.student``, a model config) on the teacher's outputs with the run's trainer (or
    ``fine_tune`` over it).

    Args:
        temperature: T > 0 of the softened distributions.
        mix: weight of the hard-label loss, in [0, 1] (1: plain cross-entropy, the student trained alone).
        fine_tune: trainer settings over the run's (an empty dict: the run's trainer as it is).
    """

    name = "distillation"

    def __init__(self, temperature: float = 2.0, mix: float = 0.5, fine_tune: dict[str, Any] | None = None) -> None:
        super().__init__({} if fine_tune is None else fine_tune)
        if not temperature > 0:
            raise ValueError(f"compress.temperature must be > 0, got {temperature}")
        if not 0.0 <= mix <= 1.0:
            raise ValueError(f"compress.mix must be in [0, 1], got {mix}")
        self.temperature, self.mix = float(temperature), float(mix)

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        if context.build_model is None:
            raise ValueError(
                f"compress={self.name} needs a student: a compress.student model config (conf/compress/distill_*.yaml)"
            )
        example = context.example
        with torch.no_grad():
            logits = inference(context.task, model.eval(), example)
        if (
            logits.dim() != 2 or example.targets.shape != logits.shape[:1]
        ):  # one class per input: what the loss above compares
            raise ValueError(
                f"compress={self.name} distils classifiers (logits (B, C), one class per input); "
                f"task {context.task.name!r} gives outputs {tuple(logits.shape)} for targets "
                f"{tuple(example.targets.shape)} (sequence-to-sequence tasks: compress=distill_sequence)"
            )
        return context.build_model()

    def training_task(self, task: Task, teacher: nn.Module) -> Task:
        return DistillationTask(task, teacher, self.temperature, self.mix)

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "temperature": self.temperature, "mix": self.mix}
