"""Distillation: Hinton's loss by hand, the wrapper trains the student only, the job builds it from its own config."""

import math

import pytest
import torch
import torch.nn.functional as F

from suite.compress.distill import Distillation, DistillationTask, distillation_loss
from suite.jobs.compress import method_of
from suite.jobs.prepare import prepare
from suite.types import Batch
from tests.conftest import compose_config, shrink

CPU = torch.device("cpu")


def test_distillation_loss_equals_the_formula_on_hand_made_logits():
    student = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 0.0]])
    teacher = torch.tensor([[1.0, 1.0, 0.0], [3.0, -1.0, 0.0]])
    targets = torch.tensor([0, 2])
    t, mix = 2.0, 0.3

    def softmax(row, temp):
        e = [math.exp(v / temp) for v in row]
        return [v / sum(e) for v in e]

    hard = -sum(math.log(softmax(s, 1.0)[y]) for s, y in zip(student.tolist(), targets.tolist())) / 2
    kl = (
        sum(
            sum(p * math.log(p / q) for p, q in zip(softmax(tr, t), softmax(sr, t)))
            for sr, tr in zip(student.tolist(), teacher.tolist())
        )
        / 2
    )
    expected = mix * hard + (1 - mix) * t * t * kl
    assert distillation_loss(student, teacher, targets, t, mix).item() == pytest.approx(expected, rel=1e-5)


def test_with_mix_1_it_is_cross_entropy_and_the_teacher_does_not_matter():
    student, targets = torch.randn(5, 4), torch.randint(0, 4, (5,))
    for teacher in (torch.randn(5, 4), torch.zeros(5, 4)):
        assert distillation_loss(student, teacher, targets, 3.0, 1.0).item() == pytest.approx(
            F.cross_entropy(student, targets).item()
        )
    # a student that matches the teacher has no soft loss left
    logits = torch.randn(5, 4)
    assert distillation_loss(logits, logits, targets, 2.0, 0.0).item() == pytest.approx(0.0, abs=1e-6)


def test_the_wrapper_trains_the_student_and_leaves_the_teacher_alone():
    cfg = shrink(
        compose_config(
            "task=long_range",
            "model=transformer",
            "task.seq_len=16",
            "task.n_train=32",
            "task.n_val=8",
            "task.n_test=8",
        )
    )
    prepared = prepare(cfg, CPU)
    teacher, task = prepared.model, prepared.task
    student = task.build_model(cfg.model)
    wrapped = DistillationTask(task, teacher, temperature=2.0, mix=0.5)
    assert (
        wrapped.primary_metric == task.primary_metric and wrapped.loaders is not None
    )  # everything else is the task's
    batch: Batch = next(iter(task.loaders(8, 0)["train"]))
    wrapped.loss(student, batch).backward()
    assert all(p.grad is None for p in teacher.parameters()) and any(p.grad is not None for p in student.parameters())
    assert not teacher.training


@pytest.mark.parametrize("temperature, mix, message", [(0.0, 0.5, "compress.temperature"), (2.0, 1.5, "compress.mix")])
def test_bad_settings_are_named(temperature, mix, message):
    with pytest.raises(ValueError, match=message):
        Distillation(temperature, mix)


def test_the_student_is_its_own_model_config_beside_the_teacher():
    cfg = compose_config(
        "task=sentiment", "model=transformer", "model.d_model=96", "job=compress", "compress=distill_lstm"
    )
    method, student_root = method_of(cfg)
    assert isinstance(method, Distillation) and method.fine_tune == {}  # trained with the run's trainer
    assert (
        student_root.model.name == "lstm" and student_root.model.backbone.hidden_size == 128
    )  # its own width, not the teacher's 96
    assert cfg.model.d_model == 96 and cfg.model.name == "transformer"
    quarter = method_of(
        compose_config("task=sentiment", "job=compress", "compress=distill_transformer", "compress.student.d_model=48")
    )[1]
    assert quarter.model.backbone.d_model == 48 and quarter.model.backbone.d_ff == 128


# --- sequence-level distillation (Kim and Rush 2016) ------------------------------------------


