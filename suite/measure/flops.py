"""FLOPs of a call (``FlopCounterMode``, with formulas for the fused kernels it misses) and the machine's matmul peak.

The peak is the MFU denominator: square matmuls, warmed up, best of several rounds.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cache
from typing import Callable

import torch

from suite.measure.timing import time_calls
from suite.runtime.device import sync


def flop_mapping() -> dict:
    """Formulas for the fused kernels ``FlopCounterMode`` leaves uncounted: CPU flash attention, oneDNN LSTM, cuDNN
    RNNs."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten

    def forward(q, k, v, *args, out_shape=None, **kwargs) -> int:  # shapes, as FlopCounterMode passes them
        return fc.sdpa_flop_count(q, k, v)

    def backward(grad_out, q, k, v, *args, out_shape=None, **kwargs) -> int:
        return fc.sdpa_backward_flop_count(grad_out, q, k, v)

    def lstm_layer(input, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
        # oneDNN's fused LSTM layer: per token, x @ W_ih^T and h @ W_hh^T (the gates' elementwise
        # work is not counted, as FlopCounterMode counts no elementwise op elsewhere).
        return 2 * math.prod(input[:-1]) * (math.prod(w_ih) + math.prod(w_hh))

    def lstm_layer_backward(input, w_ih, w_hh, *args, out_shape=None, **kwargs) -> int:
        return 2 * lstm_layer(input, w_ih, w_hh)  # gradients of the inputs and of the weights

    def cudnn_rnn(input, weights, *args, out_shape=None, **kwargs) -> int:
        # cuDNN's fused RNN/LSTM/GRU (every layer and direction): each sees every token once per
        # weight matrix (the 2-D entries of the weight list; biases are 1-D).
        return 2 * math.prod(input[:-1]) * sum(math.prod(w) for w in weights if len(w) == 2)

    def cudnn_rnn_backward(input, weights, *args, out_shape=None, **kwargs) -> int:
        return 2 * cudnn_rnn(input, weights)

    return {
        aten._cudnn_rnn: cudnn_rnn,
        aten._cudnn_rnn_backward: cudnn_rnn_backward,
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,
        aten.mkldnn_rnn_layer: lstm_layer,
        aten.mkldnn_rnn_layer_backward: lstm_layer_backward,
    }


def count_flops(fn: Callable[[], object]) -> int:
    """Floating-point operations of one call, from ``torch.utils.flop_counter`` (a multiply-add is 2)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=flop_mapping()) as counter:
        fn()
    return int(counter.get_total_flops())


@dataclass(frozen=True)
class Peak:
    """The machine's attainable matmul FLOP/s: the best of several timed rounds, and every round's figure."""

    flops: float
    rounds: tuple[float, ...]
    size: int
    dtype: str

    @property
    def spread(self) -> float:
        """(best - worst) / best over the rounds: 0 for a peak read the same every time."""
        return (max(self.rounds) - min(self.rounds)) / max(self.rounds)


@cache  # per process, device, size and type: every point of a sweep in one process divides by the same peak
def matmul_peak(
    device: torch.device,
    size: int | None = None,
    dtype: torch.dtype = torch.float32,
    rounds: int = 5,
    round_seconds: float = 0.4,
    warmup_seconds: float = 1.0,
) -> Peak:
    """Square matmuls timed in ``rounds`` rounds after ``warmup_seconds`` of untimed ones; the best round's median is
    the peak.

    The best, not the median of the rounds: the MFU denominator is what the machine can reach, and
    a round that a neighbour or a cold unit slowed says nothing about that. The warm-up matters on
    AMX (one session's 21 points read their bf16 peak anywhere from 336 to 1,053 GFLOP/s when
    timed after two calls); the rounds' spread goes into ``suite.tools.precision_check``'s output.
    """
    size = size or (8192 if device.type == "cuda" else 2048)
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    started = time.perf_counter()
    while time.perf_counter() - started < warmup_seconds:
        a @ b
    sync(device)
    medians = [
        time_calls({"mm": lambda: a @ b}, device, warmup=0, repeats=2, min_seconds=round_seconds)["mm"].median
        for _ in range(rounds)
    ]
    flops = tuple(2 * size**3 / t for t in medians)
    return Peak(max(flops), flops, size, str(dtype).removeprefix("torch."))
