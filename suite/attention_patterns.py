"""Which keys each query may use, for every attention variant: a PNG each, probed from the variant itself.

    python -m suite.attention_patterns                       # L = 128, the settings scaled down (SMALL)
    python -m suite.attention_patterns --length 1024 --as-configured

Each config in ``conf/model/attention/`` is built as a layer builds it (its settings, the layer's
heads and head width) and called on random queries and keys. At the default L = 128 a window of
64 would cover nearly everything, so the sizes are scaled down (``SMALL``, named in each title);
``--as-configured`` keeps the configs' own. The variant's its implied weights
(``suite.attention.core.implied_weights``: the matrix W with core(q, k, v) = W v) are nonzero
exactly where a query uses a key. Nothing is redrawn by hand, so the picture is the code's own
pattern: a band for ``local``, the band with global rows and columns for ``longformer``, blocks for
``bigbird``, every key for the kernel and low-rank variants (``linear``, ``performer``,
``linformer``, ``nystrom``), and, for ``reformer``, the buckets of this random input (its pattern
follows the content). Variants with a causal mode get a second panel.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from suite.attention.core import CAUSAL, implied_weights
from suite.datadir import PROJECT_ROOT

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


def build(name: str, length: int, small: bool = True, heads: int = HEADS, head_dim: int = HEAD_DIM, **settings: Any) -> torch.nn.Module:
    """The variant as a layer builds it: its config's partial (``SMALL`` sizes where asked, then ``settings``) called with the layer's sizes."""
    return instantiate(config(name, small) | settings)(n_heads=heads, head_dim=head_dim, max_len=length).eval()


def key_pattern(core: torch.nn.Module, length: int, causal: bool = False, seed: int = 0) -> torch.Tensor:
    """(L, L) bool, True where query i uses key j (head 0; a random input, the same for every variant)."""
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, HEADS, length, HEAD_DIM, generator=generator) for _ in range(2))
    return implied_weights(core, q, k, causal=causal)[0, 0] != 0


def settings(name: str, small: bool) -> str:
    """The settings drawn ('window=8, n_global=4')."""
    return ", ".join(f"{k}={v}" for k, v in config(name, small).items() if not k.startswith("_") and k != "dropout")


def draw(name: str, length: int, out: Path, small: bool = True) -> Path:
    """One PNG: the pattern (and the causal one, where the variant has that mode), with the share of pairs used."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no display

    core = build(name, length, small)
    modes = [False, True] if CAUSAL in core.capabilities else [False]
    fig = Figure(figsize=(4.6 * len(modes), 5.0))
    for ax, causal in zip(fig.subplots(1, len(modes), squeeze=False)[0], modes):
        pattern = key_pattern(core, length, causal)
        ax.imshow(pattern.numpy(), cmap="Greys", interpolation="nearest", vmin=0, vmax=1)
        ax.set_title(f"{'causal' if causal else 'encoder'}: {pattern.float().mean().item():.1%} of pairs", fontsize=9)
        ax.set_xlabel("key position")
        ax.set_ylabel("query position")
    fig.suptitle(f"{name}: keys each query uses (L={length}, head 0)\n{settings(name, small) or 'no settings'}", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=max(100, length // 128 * 100))  # every position at least ~3 pixels wide
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=128, help="sequence length L")
    parser.add_argument("--as-configured", action="store_true", help="the configs' own sizes, not SMALL")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "results" / "attention_patterns")
    parser.add_argument("--variants", nargs="*", default=None, help="names (default: every config)")
    args = parser.parse_args(argv)
    for name in args.variants or variant_names():
        print(f"wrote {draw(name, args.length, args.out / f'{name}.png', small=not args.as_configured)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
