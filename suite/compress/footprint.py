"""What a model or its artefact costs to store: bytes on disk, weights held, non-zero weights, bits per weight.

Quantized modules hold their weights packed (torch's dynamic int8 modules) or as tensor
subclasses (torchao); ``weight_tensors`` reads each kind back as plain tensors, so one count
serves every method. Zeros are counted in the stored values (an int8 zero is a zero).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterator

import torch
from torch import Tensor, nn


def serialized_bytes(obj: object) -> int:
    """Bytes ``torch.save`` writes for ``obj`` (a state dict, a tensor, a module)."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.tell()


def plain(t: Tensor) -> Tensor:
    """A stored tensor as the values it holds: int8 codes of a quantized tensor, the dequantized values of a tensor
    subclass."""
    if t.is_quantized:
        return t.int_repr()
    if type(t) not in (Tensor, nn.Parameter):  # torchao's quantized weights are tensor subclasses
        return t.dequantize()
    return t.detach()


def module_weights(module: nn.Module) -> Iterator[Tensor]:
    """The weights a module holds itself (not its children's), whatever form they are kept in."""
    from torch.ao.nn import quantized as nnq
    from torch.ao.nn.quantized import dynamic as qd

    if isinstance(module, nnq.Embedding):  # uint8 rows, packed
        yield module.weight()
        return
    if isinstance(module, qd.Linear):  # packed: weight() and bias() unpack them
        yield module.weight()
        if module.bias() is not None:
            yield module.bias()
        return
    if isinstance(module, (qd.LSTM, qd.GRU)):
        yield from module.get_weight().values()
        yield from (b for b in module.get_bias().values() if b is not None)
        return
    yield from module.parameters(recurse=False)


def weight_tensors(model: nn.Module) -> Iterator[Tensor]:
    """Every weight of ``model`` as a plain tensor (shared weights once); a model kept outside torch (an ONNX graph)
    lists its own."""
    if hasattr(model, "stored_weights"):
        yield from model.stored_weights()
        return
    seen: dict[
        int, Tensor
    ] = {}  # holding each tensor keeps its id unique (unpacked weights are temporaries whose ids get reused)
    for module in model.modules():
        for t in module_weights(module):
            if id(t) not in seen:
                seen[id(t)] = t
                yield plain(t)


def count_weights(model: nn.Module) -> tuple[int, int]:
    """(weights held, non-zero weights held)."""
    total = nonzero = 0
    for t in weight_tensors(model):
        total += t.numel()
        nonzero += int(torch.count_nonzero(t))
    return total, nonzero


def linear_bytes(model: nn.Module) -> tuple[int, int]:
    """Serialized bytes of the state of the Linear layers alone (float or int8, packed or not), and how many layers that
    is.

    The figure the int8 target speaks of: an embedding table stays float under dynamic
    quantization, and in a small-vocabulary model it dominates the file.
    """
    from torch.ao.nn.quantized import dynamic as qd

    kinds = (nn.Linear, qd.Linear)
    state = {name: module.state_dict() for name, module in model.named_modules() if isinstance(module, kinds)}
    return serialized_bytes(state), len(state)


def file_bytes(path: Path) -> int:
    return Path(path).stat().st_size


def bits_per_weight(artefact_bytes: int, weights: int) -> float:
    """Bits of the artefact per weight it holds (overheads included: a float32 file is a little above 32)."""
    return 8.0 * artefact_bytes / max(1, weights)
