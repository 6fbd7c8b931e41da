"""pretrain=denoise: the objectives hide what they predict, read no label, and the supervised fit starts from them."""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from suite.models.embeddings import PatchEmbedding
from suite.run import execute
from suite.training.pretrain import (
    PRETRAINED,
    DenoisingTask,
    PretrainError,
    TokenModel,
    objective_for,
    shared_state,
    span_mask,
    vocabulary,
)
from suite.types import Batch
from tests.conftest import TINY_LONG_RANGE, compose_config


def tiny_classifier(model: str):
    cfg = compose_config(*TINY_LONG_RANGE, f"model={model}", "model.d_model=16")
    task = instantiate(cfg.task)
    task.setup()
    return task, task.build_model(cfg.model).eval()


def test_span_masks_hide_spans_of_real_positions_only():
    pad = torch.zeros(64, 40, dtype=torch.bool)
    pad[:, 30:] = True
    hidden = span_mask(pad, pad.shape, rate=0.15, span=3, generator=torch.Generator().manual_seed(0))
    assert not (hidden & pad).any() and hidden.any(dim=1).all()
    assert 0.08 < hidden[:, :30].float().mean() < 0.25  # about the rate (spans overlap, the edge cuts some)
    for row in hidden[:, :30].tolist():  # every run of hidden positions is a whole span, or cut by the padding
        runs = "".join("1" if h else "0" for h in row).split("0")
        assert all(len(r) >= 3 for r in runs[:-1] if r) or row.count(True) == 1


def test_the_objective_follows_the_way_the_backbone_reads():
    assert objective_for(tiny_classifier("transformer")[1].backbone, "auto") == "masked"
    assert objective_for(tiny_classifier("lstm")[1].backbone, "auto") == "next_token"
    assert objective_for(tiny_classifier("bilstm")[1].backbone, "auto") == "masked"
    with pytest.raises(PretrainError, match="objective"):
        objective_for(tiny_classifier("lstm")[1].backbone, "mlm")


def test_an_input_without_tokens_is_refused_by_name():
    with pytest.raises(PretrainError, match="needs token inputs.*PatchEmbedding"):
        vocabulary(PatchEmbedding(16, 4))


def batch_of(task) -> Batch:
    batch = next(iter(task.loaders(8, 0)["train"]))
    batch.targets = torch.full_like(batch.targets, -100)  # a label the loss would choke on: none is read
    return batch


@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_the_backbone_reads_the_input_as_the_classifier_lays_it_out(model):
    """[CLS] first where the classifier prepends one: each token at its fine-tuning position."""
    task, classifier = tiny_classifier(model)
    tokens = TokenModel(classifier, vocabulary(classifier.content)).eval()
    batch = batch_of(task)
    seen: list[torch.Tensor] = []
    hook = classifier.backbone.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    with torch.no_grad():
        classifier(batch.inputs, batch.pad_mask)
        logits = tokens(batch.inputs, batch.pad_mask)
    hook.remove()
    assert torch.equal(seen[0], seen[1])
    assert logits.shape[:2] == batch.inputs.shape
    assert ("pooler.cls" in shared_state(classifier)) == (model == "transformer")


def test_next_token_prediction_never_sees_the_token_it_predicts():
    task, classifier = tiny_classifier("lstm")
    model = TokenModel(classifier, vocabulary(classifier.content)).eval()
    batch = batch_of(task)
    ids = batch.inputs.clone()
    t = 10
    changed = ids.clone()
    changed[:, t + 1] = (changed[:, t + 1] + 1) % model.out.out_features
    with torch.no_grad():
        a, b = model(ids), model(changed)
    assert torch.equal(a[:, : t + 1], b[:, : t + 1])  # position t predicts token t + 1 from tokens <= t
    assert not torch.equal(a[:, t + 1 :], b[:, t + 1 :])


def test_a_masked_transformer_pretrains_under_forced_bf16(tmp_path):
    cfg = compose_config(
        *TINY_LONG_RANGE, "model=transformer", "pretrain=denoise", "pretrain.steps=2", "trainer.precision=bf16"
    )
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.pretrain["objective"] == "masked" and record.precision == "bf16"


def test_a_masked_token_cannot_be_read_from_its_own_position():
    task, classifier = tiny_classifier("transformer")
    model = TokenModel(classifier, vocabulary(classifier.content)).eval()
    ids = batch_of(task).inputs
    hidden = torch.zeros_like(ids, dtype=torch.bool)
    hidden[:, 5] = True
    changed = ids.clone()
    changed[:, 5] = (changed[:, 5] + 1) % model.out.out_features
    with torch.no_grad():
        assert torch.equal(model(ids, None, hidden), model(changed, None, hidden))


@pytest.mark.parametrize("model, objective", [("transformer", "masked"), ("lstm", "next_token")])
def test_the_loss_reads_inputs_only_and_trains_the_shared_modules(model, objective):
    task, classifier = tiny_classifier(model)
    denoise = DenoisingTask(task, objective, mask_rate=0.3, span=2)
    tokens = TokenModel(classifier, vocabulary(classifier.content)).train()
    head = {k: v.clone() for k, v in classifier.head.state_dict().items()}
    before = classifier.backbone.state_dict()
    before = {k: v.clone() for k, v in before.items()}
    loss = denoise.loss(tokens, batch_of(task))
    loss.backward()
    torch.optim.SGD(tokens.parameters(), lr=0.1).step()
    assert torch.isfinite(loss)
    assert any(not torch.equal(before[k], v) for k, v in classifier.backbone.state_dict().items())
    assert all(torch.equal(head[k], v) for k, v in classifier.head.state_dict().items())


@pytest.mark.parametrize("precision", ["fp32", "bf16"])  # forced: each CPU kind runs the other kind's path too
def test_a_pretrained_run_records_it_and_a_rerun_reads_the_pretraining_back(tmp_path, precision):
    cfg = compose_config(
        *TINY_LONG_RANGE, "model=lstm", "pretrain=denoise", "pretrain.steps=2", f"trainer.precision={precision}"
    )
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.pretrain["objective"] == "next_token" and record.pretrain["steps"] == 2
    assert (tmp_path / "pretrain" / PRETRAINED).is_file()
    (tmp_path / "result.json").unlink()  # the supervised fit again, the pretraining already done
    again = execute(cfg, tmp_path)
    assert again.pretrain == record.pretrain and again.metrics == record.metrics
    plain = execute(compose_config(*TINY_LONG_RANGE, "model=lstm", f"trainer.precision={precision}"), tmp_path / "s")
    assert plain.pretrain == {}
