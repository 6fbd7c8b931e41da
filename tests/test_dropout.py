"""The suite's dropout (suite.nn.dropout): the kept fraction, independence, scaling, seeding, gradients, precisions."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from suite.nn import Dropout, dropout
from suite.nn.dropout import effective_p, keep_mask

Z = 4.5  # a two-sided normal quantile: a correct generator fails one of these checks about once in 150,000 runs


def binomial_bound(n: int, q: float) -> float:
    """Z standard deviations of the mean of n Bernoulli(q) draws."""
    return Z * math.sqrt(q * (1 - q) / n)


@pytest.mark.parametrize("p", [0.05, 0.1, 0.3, 0.5, 0.9])
def test_the_kept_fraction_is_one_minus_p_within_a_binomial_interval(p: float) -> None:
    torch.manual_seed(0)
    n = 2_000_003  # not a multiple of 4: the last draw's spare lanes are dropped
    kept = keep_mask((n,), p).double().mean().item()
    assert abs(kept - (1 - p)) < binomial_bound(n, 1 - p) + abs(effective_p(p) - p)
    assert abs(effective_p(p) - p) <= 2**-17


def correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    return ((a - a.mean()) * (b - b.mean())).mean().item() / (a.std() * b.std()).item()


def test_masks_of_neighbouring_elements_layers_and_steps_are_uncorrelated() -> None:
    """Lanes of one 64-bit draw (elements 0-3), the next row, the next call (a layer), the call after (a step)."""
    torch.manual_seed(1)
    shape, p = (512, 1024), 0.5
    first, second, third = (keep_mask(shape, p) for _ in range(3))
    n = first.numel()
    bound = Z / math.sqrt(n - 1024)  # the sample correlation of independent draws: sd about 1/sqrt(n)
    pairs = {
        "next element (same 64-bit draw)": (first[:, :-1], first[:, 1:]),
        "four elements on (the next draw)": (first[:, :-4], first[:, 4:]),
        "next row": (first[:-1], first[1:]),
        "next call (another layer)": (first, second),
        "two calls on (the next step)": (first, third),
    }
    for name, (a, b) in pairs.items():
        assert abs(correlation(a, b)) < bound, name
    # and within a draw, the four lanes' joint pattern is uniform: every one of the 16 outcomes as often
    lanes = first.view(-1, 4).long()
    patterns = torch.bincount(lanes[:, 0] * 8 + lanes[:, 1] * 4 + lanes[:, 2] * 2 + lanes[:, 3], minlength=16)
    expected = lanes.shape[0] / 16
    chi2 = ((patterns - expected) ** 2 / expected).sum().item()
    assert chi2 < 50.0  # chi-squared with 15 degrees of freedom: 50 is beyond its 99.999th percentile


def test_scaling_keeps_the_expectation_and_the_dropped_are_zero() -> None:
    torch.manual_seed(2)
    x = torch.randn(1000, 1000).abs() + 1.0
    y = dropout(x, 0.3)
    kept = y != 0
    assert torch.allclose(y[kept], x[kept] / (1 - effective_p(0.3)))
    ratio = (y.double().sum() / x.double().sum()).item()
    assert abs(ratio - 1.0) < Z * math.sqrt(0.3 / 0.7 / x.numel()) * 2  # the relative sd of the scaled sum, doubled


def test_a_seeded_draw_repeats_and_another_seed_differs() -> None:
    x = torch.randn(64, 128)
    torch.manual_seed(7)
    a = dropout(x, 0.1)
    torch.manual_seed(7)
    b = dropout(x, 0.1)
    torch.manual_seed(8)
    c = dropout(x, 0.1)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_the_draws_come_from_the_generator_a_checkpoint_saves() -> None:
    """Restoring torch's CPU generator state (what last.pt keeps) gives the same masks afterwards."""
    torch.manual_seed(3)
    dropout(torch.ones(100), 0.5)
    state = torch.get_rng_state()
    after = dropout(torch.ones(10_000), 0.5)
    torch.set_rng_state(state)
    assert torch.equal(dropout(torch.ones(10_000), 0.5), after)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_gradient_is_the_same_mask_and_scale(dtype: torch.dtype) -> None:
    torch.manual_seed(4)
    x = torch.randn(32, 48, dtype=dtype, requires_grad=True)
    y = dropout(x, 0.25)
    assert y.dtype == dtype
    g = torch.randn_like(y)
    y.backward(g)
    kept = y.detach() != 0
    scale = 1 / (1 - effective_p(0.25))
    expected = torch.where(kept, g.float() * scale, 0.0).to(dtype)
    assert torch.equal(x.grad, expected)


