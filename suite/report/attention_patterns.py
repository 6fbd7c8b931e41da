"""Which keys each query may use, for every attention variant: a PNG each, probed from the variant itself.

    python -m suite.report.attention_patterns                       # L = 128, the settings scaled down (SMALL)
    python -m suite.report.attention_patterns --length 1024 --as-configured

Each config in ``conf/model/attention/`` is built as a layer builds it (its settings, the layer's
heads and head width) and called on random queries and keys. At the default L = 128 a window of
64 would cover nearly everything, so the sizes are scaled down (``suite.attention.catalog.SMALL``, named in each title);
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

from suite.attention.catalog import build, key_pattern, settings, variant_names
from suite.attention.core import CAUSAL
from suite.runtime.paths import PROJECT_ROOT


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
    fig.suptitle(
        f"{name}: keys each query uses (L={length}, head 0)\n{settings(name, small) or 'no settings'}", fontsize=9
    )
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
