"""Decoder-only language models: every model family (and the attention kernels that keep a state)
decodes step by step exactly as the full pass, no logit depends on a later token, the decoding
state grows, stays or is bounded as it should, and models that read the future are refused."""

from __future__ import annotations

import pytest
import torch
from hydra.errors import InstantiationException

from suite.generation.sampling import Sampling, generate
from suite.jobs.generation_cost import state_bytes
from tests.conftest import LM_VOCAB as V
from tests.conftest import tiny_lm

MODELS = [
    ("transformer",),
    ("transformer", "model/attention=linear", "model.attention.chunk=4"),
    ("transformer", "model/attention=local", "model.attention.window=3"),
    ("lstm",),
    ("gru",),
    ("rnn",),
]
IDS = [" ".join(m) for m in MODELS]


@pytest.mark.parametrize("spec", MODELS, ids=IDS)
def test_cached_steps_equal_the_full_pass(spec):
    net = tiny_lm(*spec)
    ids = torch.randint(4, V, (2, 13))
    with torch.no_grad():
        full = net(ids)
        logits, state = net.step(ids[:, :5], 0, {})  # the prompt at once, then a token at a time
        parts = [logits]
        for t in range(5, 13):
            logits, state = net.step(ids[:, t : t + 1], t, state)
            parts.append(logits)
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)
    assert torch.allclose(net.next_logits(ids), full[:, -1], atol=1e-5)  # the uncached path: the last position only


@pytest.mark.parametrize("spec", MODELS, ids=IDS)
def test_no_logit_depends_on_a_later_token(spec):
    net = tiny_lm(*spec)
    ids = torch.randint(4, V, (2, 12))
    changed = ids.clone()
    changed[:, 7:] = torch.randint(4, V, (2, 5))
    with torch.no_grad():
        assert torch.allclose(net(ids)[:, :7], net(changed)[:, :7], atol=1e-6)
        assert not torch.allclose(net(ids)[:, 7:], net(changed)[:, 7:])


@pytest.mark.parametrize("spec", MODELS, ids=IDS)
def test_cached_and_uncached_generation_agree(spec):
    net = tiny_lm(*spec)
    prompt = torch.randint(4, V, (3, 4))
    greedy = Sampling("greedy")
    fast, slow = generate(net, prompt, 10, greedy), generate(net, prompt, 10, greedy, cache=False)
    assert fast.shape == (3, 10) and torch.equal(fast, slow)
    sampled = [
        generate(net, prompt, 10, Sampling(top_k=5), generator=torch.Generator().manual_seed(1), cache=c)
        for c in (True, False)
    ]
    assert torch.equal(*sampled)


def test_state_size_is_constant_for_recurrent_and_linear_bounded_for_local_growing_for_full():
    def sizes(*spec):
        net = tiny_lm(*spec, context=64)
        return [state_bytes(net.step(torch.randint(4, V, (1, t)), 0, {})[1]) for t in (8, 16, 32)]

    full = sizes("transformer")
    assert full[1] == 2 * full[0] and full[2] == 4 * full[0]
    assert len(set(sizes("lstm"))) == 1 and len(set(sizes("transformer", "model/attention=linear"))) == 1
    assert len(set(sizes("transformer", "model/attention=local", "model.attention.window=8"))) == 1


def test_the_output_layer_is_the_embedding():
    net = tiny_lm("transformer")
    assert net.generator.proj.weight is net.embed.embed.weight
    assert net.backbone.causal and isinstance(
        net.backbone.norm, torch.nn.LayerNorm
    )  # pre-norm, a final LayerNorm: GPT-2's shape


@pytest.mark.parametrize(
    "spec, message",
    [
        (("bilstm",), "reads the sequence both ways"),
        (
            ("transformer", "model/attention=bigbird", "model.attention.block=2"),
            "'bigbird' cannot serve the causal encoder",
        ),
    ],
)
def test_a_model_that_sees_the_future_is_refused(spec, message):
    with pytest.raises((ValueError, InstantiationException), match=message):
        tiny_lm(*spec)