def test_gradcheck_in_double() -> None:
    x = torch.randn(6, 5, dtype=torch.double, requires_grad=True)

    def seeded(t: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(5)  # the same mask for every evaluation gradcheck makes
        return dropout(t, 0.4)

    assert torch.autograd.gradcheck(seeded, (x,))


def test_under_bf16_autocast_it_keeps_the_activation_dtype() -> None:
    lin = torch.nn.Linear(16, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = Dropout(0.1)(lin(torch.randn(4, 16)))
    assert y.dtype == torch.bfloat16


def test_the_identity_in_eval_mode_and_at_zero_and_torch_at_one() -> None:
    x = torch.randn(10, 10)
    layer = Dropout(0.5).eval()
    assert layer(x) is x
    assert dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    assert "p=0.5" in repr(Dropout(0.5))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_a_probability_outside_zero_to_one_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        Dropout(p)
    with pytest.raises(ValueError, match="between 0 and 1"):
        dropout(torch.ones(3), p)


def test_it_matches_torch_dropout_in_distribution() -> None:
    """The same contract as F.dropout: zeros or x / (1 - p), the kept share 1 - p, both within the bound."""
    torch.manual_seed(6)
    x = torch.ones(500_000)
    ours, theirs = dropout(x, 0.2), F.dropout(x, 0.2)
    bound = binomial_bound(x.numel(), 0.8)
    assert abs((ours != 0).double().mean().item() - 0.8) < bound + 2**-17
    assert abs((theirs != 0).double().mean().item() - 0.8) < bound
    values = ours.unique()
    assert values.tolist() == [0.0, pytest.approx(1 / (1 - effective_p(0.2)))]


@pytest.mark.parametrize("model", ["transformer", "lstm", "vit"])
def test_the_models_use_it(model: str) -> None:
    """No dropout module of a composed model is torch's: each is the suite's (the LM's backbone included)."""
    from conftest import compose_config, shrink, tiny_lm

    from suite.models.classifier import build_classifier
    from suite.models.embeddings import TokenEmbedding

    cfg = shrink(compose_config(f"model={model}"))
    built = [build_classifier(cfg.model, TokenEmbedding(50, cfg.model.d_model), n_classes=3, max_len=20)]
    if model != "vit":
        built.append(tiny_lm(model))
    for net in built:
        kinds = {type(m) for m in net.modules()}
        assert torch.nn.Dropout not in kinds
        assert Dropout in kinds or model == "vit"  # the ViT config has no dropout before its head


def test_swapping_in_torchs_dropout_and_zeroing_it_keep_the_weights():
    import copy

    from conftest import compose_config, shrink

    from suite.models.classifier import build_classifier
    from suite.models.embeddings import TokenEmbedding
    from suite.nn.dropout import with_torch_dropout
    from suite.tools.dropout_bench import without_dropout

    cfg = shrink(compose_config("model=transformer"))
    model = build_classifier(cfg.model, TokenEmbedding(50, cfg.model.d_model), n_classes=3, max_len=20)
    ours = [m.p for m in model.modules() if isinstance(m, Dropout)]
    torchs = with_torch_dropout(copy.deepcopy(model))
    assert [m.p for m in torchs.modules() if isinstance(m, torch.nn.Dropout)] == ours and ours
    assert not any(isinstance(m, Dropout) for m in torchs.modules())
    zero = without_dropout(copy.deepcopy(model))
    assert all(m.p == 0.0 for m in zero.modules() if isinstance(m, Dropout))
    for other in (torchs, zero):
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), other.state_dict().values()))


def test_the_dropout_bench_prints_its_three_tables(capsys):
    from suite.tools.dropout_bench import main

    tiny = [
        "task=long_range",
        "task.seq_len=32",
        "task.n_train=16",
        "task.n_val=8",
        "task.n_test=8",
        "model=transformer",
    ]
    tiny += ["model.d_model=16", "model.backbone.n_layers=1", "model.backbone.n_heads=2", "model.backbone.d_ff=32"]
    out = main(
        [
            *tiny,
            "--batch",
            "2",
            "--shape",
            "64",
            "64",
            "--warmup",
            "0",
            "--repeats",
            "2",
            "--step-precision",
            "fp32",
            "bf16",
        ]
    )
    assert set(out) == {"masks", "dropout fp32", "dropout bf16", "step fp32", "step bf16"}
    assert set(out["step bf16"]) == {"suite dropout", "nn.Dropout", "dropout 0"}
    assert "suite: 16-bit lanes" in out["masks"] and set(out["dropout fp32"]) == {"F.dropout", "suite"}
    printed = capsys.readouterr().out
    assert printed.startswith("Measured on ") and "**1. a keep-mask**" in printed
    assert printed.count("| of nn.Dropout |") == 2 and printed.count("| of F.dropout |") == 2  # markdown tables


def test_off_the_cpu_it_is_torchs_fused_dropout(monkeypatch):
    """A tensor on another device (meta here, CUDA in use) goes to F.dropout; a CPU tensor never does."""
    import importlib

    module = importlib.import_module("suite.nn.dropout")  # suite.nn's attribute of that name is the function

    calls = []
    monkeypatch.setattr(module.F, "dropout", lambda x, p, training: calls.append(x.device.type) or x)
    dropout(torch.empty(4, 4, device="meta"), 0.1)
    dropout(torch.ones(4, 4), 0.1)
    assert calls == ["meta"]


def test_the_dropout_bench_times_steps_in_the_precisions_the_cpu_runs(monkeypatch, capsys):
    """By default table 3 is fp32, and bf16 only where the CPU has bf16 instructions (else it times emulation)."""
    from suite.runtime import numerics
    from suite.tools.dropout_bench import main

    monkeypatch.setattr(numerics, "timed_precisions", lambda device: ["fp32"])  # an AVX2-only CPU
    tiny = ["task=long_range", "task.seq_len=16", "task.n_train=8", "task.n_val=4", "task.n_test=4", "model=lstm"]
    out = main([*tiny, "model.d_model=8", "--batch", "2", "--shape", "8", "8", "--warmup", "0", "--repeats", "2"])
    assert [k for k in out if k.startswith("step")] == ["step fp32"]
