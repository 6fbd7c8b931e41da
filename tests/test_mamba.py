"""Mamba: the selective scan is the sequential recurrence, the block is mambapy's given the same weights, the model
reads no later position, padding reaches no real output, generation step by step is the full pass, and bad settings
(mamba-ssm on a CPU among them) are refused by name when the model is built."""

from __future__ import annotations

import pytest
import torch

from suite.models.mamba import MambaBlock, MambaEncoder, selective_scan
from suite.models.selective_loop import CHUNK, chunk_positions, selective_loop
from tests.conftest import TINY_LONG_RANGE, compose_config


def sequential_scan(x, delta, A, B, C, D, h0=None, negative=False):
    """h_t = exp(delta_t A) h_(t-1) + delta_t B_t x_t, y_t = C_t h_t + D x_t, one position at a time (``negative``:
    the decay 2 exp(delta_t A) - 1)."""
    h = torch.zeros(x.size(0), *A.shape, dtype=x.dtype) if h0 is None else h0
    ys = []
    for t in range(x.size(1)):
        decay = torch.exp(delta[:, t, :, None] * A)
        decay = 2 * decay - 1 if negative else decay
        h = decay * h + (delta[:, t] * x[:, t])[..., None] * B[:, t, None, :]
        ys.append((h * C[:, t, None, :]).sum(-1) + D * x[:, t])
    return torch.stack(ys, 1), h


@pytest.mark.parametrize(
    ("kernel", "chunk", "negative"),
    [("loop", 256, False), ("pscan", 256, False), ("log", 4, False), ("log", 256, False), ("loop", 256, True),
     ("pscan", 256, True)],
)  # fmt: skip
def test_the_selective_scan_is_the_sequential_recurrence(kernel, chunk, negative):
    gen = torch.Generator().manual_seed(0)
    x, delta = torch.randn(2, 37, 6, generator=gen), torch.rand(2, 37, 6, generator=gen) * 0.5
    A = -torch.rand(6, 4, generator=gen) * 4
    B, C, D = torch.randn(2, 37, 4, generator=gen), torch.randn(2, 37, 4, generator=gen), torch.randn(6, generator=gen)
    h0 = torch.randn(2, 6, 4, generator=gen)  # of either sign, as a carried state is
    y, h = selective_scan(x, delta, A, B, C, D, h0, chunk, kernel, negative)
    expected_y, expected_h = sequential_scan(x, delta, A, B, C, D, h0, negative)
    assert not negative or bool((2 * torch.exp(delta[..., None] * A) - 1 < 0).any())  # negative decays occur
    assert torch.allclose(y, expected_y, atol=1e-4, rtol=1e-4) and torch.allclose(h, expected_h, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("negative", [False, True], ids=["(0, 1)", "(-1, 1)"])
# 19 positions: chunks that divide it (1), that don't (2, the map's, 3 and 8), one past it, the one picked (None)
@pytest.mark.parametrize("chunk", [1, 2, 3, CHUNK, 64, None])
def test_the_loops_backward_is_the_sequential_recurrences_in_float64(chunk, negative):
    """Every input's gradient of the loop (its own backward) against autograd through the recurrence written plainly,
    from a carried state and to the last state as well as the outputs, whatever the loop's chunk."""
    gen = torch.Generator().manual_seed(1)
    f64 = dict(dtype=torch.float64)
    inputs = [
        torch.randn(2, 19, 5, generator=gen, **f64),
        torch.rand(2, 19, 5, generator=gen, **f64),
        -torch.rand(5, 3, generator=gen, **f64) * 4,
        torch.randn(2, 19, 3, generator=gen, **f64),
        torch.randn(2, 19, 3, generator=gen, **f64),
        torch.randn(5, generator=gen, **f64),
        torch.randn(2, 5, 3, generator=gen, **f64),
    ]
    weights = torch.randn(2, 19, 5, generator=gen, **f64), torch.randn(2, 5, 3, generator=gen, **f64)
    grads = []

    def loop(x, delta, A, B, C, D, h0):
        y, h = selective_loop(x, delta, A, B, C, h0, chunk, negative)
        return y + D * x, h

    def plainly(x, delta, A, B, C, D, h0):
        return sequential_scan(x, delta, A, B, C, D, h0, negative)

    for form in (loop, plainly):
        leaves = [t.clone().requires_grad_() for t in inputs]
        y, h = form(*leaves)
        ((y * weights[0]).sum() + (h * weights[1]).sum()).backward()
        grads.append([t.grad for t in leaves])
    for name, ours, expected in zip(["x", "delta", "A", "B", "C", "D", "h0"], *grads):
        assert torch.allclose(ours, expected, atol=1e-10, rtol=1e-10), name


def test_the_scan_has_finite_gradients_where_b_is_zero():
    """Padded inputs are exactly 0, so delta B x is 0 there: its log is floored, never -inf, and no NaN comes back."""
    x = torch.zeros(1, 8, 3, requires_grad=True)
    y, _ = selective_scan(
        x, torch.rand(1, 8, 3), -torch.ones(3, 2), torch.randn(1, 8, 2), torch.randn(1, 8, 2), torch.ones(3)
    )
    y.sum().backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("kernel", ["loop", "pscan", "log"])
def test_the_block_is_mambapys_given_the_same_weights(kernel):
    import mambapy.mamba as peer

    torch.manual_seed(0)
    config = peer.MambaConfig(d_model=16, n_layers=1, d_state=8, expand_factor=2, d_conv=4)
    theirs = peer.MambaBlock(config)
    ours = MambaBlock(16, d_state=8, expand=2, d_conv=4, chunk=16, kernel=kernel)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 64, 16)
    assert torch.allclose(ours(x), theirs(x), atol=1e-4, rtol=1e-4)
    out, state = ours.step(x[:, :1], None)
    their_out, _ = theirs.step(x[:, 0], (None, torch.zeros(2, 32, 3)))
    assert torch.allclose(out[:, 0], their_out, atol=1e-5)


