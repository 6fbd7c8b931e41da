"""Every attention variant as a layer builds it: from its config in ``conf/model/attention/`` (sizes
scaled down for pictures and tests where asked), and the keys each query may use.
"""

from __future__ import annotations

from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from suite.attention.core import implied_weights
from suite.runtime.paths import PROJECT_ROOT

CONF = PROJECT_ROOT / "conf" / "model" / "attention"
HEADS, HEAD_DIM = 4, 32  # the layer of the benchmark's model: width 128, 4 heads
# Sizes that show each structure at L = 128 (a window or block of 64 would cover half of it).
SMALL: dict[str, dict[str, int]] = {
    "local": {"window": 8},
    "longformer": {"window": 8, "n_global": 4},
    "bigbird": {"block": 8, "window": 1, "n_global": 1, "n_random": 2},
    "linear": {"chunk": 16},
    "performer": {"n_features": 64, "chunk": 16},
    "reformer": {"n_buckets": 8, "n_rounds": 2, "chunk": 8},
    "linformer": {"proj_len": 16},
    "nystrom": {"n_landmarks": 8},
}


def variant_names() -> list[str]:
    """Every attention variant with a config."""
    return sorted(p.stem for p in CONF.glob("*.yaml"))


def config(name: str, small: bool) -> dict:
    """The variant's config, with the ``SMALL`` sizes where asked."""
    return OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml")) | (SMALL.get(name, {}) if small else {})


def build(
    name: str, length: int, small: bool = True, heads: int = HEADS, head_dim: int = HEAD_DIM, **settings: Any
) -> torch.nn.Module:
    """The variant as a layer builds it: its config's partial (``SMALL`` sizes where asked, then ``settings``) called
    with the layer's sizes."""
    return instantiate(config(name, small) | settings)(n_heads=heads, head_dim=head_dim, max_len=length).eval()


def key_pattern(core: torch.nn.Module, length: int, causal: bool = False, seed: int = 0) -> torch.Tensor:
    """(L, L) bool, True where query i uses key j (head 0; a random input, the same for every variant)."""
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, HEADS, length, HEAD_DIM, generator=generator) for _ in range(2))
    return implied_weights(core, q, k, causal=causal)[0, 0] != 0


def settings(name: str, small: bool) -> str:
    """The settings drawn ('window=8, n_global=4')."""
    return ", ".join(f"{k}={v}" for k, v in config(name, small).items() if not k.startswith("_") and k != "dropout")
