"""One colour scheme for every figure: a hue a model family, a shade of it a model.

The families a reader compares: **attention variants** (the Transformer with each attention core, the ViT), **classic
recurrent** (RNN, LSTM, GRU, BiLSTM: torch's recurrent cells), **modern recurrent** (minGRU, minLSTM, Mamba, S4D, the
gated convolution, and any later backbone that declares a scan or a convolution) and **other** (a baseline with no
backbone, such as Lead-k, or a backbone that declares nothing). A run's family is what its model says it is: the
backbone's declaration the record keeps (``ResultRecord.declaration['family']``), else an attention node in its
config, else the ``precision_family`` its backbone class declares (records from before declarations were kept),
never its name.

Blues and purples are attention, reds and oranges classic recurrence, greens modern recurrence, greys the rest; a
model (``model_id``: 'lstm', 'transformer-local') keeps its shade in every figure of a report, its precision is the
line's style (solid fp32, dashed bf16) and its label says it.
"""

from __future__ import annotations

import colorsys
import functools
import importlib
from dataclasses import dataclass

from matplotlib.colors import to_hex, to_rgb

from suite.runtime.names import model_id
from suite.runtime.precision_policy import ATTENTION as ATTENTION_CORES
from suite.runtime.precision_policy import CONVOLUTION, RECURRENT_CELLS, SCAN
from suite.runtime.record import ResultRecord

ATTENTION = "attention variants"
CLASSIC = "classic recurrent"
MODERN = "modern recurrent"
OTHER = "other"
FAMILIES = (ATTENTION, CLASSIC, MODERN, OTHER)
"""The families in the order figures and tables list them."""

OF_DECLARED = {ATTENTION_CORES: ATTENTION, RECURRENT_CELLS: CLASSIC, SCAN: MODERN, CONVOLUTION: MODERN}
"""A backbone's declared precision family (``suite.runtime.precision_policy.FAMILIES``) -> the report's family."""

SHADES = {
    ATTENTION: ("#1f5fa8", "#6a3d9a", "#4f9fd8", "#9e7cc9", "#08306b", "#3f8f9f", "#7f8fdf", "#b07aa1", "#2b4f7f"),
    CLASSIC: ("#d95f02", "#c0392b", "#f2a541", "#8c4a2f", "#e7777a"),
    MODERN: (
        "#1b9e77",
        "#66a61e",
        "#006d2c",
        "#a6c64c",
        "#35b0a0",
        "#4c7a34",
        "#00441b",
        "#7fbc41",
        "#238b45",
        "#5ab4ac",
    ),
    OTHER: ("#555555", "#999999", "#333333"),
}
"""Each family's shades, the most telling first: a family's k-th model (by name) gets its k-th shade."""

LINESTYLES = {"fp32": "-", "bf16": "--"}
MARKERS = "os^Dv<>pP*Xh"


@functools.cache
def family_of_target(target: str) -> str | None:
    """The report's family of the backbone class ``target`` names (None: not importable, or it declares none)."""
    module, _, name = target.rpartition(".")
    try:
        declared = getattr(importlib.import_module(module), name).precision_family
    except (ImportError, AttributeError, ValueError):
        return None
    return OF_DECLARED.get(declared)


def model_family(r: ResultRecord) -> str:
    """The family a run's model belongs to (``FAMILIES``), from what the model declares, never its name."""
    declared = OF_DECLARED.get((r.declaration or {}).get("family"))
    if declared:
        return declared
    model = r.config.get("model") or {}
    if model.get("attention") is not None:
        return ATTENTION
    target = (model.get("backbone") or {}).get("_target_")
    return (family_of_target(target) if target else None) or OTHER


def precision(r: ResultRecord) -> str:
    """The precision a run computed in ('fp32' for a record from before the setting: those ran fp32)."""
    return r.precision or "fp32"


def identity(r: ResultRecord) -> str:
    """What keeps one colour in every figure: the model, with its attention core where that is not full attention."""
    return model_id(r.model, r.attention)


def lighter(colour: str, step: int) -> str:
    """``colour`` ``step`` notches lighter (a second size or budget of one model, in one panel)."""
    if step == 0:
        return colour
    h, lightness, s = colorsys.rgb_to_hls(*to_rgb(colour))
    return to_hex(colorsys.hls_to_rgb(h, min(0.85, lightness + 0.14 * step), s))


@dataclass(frozen=True)
class Palette:
    """The colour of every model of a report: built from all its records, so every figure agrees."""

    colours: dict[str, str]
    families: dict[str, str]

    @classmethod
    def of(cls, records: list[ResultRecord]) -> Palette:
        seen: dict[str, set[str]] = {}
        for r in records:
            seen.setdefault(identity(r), set()).add(model_family(r))
        # a model some records declare and others (older, or hand-made) do not: what the declaring ones say
        families = {m: min(fs, key=FAMILIES.index) for m, fs in seen.items()}
        colours = {}
        for family in FAMILIES:
            members = sorted(m for m, f in families.items() if f == family)
            shades = SHADES[family]
            for k, member in enumerate(members):
                colours[member] = lighter(shades[k % len(shades)], k // len(shades))
        return cls(colours, families)

    def colour(self, r: ResultRecord) -> str:
        return self.colours.get(identity(r), SHADES[OTHER][0])

    def family(self, r: ResultRecord) -> str:
        return self.families.get(identity(r), model_family(r))


def order(r: ResultRecord) -> tuple[int, str]:
    """A sort key: family (``FAMILIES``' order), then the model."""
    return FAMILIES.index(model_family(r)), identity(r)
