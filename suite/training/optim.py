"""Which parameters weight decay applies to.

Decay pulls weights towards zero; on a matrix that is a regulariser, but on a bias, a norm's
gain or an embedding table it only shrinks what should not be shrunk (a LayerNorm gain decayed
towards 0, rarely seen tokens' embeddings erased). GPT-2, BERT and ViT decay only the weight
matrices of layers; ``decay_groups`` does the same.
"""

from __future__ import annotations

from typing import Any

from torch import nn

NO_DECAY_MODULES = (nn.Embedding, nn.LayerNorm, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d, nn.RMSNorm)


def decays(module: nn.Module, name: str, param: nn.Parameter) -> bool:
    """A layer's weight matrix (Linear, convolution, recurrent, attention projection): named '*weight*', 2+ dims, not an
    embedding or norm."""
    return "weight" in name and param.ndim >= 2 and not isinstance(module, NO_DECAY_MODULES)


def decay_groups(model: nn.Module) -> list[dict[str, Any]]:
    """Two optimizer groups: the matrices, with the optimizer's weight decay; everything else (biases, norms,
    embeddings, positions, [CLS]) with none."""
    decay, rest, seen = [], [], set()
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad or id(param) in seen:  # a tied weight is counted once
                continue
            seen.add(id(param))
            (decay if decays(module, name, param) else rest).append(param)
    return [{"params": decay}, {"params": rest, "weight_decay": 0.0}]
