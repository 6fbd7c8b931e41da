"""Every backbone the configs can build is held to what it declares (``suite.models.declaration``).

Discovered, not listed: every ``conf/model/*.yaml`` with a backbone, in the form it is configured and, where its
node has a ``causal`` key, the causal form a language model builds; the Transformer's with every core of
``conf/model/attention/``. A new backbone is its module and its config: these tests find it and check each capability
it declares (padding, causal, step by step with the state size it states), forced fp32 and bf16, a short training
run, and which tasks take it (a sequence-to-sequence task only with a decoder, a language model only when causal).
"""

from __future__ import annotations

import pytest
import torch
from hydra.errors import InstantiationException
from omegaconf import open_dict
from torch import nn

from suite.models import declaration
from suite.models.classifier import build_classifier, build_sized
from suite.models.embeddings import TokenEmbedding
from suite.models.language_model import build_language_model
from suite.models.seq2seq import build_seq2seq
from suite.runtime import numerics
from suite.runtime.precision_policy import FAMILIES, UNDECLARED, family_of
from suite.types import Declared
from tests import backbone_checks as checks
from tests.conftest import CONF, compose_config, shrink
from tests.test_attention_variants import SMALL

MAX_LEN = checks.L + 5
MODELS = sorted(
    p.stem for p in (CONF / "model").glob("*.yaml") if "backbone" in compose_config(f"model={p.stem}").model
)
CORES = sorted(p.stem for p in (CONF / "model" / "attention").glob("*.yaml"))


def config(model: str, core: str | None = None):
    """The model's composed config at test size; with ``core``, the Transformer's attention swapped for it."""
    cfg = shrink(compose_config(f"model={model}", *([f"model/attention={core}"] if core else [])))
    if core in SMALL:
        with open_dict(cfg):
            for key, value in SMALL[core].items():
                cfg.model.attention[key] = value
    return cfg


def form_ids() -> list[tuple[str, str | None, bool]]:
    """(model, attention core or None, built causal): every form a run can build."""
    out = []
    for model in MODELS:
        cores = CORES if model == "transformer" else [None]
        for core in cores:
            node = config(model, core).model.backbone
            out.append((model, core, False))
            if "causal" in node and not node.causal:
                out.append((model, core, True))
    return out


FORMS = form_ids()


def label(form: tuple[str, str | None, bool]) -> str:
    model, core, causal = form
    return f"{model}{'-' + core if core else ''}{'-causal' if causal else ''}"


def build(form: tuple[str, str | None, bool]) -> nn.Module | str:
    """The backbone of ``form`` at test size, or the message refusing it at build (a core with no causal mode)."""
    model, core, causal = form
    node = config(model, core).model.backbone
    settings = {"causal": True} | ({"bidirectional": False} if "bidirectional" in node else {}) if causal else {}
    try:
        return build_sized(node, MAX_LEN, **settings).eval()
    except (ValueError, InstantiationException) as err:
        return str(err)


@pytest.mark.parametrize("form", FORMS, ids=[label(f) for f in FORMS])
def test_every_backbone_declares_itself_and_holds_to_it(form):
    backbone, name = build(form), label(form)
    if isinstance(backbone, str):  # only a causal form of a core without a causal mode, refused naming both
        assert form[2] and f"attention variant '{form[1]}' cannot serve the causal encoder: it lacks causal" in backbone
        return
    assert isinstance(backbone, Declared), f"model {name!r}: its backbone {type(backbone).__name__} declares nothing"
    assert backbone.precision_family in FAMILIES, name
    declared = declaration.declare(backbone, checks.L)
    assert set(declared.capabilities) <= declaration.ALL and declared.parameters > 0
    caps = backbone.capabilities
    assert (declaration.CAUSAL in caps) != (declaration.BIDIRECTIONAL in caps), f"{name}: one way or both, not {caps}"
    if declaration.PADDING in caps:
        checks.padding(name, backbone)
    if declaration.CAUSAL in caps:
        checks.causal(name, backbone)
    if declaration.STEP in caps:
        checks.step(name, backbone)
    checks.precisions(name, backbone.eval())  # eval: no dropout draws between the two passes


