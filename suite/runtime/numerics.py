"""The floating-point environment and the precision of a run: part of every measurement.

Two settings decide how fast the same arithmetic runs on a CPU, so every run sets them and
every record says what they were:

- **Denormals flushed to zero.** A recurrent model read at its last state passes gradients
  that vanish with distance through the subnormal range, where x86 arithmetic is about 100x
  slower; whether a run met them depended on the data, the length and the process (a library
  built with ``-ffast-math`` sets the flag for the whole process when loaded). Flushing makes
  speed a property of the model again. The state is probed, not assumed: a parallel
  multiplication of a subnormal must give exact zeros on every worker thread.
- **Precision.** ``auto`` picks what the device was measured to run faster for the precision family the
  model's backbone declares (``choose``; the table and its measurements are ``suite.runtime.precision_policy``;
  ``python -m suite.tools.precision_check`` re-measures every family on a new machine). The record keeps the choice
  and its reason in ``precision`` and ``precision_reason``. A backbone that declares no family runs in fp32
  ("undeclared family").
  ``fp32`` and ``bf16`` force one on any device.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache
from typing import Any, ContextManager

import torch
from torch import nn

from suite.runtime import precision_policy as policy

PRECISIONS = ("auto", "fp32", "bf16")
TINY = 1e-39  # subnormal in fp32 (the smallest normal is ~1.18e-38)


def denormals_flushed() -> bool:
    """True when subnormal floats read and compute as zero on every intra-op thread.

    The probe is large enough to be split across the thread pool, so a worker thread that
    kept the default floating-point mode would leave non-zeros.
    """
    probe = torch.full((1 << 18,), TINY)
    return int((probe * 3.0).count_nonzero()) == 0


def set_flush_denormals(on: bool) -> bool:
    """Flush denormals to zero (or stop); returns the probed state afterwards.

    Call it before the first parallel work where possible: thread pools created later inherit
    the mode. Where the CPU does not support it (non-x86), the probe says False.
    """
    torch.set_flush_denormal(on)
    return denormals_flushed()


@cache  # the hardware does not change; the trainer asks at every step through resolve_precision
def cpu_bf16_kind() -> str | None:
    """The CPU's fast bf16 unit ('amx' or 'avx512_bf16'), or None when it has none."""
    if getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)():
        return "amx"
    if getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)():
        return "avx512_bf16"
    return None


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matrix arithmetic has its own units on ``device`` (AMX tiles on a CPU; AVX-512 BF16 alone does not
    count)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    return device.type == "cpu" and cpu_bf16_kind() == "amx"


@cache
def cpu_int8_dot() -> bool:
    """Whether the CPU has int8 dot-product instructions (AVX-512 VNNI, AVX-VNNI or AMX int8), from Linux's
    /proc/cpuinfo flags.

    Without them int8 kernels multiply u8 by s8 with a pairwise sum that saturates at 16 bits
    (x86's vpmaddubsw), which ONNX Runtime's int8 graphs hit unless their weights use 7 bits."""
    try:
        flags = next((line for line in open("/proc/cpuinfo", encoding="utf-8") if line.startswith("flags")), "").split()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


@cache  # the kernel library does not change within a process
def cpu_bf16_lstm() -> bool:
    """Whether torch's CPU LSTM runs under bf16 autocast here: oneDNN has a bf16 LSTM only with AVX-512 BF16 or AMX,
    and elsewhere (an AVX2-only EPYC) an unpacked ``nn.LSTM`` under autocast fails to build its primitive. Probed, not
    assumed."""
    lstm = nn.LSTM(8, 8, batch_first=True)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
            lstm(torch.zeros(1, 2, 8))
    except RuntimeError:
        return False
    return True


@dataclass(frozen=True)
class Choice:
    """A resolved precision ('fp32' or 'bf16') and why it was chosen, as the record keeps them."""

    precision: str
    reason: str

    def fields(self) -> dict[str, str]:
        return {"precision": self.precision, "precision_reason": self.reason}


def device_kind(device: torch.device) -> str:
    """The policy's name for ``device``: 'cuda' (or 'cuda without bf16'), or a CPU's bf16 unit ('amx', 'avx512_bf16',
    'none')."""
    if device.type == "cuda":
        return policy.CUDA if fast_bf16(device) else policy.CUDA_NO_BF16
    return cpu_bf16_kind() or policy.NO_BF16_UNIT


def choose(precision: str, device: torch.device, model: nn.Module | None = None) -> Choice:
    """The precision a run uses on ``device`` for ``model``: under 'auto', the measured policy of the family its
    backbone declares (``suite.runtime.precision_policy``); fp32 for a model that declares none."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "auto":
        return Choice(precision, f"set: precision={precision}")
    kind, family = device_kind(device), policy.family_of(model)
    if family is None or family == policy.UNDECLARED:
        return Choice("fp32", f"auto: {policy.UNDECLARED} (the backbone declares no precision family): fp32")
    rule = policy.rule(kind, family)
    why = rule.measured or f"not measured for this family on {kind}: fp32 until `make precision-check` measures it"
    if rule.measured is None and rule.precision == "bf16":
        why = "not measured per family: a bf16-capable CUDA device"
    return Choice(rule.precision, f"auto: {family} on {kind}: {why}")


def resolve_precision(precision: str, device: torch.device, model: nn.Module | None = None) -> str:
    """'auto' -> what ``choose`` picks for ``model`` on ``device``; 'fp32'/'bf16' as given."""
    return choose(precision, device, model).precision


def autocast(precision: str, device: torch.device) -> ContextManager[Any]:
    """bf16 autocast for 'bf16' (weights and optimizer stay fp32), nothing for 'fp32'."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    if precision != "fp32":
        raise ValueError(f"resolve the precision first: got {precision!r}")
    return nullcontext()


def describe(device: torch.device, flushed: bool | None = None) -> dict[str, Any]:
    """What a record says about the floating-point environment of the process (``flushed``: a probe already taken)."""
    if flushed is None and device.type == "cpu":
        flushed = denormals_flushed()
    return {
        "flush_denormals": flushed if device.type == "cpu" else None,
        "fast_bf16": fast_bf16(device),
        "cpu_bf16_unit": cpu_bf16_kind(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def timed_precisions(device: torch.device) -> list[str]:
    """The precisions a benchmark times on ``device``: fp32, and bf16 where the hardware has bf16 instructions at all.

    Without them (an AVX2-only CPU) every bf16 product is converted in software: a 2048-square bf16
    matmul ran at 1.3 GFLOP/s on such an EPYC against 89 in fp32, so a bf16 point at the standard
    size would take minutes a step and measure the emulation, not the model."""
    if device.type == "cuda":
        return ["fp32", "bf16"] if torch.cuda.is_bf16_supported(including_emulation=False) else ["fp32"]
    return ["fp32", "bf16"] if cpu_bf16_kind() is not None else ["fp32"]


if (
    __name__ == "__main__"
):  # make bench asks which precisions its MFU points time here: `python -m suite.runtime.numerics --timed`
    import sys

    here = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(
        ",".join(timed_precisions(here))
        if sys.argv[1:] == ["--timed"]
        else describe(here) | {"bf16_lstm": cpu_bf16_lstm(), "int8_dot": cpu_int8_dot()}
    )
