"""The checks a backbone's declaration is held to (``suite.models.declaration``), one function a capability.

Each raises an AssertionError that names the model and the capability it fails, so a backbone that declares what it
cannot do is told so by name. ``tests/test_backbone_contract.py`` runs them over every config it discovers; the checks
themselves are tested on a backbone that lies (``tests/test_backbone_contract.py::test_a_lying_backbone_is_named``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from suite.models.declaration import CAUSAL, PADDING, STEP
from suite.runtime import numerics

B, L, D = 3, 11, 32


def inputs(d: int = D, length: int = L) -> tuple[Tensor, Tensor]:
    """(B, L, D) inputs and a right-padding mask: row 1 has 4 padded positions, row 2 has 8."""
    x = torch.randn(B, length, d)
    pad = torch.zeros(B, length, dtype=torch.bool)
    pad[1, length - 4 :] = True
    pad[2, length - 8 :] = True
    return x, pad


def fail(model: str, capability: str, why: str) -> AssertionError:
    return AssertionError(f"model {model!r} declares {capability!r} but {why}")


def padding(name: str, backbone: nn.Module, d: int = D, atol: float = 1e-5) -> None:
    """What padded positions hold changes no real output (a length-dependent pattern, e.g. BigBird's random blocks,
    may still differ with more padding: the pattern, not the padding, moves)."""
    x, pad = inputs(d)
    garbage = x.masked_fill(pad[..., None], 7.0)
    with torch.no_grad():
        out, with_garbage = backbone(x, pad), backbone(garbage, pad)
    real = ~pad
    if not torch.allclose(out[real], with_garbage[real], atol=atol):
        moved = (out - with_garbage)[real].abs().max()
        raise fail(name, PADDING, f"a real output moved by {moved:.3g} with what the padding holds")


def causal(name: str, backbone: nn.Module, d: int = D, atol: float = 1e-5) -> None:
    """Position t reads positions <= t: changing positions after t moves no output at or before t (and does move a
    later one, so the check is not vacuous)."""
    x, _ = inputs(d)
    changed = x.clone()
    changed[:, 6:] = torch.randn(B, L - 6, d)
    with torch.no_grad():
        a, b = backbone(x), backbone(changed)
    if not torch.allclose(a[:, :6], b[:, :6], atol=atol):
        raise fail(name, CAUSAL, f"its output at t < 6 moved by {(a - b)[:, :6].abs().max():.3g} with positions >= 6")
    assert not torch.allclose(a[:, 6:], b[:, 6:], atol=1e-3), f"model {name!r}: the later outputs ignore their inputs"


def numbers(state: dict[str, Tensor]) -> int:
    """Real numbers in a state of batch size 1 (a complex number is two)."""
    return sum(t.numel() * (2 if t.is_complex() else 1) for t in state.values())


def step(name: str, backbone: nn.Module, d: int = D, atol: float = 1e-4) -> None:
    """Going on step by step (chunks of 1, 3 and the rest) equals the full pass; the state then holds the numbers
    ``state_size`` declares."""
    x, _ = inputs(d)
    with torch.no_grad():
        full = backbone(x)
        outs, state, start = [], {}, 0
        for size in (1, 3, L - 4):
            out, state = backbone.step(x[:, start : start + size], state)
            outs.append(out)
            start += size
        stepped = torch.cat(outs, dim=1)
        if not torch.allclose(stepped, full, atol=atol):
            raise fail(name, STEP, f"its steps differ from the full pass by {(stepped - full).abs().max():.3g}")
        _, one = backbone.step(x[:1], {})
    declared = backbone.state_size(L)
    if numbers(one) != declared:
        raise AssertionError(
            f"model {name!r} declares a state of {declared} numbers at {L}, its step carries {numbers(one)}"
        )


def precisions(name: str, backbone: nn.Module, d: int = D) -> None:
    """Forward and backward finite under forced fp32 and forced bf16 autocast, the two within bf16's rounding."""
    x, pad = inputs(d)
    outs = {}
    for precision in ("fp32", "bf16"):
        backbone.zero_grad(set_to_none=True)
        with numerics.autocast(precision, torch.device("cpu")):
            out = backbone(x, pad)
        out.float().square().mean().backward()
        grads = [p.grad for p in backbone.parameters() if p.grad is not None]
        assert torch.isfinite(out).all() and all(torch.isfinite(g).all() for g in grads), f"{name}: {precision}"
        outs[precision] = out.detach().float()
    real = ~pad
    gap = (outs["bf16"] - outs["fp32"])[real].abs().max()
    assert gap < 0.15 * outs["fp32"][real].abs().max() + 0.05, f"model {name!r}: bf16 differs from fp32 by {gap:.3g}"
