"""S4D: the FFT convolution with the kernel computed from the parameters is the step-by-step recurrence, the
bidirectional kernel is a forward and a backward convolution, the causal model reads no later position, padding reaches
no real output, generation step by step is the full pass, and bad settings are refused by name."""

from __future__ import annotations

import pytest
import torch

from suite.models.language_model import build_language_model
from suite.models.s4d import S4D, S4DEncoder, S4DKernel, blocked_kernel, fft_conv, s4d_modes, vandermonde_kernel
from tests.conftest import TINY_LONG_RANGE, compose_config


def direct_conv(u: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
    """y_t = sum_(s<=t) K_(t-s) u_s by the definition: u (B, L, D), kernel (D, L)."""
    length = u.size(1)
    return torch.stack(
        [sum(kernel[:, t - s] * u[:, s] for s in range(t + 1)) for t in range(length)], dim=1
    )  # (B, L, D)


@pytest.mark.parametrize("init", ["lin", "inv"])
def test_the_fft_convolution_is_the_recurrence_and_the_definition(init):
    torch.manual_seed(0)
    layer = S4D(6, state_size=8, init=init)
    u = torch.randn(2, 40, 6)
    kernel = layer.kernels[0](40)
    full = layer(u)
    stepped, _ = layer.step(u, None)
    assert torch.allclose(full, stepped, atol=1e-5)
    assert torch.allclose(fft_conv(u, kernel), direct_conv(u, kernel), atol=1e-5)


@pytest.mark.parametrize("length", [1, 2, 3, 17, 100, 1025])
def test_the_blocked_kernel_is_the_vandermonde_product_with_its_gradients(length):
    """A_bar^(c j + i) = A_bar^(c j) A_bar^i: the same kernel and the same gradients, at lengths that fill no last
    block and at lengths that do."""
    torch.manual_seed(length)
    kernel = S4DKernel(5, 16, init="inv")
    got, want = (f(*kernel.discretised(), length) for f in (blocked_kernel, vandermonde_kernel))
    assert got.shape == want.shape == (5, length)
    assert torch.allclose(got, want, atol=1e-5)
    weights = torch.randn(5, length)
    grads = [
        torch.autograd.grad((weights * k).sum(), list(kernel.parameters()), retain_graph=True) for k in (got, want)
    ]
    for a, b in zip(*grads):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-4)


def test_the_modes_are_s4d_lin_and_s4d_inv():
    lin, inv = s4d_modes(8, "lin"), s4d_modes(8, "inv")
    assert torch.allclose(lin.imag, torch.pi * torch.arange(4, dtype=torch.float64)) and (lin.real == -0.5).all()
    assert torch.allclose(inv.imag, 8 / torch.pi * (8 / (2 * torch.arange(4, dtype=torch.float64) + 1) - 1))


def test_a_bidirectional_layer_adds_a_backward_convolution():
    torch.manual_seed(0)
    layer = S4D(4, state_size=8, bidirectional=True)
    u = torch.randn(1, 20, 4)
    k_forward, k_backward = (k(20) for k in layer.kernels)
    expected = direct_conv(u, k_forward) + direct_conv(u.flip(1), k_backward).flip(1) + u * layer.skip
    assert torch.allclose(layer(u), expected, atol=1e-5)
    with pytest.raises(ValueError, match="bidirectional kernel reads the future"):
        layer.step(u, None)


def causal_encoder() -> S4DEncoder:
    torch.manual_seed(0)
    return S4DEncoder(8, n_layers=2, state_size=8, bidirectional=False, causal=True).eval()


def test_the_causal_model_reads_no_later_position_and_goes_on_step_by_step():
    model = causal_encoder()
    x = torch.randn(1, 16, 8, requires_grad=True)
    (model(x)[0, 6] * torch.randn(8)).sum().backward()
    # The FFT's rounding leaks ~1e-9 of the past's gradient to later positions: causal to float precision.
    assert x.grad[0, 7:].abs().max() < 1e-6 * x.grad[0, :7].abs().max()
    x = torch.randn(2, 11, 8)
    state, parts = {}, []
    for piece in (x[:, :5], x[:, 5:6], x[:, 6:]):
        out, state = model.step(piece, state)
        parts.append(out)
    assert torch.allclose(torch.cat(parts, 1), model(x), atol=1e-5)
    assert state["x0"].shape == (2, 8, 4)  # N/2 complex modes a channel, however long the text


@pytest.mark.parametrize("bidirectional", [True, False])
def test_padding_changes_no_real_output(bidirectional):
    torch.manual_seed(0)
    model = S4DEncoder(8, state_size=8, bidirectional=bidirectional).eval()
    x = torch.randn(2, 12, 8)
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[0, 8:] = True
    other = x.clone()
    other[0, 8:] = 5 * torch.randn(4, 8)
    a, b = model(x, pad), model(other, pad)
    assert torch.allclose(a, b, atol=1e-6) and a[0, 8:].abs().max() == 0
    assert torch.allclose(a[0, :8], model(x[:1, :8])[0], atol=1e-5)  # as if the padding were not there


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"state_size": 0}, "S4D: state size .* positive integer, got 0"),
        ({"state_size": 7}, "S4D: state size .* even"),
        ({"state_size": "64"}, "S4D: state size .* positive integer"),
        ({"n_layers": -1}, "S4D: n_layers must be a positive integer"),
        ({"causal": True, "bidirectional": True}, "causal=true with a bidirectional kernel"),
        ({"init": "legs"}, "init must be one of"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        S4DEncoder(8, **settings)


def test_the_config_builds_a_classifier_and_a_causal_language_model():
    from hydra.utils import instantiate

    cfg = compose_config(*TINY_LONG_RANGE, "model=s4d")
    task = instantiate(cfg.task)
    task.setup()
    batch = next(iter(task.loaders(4, 0)["train"]))
    assert task.build_model(cfg.model)(batch.inputs, batch.pad_mask).shape == (4, task.ready.n_classes)
    with pytest.raises(ValueError, match="bidirectional"):
        build_language_model(cfg.model, vocab_size=30, context=16)
    cfg = compose_config(*TINY_LONG_RANGE, "model=s4d", "model.backbone.bidirectional=false")
    lm = build_language_model(cfg.model, vocab_size=30, context=16)
    assert lm(torch.randint(1, 30, (2, 16))).shape == (2, 16, 30) and lm.backbone.causal


def test_the_kernel_decays_from_its_dt():
    """S4D's dt sets the memory: a larger step forgets faster (|A_bar| = exp(-dt/2) for S4D-Lin)."""
    kernel = S4DKernel(2, 8)
    with torch.no_grad():
        kernel.log_dt.copy_(torch.log(torch.tensor([1e-3, 1e-1])))
    A_bar, _ = kernel.discrete()
    assert torch.allclose(A_bar.abs(), torch.exp(-0.5 * torch.tensor([[1e-3], [1e-1]])).expand(2, 4), atol=1e-6)


@pytest.mark.parametrize("task", ["language_model", "mqar"])
def test_the_tasks_that_read_left_to_right_compose_a_causal_s4d(task):
    """conf/adapt/<task>_s4d.yaml: a language model and MQAR get one causal kernel without an override."""
    cfg = compose_config(f"task={task}", "model=s4d")
    assert cfg.model.backbone.bidirectional is False
    lm = build_language_model(cfg.model, vocab_size=30, context=16)
    assert lm.backbone.causal and not lm.backbone.bidirectional
