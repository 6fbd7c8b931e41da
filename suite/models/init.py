"""Explicit initialisations of a Transformer stack, chosen in the config (``model/init=torch|gpt2|xavier``).

``torch_defaults`` keeps what each layer gave itself (nn.Linear: uniform within 1/sqrt(fan_in)). The others are
the two that published Transformers use; each is a function ``(stack) -> None`` applied once
the stack is built:

- ``gpt2``: every Linear weight N(0, 0.02), biases zero, and the projections that write into the
  residual stream (attention ``out_proj``, feed-forward ``linear2``) scaled down by
  1/sqrt(number of such projections), so the residual's variance does not grow with depth
  (Radford et al. 2019; also BERT's and torchvision ViT's 0.02).
- ``xavier``: Xavier-uniform Linear weights and zero biases, as ``torch.nn.Transformer`` does.
"""

from __future__ import annotations

import math

import torch
from torch import nn

RESIDUAL_PROJECTIONS = ("out_proj", "linear2")


def gpt2(stack: nn.Module, std: float = 0.02) -> None:
    """GPT-2's initialisation of every Linear in ``stack`` (LayerNorms keep weight 1, bias 0)."""
    residual = [
        name for name, m in stack.named_modules() if isinstance(m, nn.Linear) and name.endswith(RESIDUAL_PROJECTIONS)
    ]
    scaled = std / math.sqrt(max(1, len(residual)))
    for name, module in stack.named_modules():
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=scaled if name in residual else std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


def xavier(stack: nn.Module) -> None:
    """Xavier-uniform weights and zero biases for every Linear in ``stack``.

    A cross-attention's query and key/value projections are drawn as one fused (3D, D) matrix and
    split, as ``torch.nn.Transformer`` draws its ``in_proj_weight``: drawn apart, their smaller
    fan-out would give them a wider range than torch's.
    """
    from suite.models.transformer import CrossAttention  # here: the stacks import this module

    drawn: set[nn.Linear] = set()
    for module in stack.modules():  # a module comes before its children, so the fused draw precedes the Linear pass
        if isinstance(module, CrossAttention):
            q, kv = module.q_proj, module.kv_proj
            fused = nn.init.xavier_uniform_(torch.empty(q.out_features + kv.out_features, q.in_features))
            with torch.no_grad():
                q.weight.copy_(fused[: q.out_features])
                kv.weight.copy_(fused[q.out_features :])
            drawn |= {q, kv}
        elif isinstance(module, nn.Linear):
            if module not in drawn:
                nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


def torch_defaults(stack: nn.Module) -> None:
    """Keep the initialisation each layer gave itself (``model/init=torch``)."""
