"""Which precision ``precision=auto`` gives each declared model family on each kind of device, and the measurement
behind every entry.

A model's family is what its backbone declares (``suite.types.Declared.precision_family``; the vocabulary is
``FAMILIES``), never guessed from its class. A family with no measurement on a device kind runs in fp32 there, and the
reason says it is unmeasured; a model that declares no family (a user's own backbone) runs in fp32 as
"undeclared family". ``python -m suite.tools.precision_check`` measures one model of every family on the machine at
hand and names any entry its figures contradict.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from suite.types import Declared

ATTENTION = "attention"  # matrix products over the sequence (the Transformer, the ViT)
RECURRENT_CELLS = "recurrent cells"  # torch's nn.RNN / LSTM / GRU kernels
SCAN = "parallel scan"  # gated linear recurrences trained by a scan (minGRU, minLSTM, Mamba)
CONVOLUTION = "convolution"  # a kernel over the sequence, by FFT (S4D) or directly (gated convolution)
FAMILIES = (ATTENTION, RECURRENT_CELLS, SCAN, CONVOLUTION)
UNDECLARED = "undeclared family"

# Device kinds: a CPU's bf16 unit (suite.runtime.numerics.cpu_bf16_kind) or CUDA.
AMX, AVX512_BF16, NO_BF16_UNIT, CUDA, CUDA_NO_BF16 = "amx", "avx512_bf16", "none", "cuda", "cuda without bf16"


@dataclass(frozen=True)
class Rule:
    """The precision a family gets on a device kind, and the measurement that says so (None: unmeasured)."""

    precision: str
    measured: str | None


_NO_UNIT = (
    "bf16 is converted in software without a bf16 unit: a bf16 matmul peaked at 1.3 GFLOP/s against 65 in fp32 on an "
    "AVX2 EPYC (results/tools_epyc_avx2/precision_check.md), where the Transformer trained 0.14x and the GRU 0.27x "
    "the fp32 speed under bf16"
)
_AVX512_FILE = "results/tools_epyc_avx512/precision_check.md"
_AVX512 = {
    ATTENTION: (
        "fp32 kept, though this is contested: on an AVX-512 BF16 EPYC bf16 trained the encoder 1.82x faster at L 256 "
        f"(batch 8) and 1.09x at L 64 (batch 32) ({_AVX512_FILE}), while an earlier torch measured the 8x8-digits "
        "ViT 2.9x and the encoder 1.1x slower; to be re-measured across the bench's sizes before auto moves"
    ),
    RECURRENT_CELLS: (
        "bf16 autocast trained the GRU 0.80x and the RNN 0.59x the fp32 speed on an AVX-512 BF16 EPYC "
        f"({_AVX512_FILE}; the LSTM 1.39x: one policy a family)"
    ),
    SCAN: f"bf16 autocast trained Mamba 0.87x and minGRU 1.19x the fp32 speed on an AVX-512 BF16 EPYC ({_AVX512_FILE})",
    CONVOLUTION: f"bf16 autocast trained S4D 1.01x the fp32 speed on an AVX-512 BF16 EPYC ({_AVX512_FILE}): no gain",
}

POLICY: dict[tuple[str, str], Rule] = {
    (AMX, ATTENTION): Rule("bf16", "the standard encoder trained 1.65x faster under bf16 autocast on an AMX Xeon"),
    (AMX, RECURRENT_CELLS): Rule(
        "fp32", "bf16 autocast trained 0.77x (LSTM), 0.69x (GRU), 0.43x (RNN) the fp32 speed on an AMX Xeon"
    ),
    (AMX, SCAN): Rule("fp32", None),
    (AMX, CONVOLUTION): Rule("fp32", None),
    **{(AVX512_BF16, f): Rule("fp32", why) for f, why in _AVX512.items()},
    **{(NO_BF16_UNIT, f): Rule("fp32", _NO_UNIT) for f in FAMILIES},
    # Not measured per family by this suite: a bf16-capable CUDA device runs every declared family in bf16.
    **{(CUDA, f): Rule("bf16", None) for f in FAMILIES},
    **{(CUDA_NO_BF16, f): Rule("fp32", "this CUDA device has no native bf16 (torch emulates it)") for f in FAMILIES},
}


def family_of(model: nn.Module | None) -> str | None:
    """The one precision family ``model``'s modules declare (its backbone; an encoder-decoder's encoder).

    ``UNDECLARED`` when none declares one, or several do (a hybrid has no single measured policy); None when no model
    is given.
    """
    if model is None:
        return None
    found = {m.precision_family for m in model.modules() if isinstance(m, Declared)}
    return found.pop() if len(found) == 1 else UNDECLARED


def rule(kind: str, family: str | None) -> Rule:
    """The policy's entry for ``family`` on device ``kind``; fp32 for an undeclared or unknown family."""
    return POLICY.get((kind, family or UNDECLARED), Rule("fp32", None))
