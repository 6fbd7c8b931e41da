"""Dropout whose random numbers cost a CPU little: 64 bits a draw, one 16-bit lane a mask element.

torch's CPU dropout draws one number from its generator for every element (``bernoulli_``), which
costs far more than the multiply it gates: at the standard encoder size it is the third-heaviest
operator of an fp32 training step (``python -m suite.tools.op_profile``). Here one 64-bit draw of
the same generator (``random_`` over the full int64 range) gives four 16-bit lanes, and an element is
kept when its lane is at or above ``round(p * 2**16)`` (as a signed int16, shifted by 2**15). So:

- the drop probability is ``p`` rounded to a multiple of 2**-16 (``effective_p``), and the kept
  values are scaled by ``1 / (1 - effective_p)``, so the expectation is exactly the input's;
- the numbers come from torch's default CPU generator, so ``torch.manual_seed`` repeats a run and
  the generator state a checkpoint saves resumes it, as with ``nn.Dropout``;
- the mask is kept as one byte an element for the backward pass, as torch's own dropout keeps it.

Off the CPU (CUDA), torch's fused dropout is used: its kernel already draws cheaply.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

LANES = 1 << 16  # a mask element's share of a draw: 16 bits


def effective_p(p: float) -> float:
    """The drop probability a mask really has: p rounded to a multiple of 2**-16."""
    return round(p * LANES) / LANES


def keep_mask(shape: torch.Size | tuple[int, ...], p: float, device: torch.device | None = None) -> Tensor:
    """A uint8 mask of ``shape`` (1: kept), each element kept with probability ``1 - effective_p(p)``."""
    n = math.prod(shape)
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device).random_(-(2**63), None)  # full 64 bits
    lanes = words.view(torch.int16)[:n].view(shape)  # uniform over [-2**15, 2**15)
    return (lanes >= round(p * LANES) - LANES // 2).view(torch.uint8)


class _MaskedScale(torch.autograd.Function):
    """x * mask * scale, forward and backward; the mask is drawn in the forward pass and kept."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:  # type: ignore[override]
        mask = keep_mask(x.shape, p, x.device)
        ctx.scale = 1.0 / (1.0 - effective_p(p))
        ctx.save_for_backward(mask)
        # uint8 promotes to x's dtype inside the multiply's vectorised loop; a bool mask does not
        return (x * mask).mul_(ctx.scale)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (mask,) = ctx.saved_tensors
        return (grad * mask).mul_(ctx.scale), None


def checked(p: float) -> float:
    """``p``, refused unless it is a probability (``nn.Dropout``'s message)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout of any shape; the identity when not training or p == 0 (``F.dropout``'s contract)."""
    checked(p)
    if not training or effective_p(p) == 0.0:
        return x
    if x.device.type != "cpu" or effective_p(p) == 1.0:
        return F.dropout(x, p, training)
    return _MaskedScale.apply(x, p)


class Dropout(nn.Module):
    """``nn.Dropout`` with the cheap CPU masks of this module (no parameters: state dicts are unchanged)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = checked(p)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def with_torch_dropout(model: nn.Module) -> nn.Module:
    """``model`` with every ``suite.nn.Dropout`` replaced by a ``torch.nn.Dropout`` of the same p (in place)."""
    for parent in list(model.modules()):
        for name, child in parent.named_children():
            if isinstance(child, Dropout):
                setattr(parent, name, nn.Dropout(child.p))
    return model
