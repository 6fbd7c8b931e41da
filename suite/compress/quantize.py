"""Post-training quantization: dynamic int8 (torch's ``quantize_dynamic`` or torchao's ``quantize_``) and bf16 weights.

Dynamic int8 stores the weights of the chosen layers as int8 with a float scale and quantizes
each activation on the fly from its own range, so it needs no calibration data and no
fine-tuning. torch's eager ``quantize_dynamic`` (deprecated in favour of torchao, still shipped)
covers Linear, LSTM and GRU with fbgemm/oneDNN int8 kernels; torchao's
``Int8DynamicActivationInt8WeightConfig`` covers Linear only. Both are measured by ``job=compress``;
the README gives the figures and the choice.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable, Sequence

import torch
from torch import Tensor, nn

from suite.compress.method import Context, Method
from suite.runtime import numerics

LAYERS: dict[str, type[nn.Module]] = {"linear": nn.Linear, "lstm": nn.LSTM, "gru": nn.GRU, "embedding": nn.Embedding}
BACKENDS = ("torch", "torchao")


def torch_dynamic_int8(model: nn.Module, layers: Sequence[str]) -> nn.Module:
    """A copy of ``model`` with ``layers`` (Linear, LSTM, GRU) swapped for torch's dynamic int8 modules; an embedding
    table becomes uint8 rows with a float scale and offset each (weight-only: its output is a lookup, nothing to
    multiply)."""
    from torch.ao.quantization import default_dynamic_qconfig, float_qparams_weight_only_qconfig, quantize_dynamic

    spec = {
        LAYERS[name]: float_qparams_weight_only_qconfig if name == "embedding" else default_dynamic_qconfig
        for name in layers
    }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecated.*")
        return quantize_dynamic(copy.deepcopy(model).eval(), spec, dtype=torch.qint8)


def torchao_dynamic_int8(model: nn.Module) -> nn.Module:
    """A copy of ``model`` whose Linear weights are torchao int8 tensors, activations quantized per token at run
    time."""
    from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

    quantized = copy.deepcopy(model).eval()
    quantize_(quantized, Int8DynamicActivationInt8WeightConfig())
    return quantized


class DynamicInt8(Method):
    """Dynamic int8 quantization of ``layers`` with torch's or torchao's implementation; no fine-tuning.

    Args:
        backend: 'torch' (``torch.ao.quantization.quantize_dynamic``: Linear, LSTM, GRU, embedding tables) or
            'torchao' (``torchao.quantization.quantize_``: Linear only).
        layers: kinds of layer quantized: any of 'linear', 'lstm', 'gru', 'embedding'.
    """

    name = "dynamic_int8"

    def __init__(
        self,
        backend: str = "torch",
        layers: Sequence[str] = ("linear", "lstm", "gru"),
        fine_tune: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(fine_tune)
        if backend not in BACKENDS:
            raise ValueError(f"compress.backend must be one of {BACKENDS}, got {backend!r}")
        unknown = sorted(set(layers) - set(LAYERS))
        if unknown or not layers:
            raise ValueError(f"compress.layers takes some of {sorted(LAYERS)}, got {list(layers)}")
        if backend == "torchao" and set(layers) != {"linear"}:
            raise ValueError(
                "compress.backend=torchao quantizes Linear layers only: set compress.layers=[linear] "
                f"(got {list(layers)})"
            )
        self.backend, self.layers = backend, list(layers)

    def check(self, model: nn.Module) -> None:
        kinds = tuple(LAYERS[name] for name in self.layers)
        if not any(isinstance(m, kinds) for m in model.modules()):
            raise ValueError(f"compress.layers={self.layers}: the model has no such layer to quantize")

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        if context.device.type != "cpu":
            raise ValueError(
                f"compress={self.name} runs int8 kernels on the CPU only; run with device=cpu (got {context.device})"
            )
        return torch_dynamic_int8(model, self.layers) if self.backend == "torch" else torchao_dynamic_int8(model)

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "backend": self.backend, "layers": self.layers}


def cast_float_inputs(dtype: torch.dtype) -> Callable[[nn.Module, tuple[Any, ...]], tuple[Any, ...]]:
    """A forward pre-hook casting a module's floating-point tensor arguments to ``dtype``; token ids (integers) and the
    rest pass as they are.

    A hook rather than a wrapper module: the model keeps its own type and methods, so a search
    that calls a sequence-to-sequence model's ``encode`` and ``decode`` still finds them.
    """

    def hook(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(a.to(dtype) if isinstance(a, Tensor) and a.is_floating_point() else a for a in args)

    return hook


class Bf16Weights(Method):
    """Every weight stored and computed in bf16 (no autocast, no fine-tuning): the simplest halving of the size."""

    name = "bf16_weights"

    def check(self, model: nn.Module) -> None:
        if any(isinstance(m, nn.LSTM) for m in model.modules()) and not numerics.cpu_bf16_lstm():
            raise ValueError(
                f"compress={self.name}: this CPU has no bf16 LSTM kernel (oneDNN needs AVX-512 BF16 or AMX; torch runs "
                f"{torch.backends.cpu.get_cpu_capability()} here), so an LSTM's bf16 weights cannot "
                "run; use compress=dynamic_int8"
            )

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        halved = copy.deepcopy(model).to(torch.bfloat16).eval()
        halved.register_forward_pre_hook(cast_float_inputs(torch.bfloat16))
        return halved
