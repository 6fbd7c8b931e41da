"""Attention maps of a trained model: capture every layer's weights on one example, draw them with its tokens.

``captured`` hooks every attention core of a model; while it is open, each call records the
core's implied weights (``suite.attention.core.implied_weights``: W with core(q, k, v) = W v), so
the maps come from whatever variant the model was trained with, not from a re-derivation of
softmax. ``draw`` writes one PNG per kind of attention (encoder self-attention, decoder
self-attention, cross-attention), a panel per layer averaged over heads, the tokens on the axes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch
from torch import Tensor, nn

from suite.attention.core import implied_weights
from suite.models.transformer import MultiHeadAttention
from suite.types import Readable

Maps = dict[str, Tensor]  # module name ('backbone.layers.0.self_attn') -> weights (H, Lq, Lk) of the first example
KINDS = {"self": "encoder self-attention", "decoder_self": "decoder self-attention", "cross": "cross-attention"}


@contextmanager
def captured(model: nn.Module) -> Iterator[Maps]:
    """While open, every attention core of ``model`` records its implied weights (first example, on the CPU) under its
    layer's name."""
    maps: Maps = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, MultiHeadAttention):

            def record(core: nn.Module, args: tuple, kwargs: dict, output: Tensor, name: str = name) -> None:
                q, k = args[0], args[1]  # the layer calls core(q, k, v, pad_mask=, causal=)
                maps[name] = (
                    implied_weights(core, q, k, kwargs.get("pad_mask"), kwargs.get("causal", False))[0].float().cpu()
                )

            handles.append(module.core.register_forward_hook(record, with_kwargs=True))
    try:
        yield maps
    finally:
        for handle in handles:
            handle.remove()


def kind(name: str) -> str:
    """'self', 'decoder_self' or 'cross' from a layer's module name."""
    if name.endswith("cross_attn"):
        return "cross"
    return "decoder_self" if name.startswith("decoder") else "self"


def axes(name: str, example: Readable) -> tuple[list[str], list[str]]:
    """(query tokens, key tokens) of a layer's map."""
    return {
        "self": (example.source, example.source),
        "decoder_self": (example.target, example.target),
        "cross": (example.target, example.source),
    }[kind(name)]


def read(model: nn.Module, example: Readable) -> Maps:
    """Run the example once with the model in eval mode and return every layer's weights (H, Lq, Lk)."""
    model.eval()
    with torch.no_grad(), captured(model) as maps:
        example.forward()
    return dict(maps)


def draw(maps: Maps, example: Readable, out_dir: Path, title: str = "") -> list[Path]:
    """One PNG per kind of attention (attention_<kind>.png), a panel per layer (heads averaged), and attention_maps.json
    with the numbers."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no display

    by_kind: dict[str, list[str]] = defaultdict(list)
    for name in maps:
        by_kind[kind(name)].append(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for k, names in by_kind.items():
        queries, keys = axes(names[0], example)
        side = max(4.0, 0.22 * max(len(queries), len(keys)) + 1.5)
        fig = Figure(figsize=(side * len(names), side + 0.6))
        for ax, name in zip(fig.subplots(1, len(names), squeeze=False)[0], names):
            ax.imshow(maps[name].mean(0).numpy(), cmap="viridis", vmin=0.0, aspect="auto")
            ax.set_xticks(range(len(keys)), keys, rotation=90, fontsize=7)
            ax.set_yticks(range(len(queries)), queries, fontsize=7)
            ax.set_title(f"{name} (mean of {maps[name].size(0)} heads)", fontsize=8)
            ax.set_xlabel("key")
            ax.set_ylabel("query" if k != "cross" else "decoder position (token read)")
        fig.suptitle(f"{KINDS[k]}{': ' + title if title else ''}", fontsize=9)
        fig.tight_layout()
        path = out_dir / f"attention_{k}.png"
        fig.savefig(path, dpi=110)
        written.append(path)
    numbers = {
        name: {"queries": axes(name, example)[0], "keys": axes(name, example)[1], "weights": w.mean(0).tolist()}
        for name, w in maps.items()
    }
    path = out_dir / "attention_maps.json"
    path.write_text(json.dumps(numbers) + "\n")
    return [*written, path]