def tiny_translation(subset_data, *extra: str):
    from tests.conftest import TINY_TASK

    return shrink(
        compose_config(
            "task=translation", "model=transformer", *TINY_TASK["translation"], f"data_dir={subset_data}", *extra
        )
    )


def test_sequence_distillation_trains_the_student_on_the_teachers_outputs_decoded_once(subset_data):
    from suite.compress.sequence_distill import SequenceDistillationTask
    from suite.data.tokenizers import BOS, EOS, PAD

    cfg = tiny_translation(subset_data)
    prepared = prepare(cfg, CPU)
    teacher, task = prepared.model, prepared.task
    calls = []

    def search(model, src, mask, *, bos, eos, max_len):  # a stand-in decoder: known outputs, counted calls
        calls.append(src.size(0))
        assert model is teacher and not model.training
        return [[7 + row % 3] * (1 + row % 4) for row in range(src.size(0))]

    task.search = search
    wrapped = SequenceDistillationTask(task, teacher, "test")
    wrapped.decode_training_set(batch_size=4)  # before training: every training source once
    n_train = len(task.datasets["train"])
    assert sum(calls) == n_train and len(wrapped.outputs) == n_train
    assert all(
        out and set(out) <= {7, 8, 9} for out in wrapped.outputs.values()
    )  # the stand-in's outputs, kept by example
    batch: Batch = next(iter(task.loaders(4, 0)["train"]))
    seen = []
    task.loss = lambda model, b: seen.append(b.targets) or torch.tensor(0.0)  # what the student is trained on
    wrapped.loss(task.build_model(cfg.model), batch)
    assert sum(calls) == n_train  # read back, not decoded again
    bos, eos, pad = task.special(BOS), task.special(EOS), task.special(PAD)
    targets = seen[0]
    for row, i in enumerate(batch.extra["index"].tolist()):
        expected = [bos, *wrapped.outputs[i], eos]
        assert targets[row, : len(expected)].tolist() == expected and (targets[row, len(expected) :] == pad).all()
    assert not torch.equal(batch.targets, targets)  # the references are left in the batch


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_sequence_distillation_through_the_job(subset_data, tmp_path, precision):
    from suite.run import execute

    teacher = execute(tiny_translation(subset_data), tmp_path / "teacher")
    assert teacher.status == "ok", teacher.error
    checkpoint = tmp_path / "teacher" / "checkpoints" / "best.pt"
    cfg = tiny_translation(
        subset_data,
        "job=compress",
        "compress=distill_sequence",
        "compress.search=validation",
        f"job.checkpoint={checkpoint}",
        "compress.student.d_model=16",
        "compress.student.backbone.d_ff=32",
        "compress.student.backbone.n_layers=1",
        "job.min_time_s=0",
        "job.repeats=2",
        "job.warmup=1",
        "job.bf16_reference=false",
        f"trainer.precision={precision}",
    )
    record = execute(cfg, tmp_path / "student")
    assert record.status == "ok", record.error
    c = record.compression
    assert (
        c["method"] == "sequence_distillation" and c["search"] == "validation" and record.steps == 3
    )  # the run's trainer (smoke)
    assert c["weights"] < c["reference_weights"] and "bleu" in record.metrics and "bleu" in c["reference_metrics"]


def test_sequence_distillation_refuses_a_classifier_and_a_bad_search():
    from suite.compress.method import Context
    from suite.compress.sequence_distill import SequenceDistillation

    with pytest.raises(ValueError, match="compress.search must be one of"):
        SequenceDistillation(search="sampling")
    cfg = shrink(
        compose_config(
            "task=long_range",
            "model=transformer",
            "task.seq_len=16",
            "task.n_train=32",
            "task.n_val=8",
            "task.n_test=8",
        )
    )
    prepared = prepare(cfg, CPU)
    context = Context(task=prepared.task, device=CPU, seed=0, example=None, directory=None, build_model=lambda: None)
    with pytest.raises(ValueError, match="distils sequence-to-sequence tasks .*does not decode.*distill_transformer"):
        SequenceDistillation().compress(prepared.model, context)