@pytest.mark.parametrize("model", MODELS)
def test_every_model_trains_a_short_run_and_learns(model):
    """30 AdamW steps on 8 fixed examples: the loss falls to under half its start (a backbone that passes no
    gradient, or no signal from its input, cannot)."""
    torch.manual_seed(0)
    cfg = config(model)
    net = build_classifier(cfg.model, TokenEmbedding(20, cfg.model.d_model), n_classes=4, max_len=checks.L)
    ids, pad = torch.randint(1, 20, (8, checks.L)), torch.zeros(8, checks.L, dtype=torch.bool)
    pad[4:, 7:] = True
    ids = ids.masked_fill(pad, 0)
    labels = torch.arange(8) % 4
    optimizer = torch.optim.AdamW(net.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss = nn.functional.cross_entropy(net(ids, pad), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], (model, losses[0], losses[-1])


@pytest.mark.parametrize("model", MODELS)
def test_a_sequence_to_sequence_task_takes_a_model_with_a_decoder_and_names_one_without(model):
    cfg = config(model)
    if "decoder" in cfg.model:
        net = build_seq2seq(cfg.model, src_vocab=20, tgt_vocab=20, max_len=16)
        assert declaration.DECODER in net.encoder.capabilities
    else:
        with pytest.raises(ValueError, match=f"model '{model}'"):
            build_seq2seq(cfg.model, src_vocab=20, tgt_vocab=20, max_len=16)


@pytest.mark.parametrize("model", MODELS)
def test_a_language_model_takes_a_causal_model_and_names_one_that_reads_both_ways(model):
    cfg = shrink(compose_config("task=language_model", f"model={model}"))
    try:
        net = build_language_model(cfg.model, 20, 16)
    except (ValueError, InstantiationException) as err:
        assert f"'{model}'" in str(err) or model in str(err), err
        return
    assert {declaration.CAUSAL, declaration.STEP} <= net.backbone.capabilities


class Lying(nn.Module):
    """Declares causal and step-by-step, but position t reads the whole sequence's mean."""

    precision_family = "attention"
    capabilities = frozenset({declaration.PADDING, declaration.CAUSAL, declaration.STEP})
    d_model = checks.D

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(checks.D, checks.D)

    def forward(self, x, pad_mask=None):
        return self.proj(x) + x.mean(dim=1, keepdim=True)

    def step(self, x, state):
        return self(x), {}

    def state_size(self, length: int) -> int:
        return 0


def test_a_lying_backbone_is_named_with_the_capability_it_lacks():
    with pytest.raises(AssertionError, match="model 'liar' declares 'causal'"):
        checks.causal("liar", Lying().eval())


def test_a_declaration_outside_the_vocabulary_is_refused_by_name():
    class Odd(Lying):
        capabilities = frozenset({"telepathy"})

    with pytest.raises(ValueError, match="Odd declares unknown capabilities"):
        declaration.declare(Odd())


def test_a_model_that_declares_nothing_runs_fp32_as_undeclared_and_one_that_declares_gets_its_familys_policy():
    class Own(nn.Module):  # a user's backbone: no declaration
        def forward(self, x, pad_mask=None):
            return x

    cpu = torch.device("cpu")
    own = numerics.choose("auto", cpu, nn.Sequential(Own()))
    assert own.precision == "fp32" and UNDECLARED in own.reason
    assert declaration.declare(Own()).family == UNDECLARED
    for model in ("mingru", "mamba", "s4d", "lstm", "transformer"):
        net = build_classifier(config(model).model, TokenEmbedding(20, 32), 2, 8)
        choice = numerics.choose("auto", cpu, net)
        assert family_of(net) in choice.reason and UNDECLARED not in choice.reason, (model, choice.reason)


def test_a_target_that_cannot_be_imported_names_the_module_and_the_config_file(tmp_path):
    from suite.runtime.compose import importable

    conf = tmp_path / "conf"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "mine.yaml").write_text("backbone:\n  _target_: mypkg.conv.GatedConv\n")
    with pytest.raises(ImportError, match=r"model.backbone._target_ 'mypkg.conv.GatedConv': cannot import module "):
        importable({"_target_": "mypkg.conv.GatedConv"}, "model.backbone", conf)
    with pytest.raises(ImportError, match=r"set in conf/model/mine.yaml"):
        importable({"_target_": "mypkg.conv.GatedConv"}, "model.backbone", conf)
    with pytest.raises(ImportError, match=r"module 'suite.models.rnn' has no 'Nope'; given on the command line"):
        importable({"_target_": "suite.models.rnn.Nope"}, "model.backbone", conf)
    importable({"_target_": "suite.models.rnn.RecurrentEncoder"}, "model.backbone", conf)  # importable: nothing raised


class UserBackbone(nn.Module):
    """A backbone from outside the suite: a causal depthwise convolution that declares nothing."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.conv = nn.Conv1d(d_model, d_model, 3, groups=d_model)

    def forward(self, x, pad_mask=None):
        return self.conv(nn.functional.pad(x.transpose(1, 2), (2, 0))).transpose(1, 2)


def test_a_backbone_from_outside_the_suite_trains_under_auto_in_fp32_recorded_as_undeclared(tmp_path):
    from suite.run import execute

    cfg = shrink(compose_config("task=long_range", "model=mingru", "task.seq_len=16", "trainer.precision=auto"))
    with open_dict(cfg):
        cfg.model.backbone = {"_target_": f"{__name__}.UserBackbone", "d_model": cfg.model.d_model}
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == "fp32" and "undeclared family" in record.precision_reason
    assert record.declaration["family"] == "undeclared family" and record.declaration["backbone"] == "UserBackbone"