def encoder() -> MambaEncoder:
    torch.manual_seed(0)
    return MambaEncoder(16, n_layers=2, d_state=4, chunk=8).eval()


def test_no_position_reads_a_later_one_and_padding_reaches_no_real_output():
    model = encoder()
    x = torch.randn(1, 20, 16, requires_grad=True)
    (model(x)[0, 9] * torch.randn(16)).sum().backward()
    assert x.grad[0, 10:].abs().max() == 0 and x.grad[0, :10].abs().max() > 0
    x = torch.randn(2, 12, 16)
    pad = torch.zeros(2, 12, dtype=torch.bool)
    pad[0, 7:] = True
    other = x.clone()
    other[0, 7:] = 5 * torch.randn(5, 16)
    a = model(x, pad)
    assert torch.equal(a, model(other, pad)) and a[0, 7:].abs().max() == 0
    assert torch.allclose(a[0, :7], model(x[:1, :7])[0], atol=1e-5)


def test_going_on_step_by_step_is_the_full_pass():
    model = encoder()
    x = torch.randn(2, 13, 16)
    state, parts = {}, []
    for piece in (x[:, :5], x[:, 5:6], x[:, 6:7], x[:, 7:]):
        out, state = model.step(piece, state)
        parts.append(out)
    assert torch.allclose(torch.cat(parts, 1), model(x), atol=1e-5)
    assert state["h0"].shape == (2, 32, 4) and state["conv0"].shape == (2, 32, 3)  # the same size at any length


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"d_state": 0}, "Mamba: d_state .* positive integer, got 0"),
        ({"chunk": 1.5}, "Mamba: scan chunk .* positive integer"),
        ({"d_conv": -2}, "Mamba: d_conv"),
        ({"n_layers": 0}, "Mamba: n_layers"),
        ({"causal": False}, "Mamba reads one way only"),
        ({"kernel": "triton"}, "kernel .* must be one of"),
        ({"kernel": "log", "negative_eigenvalues": True}, "negative_eigenvalues .* needs kernel=loop or pscan"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        MambaEncoder(16, **settings)


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a CUDA machine mamba_ssm may be a valid choice")
def test_mamba_ssm_on_a_cpu_is_refused_when_the_model_is_built():
    with pytest.raises(ValueError, match="kernel=mamba_ssm runs on CUDA only"):
        MambaEncoder(16, kernel="mamba_ssm")


def test_the_config_builds_a_classifier_and_a_language_model():
    from hydra.utils import instantiate

    from suite.models.language_model import build_language_model

    cfg = compose_config(*TINY_LONG_RANGE, "model=mamba")
    task = instantiate(cfg.task)
    task.setup()
    batch = next(iter(task.loaders(4, 0)["train"]))
    assert task.build_model(cfg.model)(batch.inputs, batch.pad_mask).shape == (4, task.ready.n_classes)
    lm = build_language_model(cfg.model, vocab_size=30, context=16)
    logits, state = lm.step(torch.randint(1, 30, (2, 3)), 0, {})
    assert logits.shape == (2, 3, 30) and "h1" in state


def test_the_loops_chunk_keeps_its_inputs_in_cache_from_two_to_eight_positions():
    # (T, B, E, N) float32 within 2 MiB: 8 positions at B 16, E 128; 4 at the LRA's shapes (B 32, E 256); 2 at the
    # capability map's (B 64, E 160 at 100,000 parameters; E 336 at 400,000, where not even 2 fit), the fastest there
    # (python -m suite.tools.scan_bench --chunks); never 1 (a position's operations each pay their overhead) nor more
    # than CHUNK
    assert chunk_positions(16, 128, 16) == 8 and chunk_positions(1, 8, 4) == CHUNK
    assert chunk_positions(32, 256, 16) == 4 and chunk_positions(64, 160, 16) == 2 and chunk_positions(64, 336, 16) == 2
    assert chunk_positions(32, 256, 16, itemsize=8) == 2 and chunk_positions(16, 128, 16, itemsize=8) == 8
