"""Hyena (``suite.models.hyena``) computes the operator its paper defines.

``tests/test_backbone_contract.py`` finds ``conf/model/hyena.yaml`` and holds it to what it declares (padding, causal,
step by step equal to the full pass with its state size, forced fp32 and bf16, a short training run). Here: the FFT
long convolution equals the direct sum; the mixer equals the order-N recurrence written plainly from its own weights
(filter network, window and convolutions by direct sums); decoding in uneven chunks from {} equals the full pass at
every length up to 20, past the filter's time scale; no output reads a later input, and the first input reaches the
last output; the recurrence runs in float32 under bf16 autocast; the window makes the filters decay; bad settings are
refused at build, naming the setting and the model.
"""

from __future__ import annotations

import math

import pytest
import torch

from suite.models.hyena import HyenaMixer, long_conv
from suite.models.mixer_stack import MixerEncoder

TOL = dict(atol=2e-5, rtol=1e-4)


def conv_plainly(u: torch.Tensor, h: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """y_t = sum_(s<=t) h_(t-s) u_s + bias u_t, a position and a tap at a time: u (B, L, C), h (L, C)."""
    y = bias * u.clone()
    for t in range(u.shape[1]):
        for s in range(t + 1):
            y[:, t] += h[t - s] * u[:, s]
    return y


@pytest.mark.parametrize("length", [1, 7, 13, 50])
def test_the_fft_long_convolution_is_the_direct_sum(length):
    """In float64, within 1e-10: the full pass, and the last positions after a history (the one-position dot product
    and the FFT over history and new positions)."""
    torch.manual_seed(0)
    u, h, bias = (
        torch.randn(2, length, 5, dtype=torch.float64),
        torch.randn(length, 5, dtype=torch.float64),
        torch.randn(5, dtype=torch.float64),
    )
    want = conv_plainly(u, h, bias)
    torch.testing.assert_close(long_conv(u, h, bias), want, atol=1e-10, rtol=1e-10)
    for start in {length - 1, length // 2}:
        torch.testing.assert_close(long_conv(u, h, bias, start), want[:, start:], atol=1e-10, rtol=1e-10)


def hyena_plainly(m: HyenaMixer, x: torch.Tensor) -> torch.Tensor:
    """The paper's order-N Hyena from the mixer's weights: the short convolution, the filter network with its sines
    and safari's window, and z^(n+1)_t = x^n_t (sum_(s<=t) h^n_(t-s) z^n_s + b^n z^n_t), all by direct sums."""
    B, L, D = x.shape
    N, f = m.order, m.filter
    u = m.in_proj(x)
    w, c = m.short.conv.weight[:, 0], m.short.conv.bias  # (C, width), (C,)
    width = w.shape[1]
    short = c.expand_as(u).clone()
    for t in range(L):
        for k in range(width):
            if t - (width - 1) + k >= 0:
                short[:, t] += w[:, k] * u[:, t - (width - 1) + k]
    v, *gates = short.split(D, dim=-1)
    bands = (f.emb_dim - 1) // 2
    freqs = torch.linspace(1e-4, bands - 1, bands)
    rates = torch.linspace(math.log(1e-2) / 1.5, math.log(1e-2) / 0.3, N * D).abs()  # 1e-2 at t = 1.5 .. 0.3
    h = torch.zeros(L, D, N)
    for l in range(L):
        t = l / f.time_scale
        feats = torch.cat([torch.tensor([t]), torch.cos(2 * math.pi * freqs * t), torch.sin(2 * math.pi * freqs * t)])
        a = torch.sin(f.freq * f.first(feats))
        for layer in f.inner:
            a = torch.sin(f.freq * layer(a))
        h[l] = (f.last(a) * torch.exp(-rates * t)).view(D, N)  # channel d N + n is filter n's channel d
    z = v
    for n in range(N):
        z = gates[n] * conv_plainly(z, h[..., n], m.bias[n])
    return m.out_proj(z)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_the_mixer_is_the_hyena_recurrence(order):
    torch.manual_seed(1)
    m = HyenaMixer(8, order=order, filter_order=16, emb_dim=5, time_scale=10).eval()
    x = torch.randn(2, 23, 8)
    with torch.no_grad():
        torch.testing.assert_close(m(x)[0], hyena_plainly(m, x), **TOL)


def chunks(length: int) -> list[int]:
    """Uneven chunk sizes 1, 3, 2, 5, 1, ... summing to ``length``."""
    out, pattern = [], [1, 3, 2, 5]
    while sum(out) < length:
        out.append(min(pattern[len(out) % 4], length - sum(out)))
    return out


def test_decoding_in_uneven_chunks_equals_the_full_pass_and_carries_its_declared_state():
    """Every length 1..20 through a 2-layer stack, lengths beyond the filter's time scale (8) included."""
    torch.manual_seed(2)
    stack = MixerEncoder(16, lambda d: HyenaMixer(d, filter_order=16, emb_dim=5, time_scale=8)).eval()
    x = torch.randn(2, 20, 16)
    with torch.no_grad():
        for length in range(1, 21):
            full, (outs, state, start) = stack(x[:, :length]), ([], {}, 0)
            for size in chunks(length):
                out, state = stack.step(x[:, start : start + size], state)
                outs.append(out)
                start += size
            torch.testing.assert_close(torch.cat(outs, dim=1), full, **TOL, msg=f"length {length}")
            assert sum(t[:1].numel() for t in state.values()) == stack.state_size(length), length


def test_no_output_reads_a_later_input_and_the_first_input_reaches_the_last_output():
    torch.manual_seed(3)
    m = HyenaMixer(8, filter_order=16, emb_dim=5, time_scale=64).eval()
    x = torch.randn(2, 40, 8)
    with torch.no_grad():
        base = m(x)[0]
        for k in (0, 17, 39):
            changed = x.clone()
            changed[:, k] += 1.0
            out = m(changed)[0]
            torch.testing.assert_close(out[:, :k], base[:, :k], atol=1e-6, rtol=0)
            assert (out[:, k:] - base[:, k:]).abs().amax(dim=(0, 2)).min() > 1e-4, k  # every later output moves


def test_the_filters_and_recurrence_run_in_float32_under_bf16_autocast():
    """The filter network's layers (which autocast would run in bf16) and the carried inputs are float32."""
    torch.manual_seed(4)
    m, seen = HyenaMixer(8, filter_order=16, emb_dim=5), []
    m.filter.last.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, state = m(torch.randn(2, 9, 8), None, step=True)
        assert m.in_proj(torch.randn(2, 8)).dtype == torch.bfloat16  # autocast is on outside the recurrence
    assert seen == [torch.float32] and all(state[f"z{n}"].dtype == torch.float32 for n in (1, 2))
    assert torch.isfinite(y).all()


def test_the_window_makes_the_implicit_filters_decay():
    """At init, taps past 1.5 time scales (the window below 1e-2 in every channel) are over 10x smaller on average
    than the first tenth; without the window (rates 0) the network's own taps do not decay so."""
    torch.manual_seed(5)
    f = HyenaMixer(32, time_scale=100).filter
    with torch.no_grad():
        h = f(200).abs()
        assert h[:10].mean() > 10 * h[150:].mean()
        f.rates.zero_()
        h = f(200).abs()
        assert h[:10].mean() < 10 * h[150:].mean()


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(order=0), "Hyena: model.backbone.mixer.order must be a positive integer, got 0"),
        (dict(order=2.0), "Hyena: model.backbone.mixer.order must be a positive integer"),
        (dict(filter_order=-1), "Hyena: model.backbone.mixer.filter_order must be a positive integer"),
        (dict(short_width=0), "Hyena: model.backbone.mixer.short_width must be a positive integer"),
        (dict(emb_dim=4), r"Hyena: model.backbone.mixer.emb_dim must be an odd integer >= 3 .*got 4"),
        (dict(emb_dim=1), "Hyena: model.backbone.mixer.emb_dim must be an odd integer >= 3"),
        (dict(emb_dim=5.0), "Hyena: model.backbone.mixer.emb_dim must be an odd integer >= 3"),
        (dict(time_scale=0), "Hyena: model.backbone.mixer.time_scale must be a positive number, got 0"),
    ],
)
def test_bad_settings_are_refused_at_build_naming_the_setting_and_the_model(settings, message):
    with pytest.raises(ValueError, match=message):
        HyenaMixer(16, **settings)
