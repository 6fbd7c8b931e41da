"""The floating-point environment and the precision of a run: part of every measurement.

Two settings decide how fast the same arithmetic runs on a CPU, so every run sets them and
every record says what they were:

- **Denormals flushed to zero.** A recurrent model read at its last state passes gradients
  that vanish with distance through the subnormal range, where x86 arithmetic is about 100x
  slower; whether a run met them depended on the data, the length and the process (a library
  built with ``-ffast-math`` sets the flag for the whole process when loaded). Flushing makes
  speed a property of the model again. The state is probed, not assumed: a parallel
  multiplication of a subnormal must give exact zeros on every worker thread.
- **Precision.** ``auto`` is bf16 autocast where the hardware has bf16 matrix units (AMX on the
  CPU, bf16-capable CUDA devices) and fp32 elsewhere; ``fp32`` and ``bf16`` force one. A CPU with
  AVX-512 BF16 but no AMX stays in fp32: measured on an AMD EPYC of that kind, autocast made the
  suite's small models slower (the 8x8-digits ViT 2.9x, the 128-wide encoder 1.1x; the casts
  cost more than the arithmetic saves) and only the standard size (256 wide, 4 layers) faster
  (1.3x on two threads). ``trainer.precision=bf16`` still asks for it there.
"""
from __future__ import annotations

from contextlib import nullcontext
from functools import cache
from typing import Any, ContextManager

import torch

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
    """Whether bf16 matrix arithmetic has its own units on ``device`` (AMX tiles on a CPU; AVX-512 BF16 alone does not count)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    return device.type == "cpu" and cpu_bf16_kind() == "amx"


def resolve_precision(precision: str, device: torch.device) -> str:
    """'auto' -> 'bf16' where bf16 is fast on ``device``, else 'fp32'; 'fp32'/'bf16' as given."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "auto":
        return "bf16" if fast_bf16(device) else "fp32"
    return precision


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
