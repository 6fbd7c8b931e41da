"""The copy head: a distribution that mixes generating and copying, cached decoding unchanged, and its preconditions."""

import pytest
import torch

from suite.generation.search import beam_search, greedy
from suite.models.copy import PointerGenerator
from suite.models.seq2seq import build_seq2seq
from tests.conftest import compose_config, shrink

VOCAB, D = 50, 32


def head_inputs(b: int = 2, t: int = 3, l: int = 5):
    torch.manual_seed(0)
    logits, h, memory = torch.randn(b, t, VOCAB), torch.randn(b, t, D), torch.randn(b, l, D)
    mask = torch.zeros(b, l, dtype=torch.bool)
    mask[1, 3:] = True
    source = torch.tensor([[7, 9, 7, 11, 12], [20, 21, 20, 0, 0]])  # repeats, and padding in row 1
    return logits, h, memory, mask, source


def gated(bias: float) -> PointerGenerator:
    """A head whose gate is fixed open (bias > 0: generate) or shut (bias < 0: copy)."""
    head = PointerGenerator(D)
    with torch.no_grad():
        head.gate.weight.zero_()
        head.gate.bias.fill_(bias)
    return head


def test_output_is_a_distribution_over_the_vocabulary():
    logp = PointerGenerator(D)(*head_inputs())
    assert logp.shape == (2, 3, VOCAB) and torch.isfinite(logp).all()
    assert torch.allclose(logp.exp().sum(-1), torch.ones(2, 3), atol=1e-5)


def test_open_gate_generates_and_shut_gate_copies_by_attention():
    logits, h, memory, mask, source = head_inputs()
    assert torch.allclose(gated(30.0)(logits, h, memory, mask, source).exp(), logits.softmax(-1), atol=1e-6)
    head = gated(-30.0)
    probs = head(logits, h, memory, mask, source).exp()
    attention = (
        (head.query(h) @ head.key(memory).transpose(1, 2) / D**0.5)
        .masked_fill(mask[:, None], float("-inf"))
        .softmax(-1)
    )
    for b in range(2):
        for t in range(3):
            expected = torch.zeros(VOCAB)
            for j, token in enumerate(source[b].tolist()):
                expected[token] += attention[b, t, j]  # a repeated source token gathers every position's weight
            assert torch.allclose(probs[b, t], expected, atol=1e-6)
    assert probs[1, :, 0].max() < 1e-6  # the padding id is never copied from padded positions
    assert probs[0, :, [7, 9, 11, 12]].sum(-1).allclose(torch.ones(3), atol=1e-5)


def test_gradient_is_finite_for_tokens_nobody_predicts():
    logits, h, memory, mask, source = head_inputs()
    logits = logits.clone().requires_grad_()
    head = gated(-30.0)  # almost all mass on source tokens: token 40 has probability ~0
    loss = torch.nn.functional.cross_entropy(
        head(logits, h, memory, mask, source).flatten(0, 1), torch.full((6,), 40), label_smoothing=0.1
    )
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in head.parameters())


def copying_model(name: str):
    cfg = shrink(compose_config(f"model={name}", "model/copy=pointer"))
    return build_seq2seq(cfg.model, VOCAB, VOCAB, max_len=32, shared_vocab=True).eval()


def batch():
    src = torch.randint(4, VOCAB, (3, 7))
    mask = torch.zeros(3, 7, dtype=torch.bool)
    mask[1, 5:] = True
    return src.masked_fill(mask, 0), mask


@pytest.mark.parametrize("name", ["transformer", "lstm"])
def test_cached_steps_equal_full_decoding_with_copy(name):
    net, (src, mask) = copying_model(name), batch()
    tgt = torch.randint(4, VOCAB, (3, 8))
    with torch.no_grad():
        memory = net.encode(src, mask)
        full = net.decode(tgt, memory, mask, src)  # (B, T, V) log-probabilities
        state = net.start(memory, mask, src)
        for t in range(tgt.size(1)):
            scores, state = net.step(tgt[:, t : t + 1], t, state)
            assert torch.allclose(scores, full[:, t], atol=1e-5), t
    assert torch.allclose(full.exp().sum(-1), torch.ones(3, 8), atol=1e-4)


@pytest.mark.parametrize("name", ["transformer", "gru"])
def test_searches_agree_with_copy(name):
    net, (src, mask) = copying_model(name), batch()
    opts = dict(bos=2, eos=3, max_len=10)
    out = greedy(net, src, mask, **opts)
    assert out == greedy(net, src, mask, cache=False, **opts) == beam_search(net, src, mask, beam_size=1, **opts)
    assert beam_search(net, src, mask, beam_size=3, **opts) == beam_search(
        net, src, mask, beam_size=3, cache=False, **opts
    )


def test_copy_needs_one_vocabulary_and_the_source():
    cfg = shrink(compose_config("model=transformer", "model/copy=pointer"))
    with pytest.raises(ValueError, match="one vocabulary"):
        build_seq2seq(cfg.model, VOCAB, VOCAB, max_len=32, shared_vocab=False)
    net, (src, mask) = copying_model("transformer"), batch()
    with pytest.raises(ValueError, match="source ids"):
        net.decode(torch.randint(4, VOCAB, (3, 2)), net.encode(src, mask), mask)
