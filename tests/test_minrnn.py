"""minGRU and minLSTM: the parallel scan is the sequential recurrence, the model reads one way, padding reaches no real
output, step-by-step generation is the full pass, and the layer is ``mingru-pytorch``'s given the same weights."""

from __future__ import annotations

import pytest
import torch

from suite.models.linear_loop import LinearLoop, linear_loop
from suite.models.minrnn import MinRecurrentEncoder, MinRNN
from suite.models.scan import log_scan, sequential
from tests.conftest import TINY_LONG_RANGE, compose_config


def coefficients(batch: int, length: int, width: int, seed: int = 0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    log_a = -torch.nn.functional.softplus(torch.randn(batch, length, width, generator=gen, dtype=dtype))
    log_b = torch.randn(batch, length, width, generator=gen, dtype=dtype)
    return log_a, log_b


@pytest.mark.parametrize("chunk", [1, 7, 64, None])
def test_the_chunked_log_scan_is_the_sequential_recurrence(chunk):
    log_a, log_b = coefficients(3, 50, 5)
    h0 = torch.rand(3, 5, dtype=torch.float64)
    expected = sequential(log_a.exp(), log_b.exp(), h0)
    assert torch.allclose(log_scan(log_a, log_b, h0, chunk), expected, rtol=1e-10, atol=0)
    assert torch.allclose(log_scan(log_a, log_b, None, chunk), sequential(log_a.exp(), log_b.exp()), rtol=1e-10)


@pytest.mark.parametrize("batch", [1, 2])
def test_the_loop_and_its_backward_are_the_recurrence_and_its_gradient(batch):
    gen = torch.Generator().manual_seed(3)
    shapes = ((batch, 9, 3), (batch, 9, 3), (batch, 3))
    a, b, h0 = (torch.rand(*shape, generator=gen, dtype=torch.float64) for shape in shapes)
    b = b - 0.5  # the loop itself takes b of either sign
    inputs = [t.requires_grad_() for t in (a, b, h0)]
    assert torch.autograd.gradcheck(LinearLoop.apply, inputs)
    assert torch.allclose(LinearLoop.apply(*inputs), sequential(*inputs), rtol=1e-12, atol=0)


@pytest.mark.parametrize("batch", [1, 3])
def test_the_loops_backward_leaves_a_gradient_it_shares_with_another_branch_alone(batch):
    """A residual sum hands one gradient tensor to both of its branches; at batch 1 its transpose is contiguous, and
    a backward that wrote into it in place would change the other branch's gradient."""
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(batch, 7, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(batch, 7, 3, generator=gen, dtype=torch.float64)
    grads = []
    for scan in (lambda a, b: linear_loop(a, b), lambda a, b: sequential(a, b)):
        ((x * 2 + scan(torch.sigmoid(x), x / 2)) * weights).sum().backward()
        grads.append(x.grad.clone())
        x.grad = None
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def test_auto_takes_the_loop_on_a_cpu():
    torch.manual_seed(0)
    layers = {kernel: MinRNN(12, "gru", chunk=8, kernel=kernel).double() for kernel in ("auto", "loop", "log")}
    for layer in layers.values():
        layer.load_state_dict(layers["loop"].state_dict())
    x = torch.randn(2, 30, 12, dtype=torch.float64)
    out = {kernel: layer(x)[0] for kernel, layer in layers.items()}
    assert torch.equal(out["auto"], out["loop"]) and not torch.equal(out["auto"], out["log"])


def test_the_loop_gives_the_log_scans_result():
    log_a, log_b = coefficients(3, 50, 5)
    h0 = torch.rand(3, 5, dtype=torch.float64)
    for start in (h0, None):
        loop = linear_loop(log_a.exp(), log_b.exp(), start)
        assert torch.allclose(loop, log_scan(log_a, log_b, start, 7), rtol=1e-10, atol=0)
    low = linear_loop(log_a.exp().to(torch.bfloat16), log_b.exp().to(torch.bfloat16))
    assert low.dtype == torch.float32  # bf16 in, the state in float32


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_kernels_give_the_same_layer_values_and_gradients(cell):
    """The loop's linear coefficients against the scan's logs: the same a and b, made two ways."""
    torch.manual_seed(0)
    loop = MinRNN(12, cell, 1.5, chunk=8, kernel="loop").double()
    scan = MinRNN(12, cell, 1.5, chunk=8, kernel="log").double()
    scan.load_state_dict(loop.state_dict())
    x, h0 = torch.randn(2, 30, 12, dtype=torch.float64), torch.rand(2, loop.inner, dtype=torch.float64)
    results = []
    for layer in (loop, scan):
        out, last = layer(x, h0)
        (out.square().sum() + last.sum()).backward()
        results.append([out, last] + [p.grad for p in layer.parameters()])
    for mine, theirs in zip(*results):
        assert torch.allclose(mine, theirs, rtol=1e-9, atol=1e-12)


def test_chunks_keep_float32_accurate_over_16k_positions():
    """Why the scan is chunked: over one 16K chunk the cumulative log-coefficient reaches about -10^4, and float32
    loses digits; chunks of 256 keep them (the carry from chunk to chunk adds a little rounding)."""
    log_a, log_b = coefficients(1, 16384, 4, seed=1)
    exact = sequential(log_a.exp(), log_b.exp())
    error = {
        c: ((log_scan(log_a.float(), log_b.float(), None, c) - exact) / exact).abs().max().item() for c in (256, None)
    }
    assert error[256] < 1e-4 < error[None] and error[None] > 10 * error[256], error


@pytest.mark.parametrize("kernel", ["loop", "log"])
@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("expansion", [1.0, 1.5])
def test_the_layer_equals_its_step_by_step_form(cell, expansion, kernel):
    torch.manual_seed(0)
    layer = MinRNN(12, cell, expansion, chunk=8, kernel=kernel).double()
    x, h0 = torch.randn(2, 30, 12, dtype=torch.float64), torch.rand(2, layer.inner, dtype=torch.float64)
    out, last = layer(x, h0)
    assert torch.allclose(out, layer.reference(x, h0), rtol=1e-9, atol=1e-12)
    assert last.shape == (2, layer.inner)


def encoder(cell: str) -> MinRecurrentEncoder:
    torch.manual_seed(0)
    return MinRecurrentEncoder(16, cell, n_layers=2, mlp_ratio=1.0, chunk=5).eval()


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_no_position_reads_a_later_one(cell):
    model = encoder(cell)
    x = torch.randn(1, 20, 16, requires_grad=True)
    (model(x)[0, 9] * torch.randn(16)).sum().backward()  # not the plain sum: a LayerNorm's output sums to 0
    assert x.grad[0, 10:].abs().max() == 0 and x.grad[0, :10].abs().max() > 0


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_padding_changes_no_real_output(cell):
    model = encoder(cell)
    x = torch.randn(2, 12, 16)
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[0, 7:] = True
    other = x.clone()
    other[0, 7:] = torch.randn(5, 16) * 10
    a, b = model(x, pad), model(other, pad)
    assert torch.equal(a[0, :7], b[0, :7]) and torch.equal(a[1], b[1]) and a[0, 7:].abs().max() == 0
    assert torch.allclose(a[0, :7], model(x[:1, :7])[0], atol=1e-6)  # as if the padding were not there


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_going_on_step_by_step_is_the_full_pass(cell):
    model = encoder(cell)
    x = torch.randn(2, 13, 16)
    full = model(x)
    state, parts = {}, []
    for piece in (x[:, :4], x[:, 4:5], x[:, 5:6], x[:, 6:]):
        out, state = model.step(piece, state)
        parts.append(out)
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)
    assert state["h"].shape == (2, 2, 16)  # one vector a layer, however long the text


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"chunk": 0}, "minGRU: scan chunk .* positive integer, got 0"),
        ({"chunk": 2.5}, "minGRU: scan chunk .* got 2.5"),
        ({"n_layers": 0}, "minGRU: n_layers must be a positive integer"),
        ({"causal": False}, "minGRU reads one way only: causal=false"),
        ({"cell": "rnn"}, "unknown cell 'rnn'"),
        ({"kernel": "pscan"}, r"minGRU: kernel \(model.backbone.kernel\) must be one of \['auto', 'loop', 'log'\]"),
        ({"expansion": 0.01}, "inner width"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        MinRecurrentEncoder(16, **settings)


@pytest.mark.parametrize("model", ["mingru", "minlstm"])
def test_the_configs_build_a_classifier_and_a_language_model(model):
    from hydra.utils import instantiate

    cfg = compose_config(*TINY_LONG_RANGE, f"model={model}")
    task = instantiate(cfg.task)
    task.setup()
    batch = next(iter(task.loaders(4, 0)["train"]))
    classifier = task.build_model(cfg.model)
    assert classifier(batch.inputs, batch.pad_mask).shape == (4, task.ready.n_classes)
    from suite.models.language_model import build_language_model

    lm = build_language_model(cfg.model, vocab_size=50, context=32)
    logits, state = lm.step(torch.randint(1, 50, (2, 3)), 0, {})
    assert logits.shape == (2, 3, 50) and state["h"].shape[1] == cfg.model.backbone.n_layers


def test_the_layer_is_mingru_pytorchs_given_the_same_weights():
    peer = pytest.importorskip("minGRU_pytorch")
    torch.manual_seed(0)
    for expansion in (1.0, 2.0):
        theirs = peer.minGRU(24, expansion_factor=expansion)
        ours = MinRNN(24, "gru", expansion, chunk=16)
        ours.load_state_dict(theirs.state_dict())
        x = torch.randn(3, 40, 24)
        out, last = ours(x)
        expected, their_last = theirs(x, return_next_prev_hidden=True)
        assert torch.allclose(out, expected, atol=1e-5, rtol=1e-4)
        step_theirs = theirs(x[:, :1], prev_hidden=their_last)  # their one-step path from a carried state
        assert torch.allclose(ours(x[:, :1], last)[0], step_theirs, atol=1e-5, rtol=1e-4)
