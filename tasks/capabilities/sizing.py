"""Every model of the capability map at the same size: the width that brings its parameters within 10 % of a target.

Parameters are the backbone's (the mixing layers, their MLPs and norms; not the token embedding and the output map,
which every model shares at a given width and the task's vocabulary decides): the count scaling studies compare
(Kaplan et al. 2020's non-embedding parameters). Each model is built as a language model builds it (causal), at
widths that are multiples of ``STEP``; a width its config cannot take (a head count that does not divide it) is
skipped. The planner runs before any training, and a model that no width brings within the tolerance is refused
then, naming the model, the target and the nearest it reached.

    python -m tasks.capabilities.sizing --targets 100000 400000 --models lstm mamba2 transformer \
        --override mamba2 model.backbone.mixer.head_dim=16
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from typing import Mapping, Sequence

from hydra.errors import InstantiationException

from suite.models.classifier import build_sized, count_parameters
from suite.runtime.compose import composed
from suite.runtime.names import model_overrides

STEP = 8  # widths tried: multiples of 8 (every head count the configs use divides some of them)
WIDTHS = range(STEP, 1024 + 1, STEP)
TOLERANCE = 0.10


@dataclass(frozen=True)
class Sized:
    """A model at a target size: its width, its backbone parameters and how far they are from the target."""

    model: str
    target: int
    d_model: int
    parameters: int

    @property
    def off(self) -> float:
        return self.parameters / self.target - 1


@cache
def backbone_parameters(model: str, d_model: int, overrides: tuple[str, ...] = ()) -> int | None:
    """The causal backbone's trainable parameters at ``d_model``; None where the config cannot take that width.
    ``model``: a config name, or one with its attention core ('transformer-local': ``suite.runtime.names``)."""
    cfg = composed([*model_overrides(model), f"model.d_model={d_model}", *overrides])
    node = cfg.model.backbone
    settings = {"causal": True} if "causal" in node else {}
    if "bidirectional" in node:
        settings["bidirectional"] = False
    try:
        return count_parameters(build_sized(node, 64, **settings))
    except (ValueError, InstantiationException):  # a width the model's heads or blocks do not divide
        return None


def match(model: str, target: int, overrides: Sequence[str] = (), tolerance: float = TOLERANCE) -> Sized:
    """The width whose backbone parameters come nearest ``target``; a ValueError if even that is off by more than
    ``tolerance``. Parameters grow with the width, so the search bisects the widths, then looks at the neighbours."""
    counted = {}

    def count(i: int) -> int | None:
        if i not in counted:
            counted[i] = backbone_parameters(model, WIDTHS[i], tuple(overrides))
        return counted[i]

    low, high = 0, len(WIDTHS) - 1
    while high - low > 1:  # bisect on the widths a model can take (skipping those it refuses)
        mid = (low + high) // 2
        probe = next((j for j in range(mid, high) if count(j) is not None), None)
        if probe is None or count(probe) >= target:
            high = mid if probe is None else probe
        else:
            low = probe
    near = [i for i in range(max(0, low - 2), min(len(WIDTHS), high + 3)) if count(i) is not None]
    if not near:
        raise ValueError(f"capability map: model {model!r} could be built at no width from {STEP} to {WIDTHS[-1]}")
    best = min(near, key=lambda i: abs(count(i) - target))
    sized = Sized(model, target, WIDTHS[best], count(best))
    if abs(sized.off) > tolerance:
        raise ValueError(
            f"capability map: model {model!r} cannot be matched within {tolerance:.0%} of {target:,} parameters: "
            f"the nearest is d_model={sized.d_model} with {sized.parameters:,} ({sized.off:+.1%}); change its config's "
            "depth or expansion, or the target"
        )
    return sized


def plan(
    models: Sequence[str],
    targets: Sequence[int],
    overrides: Mapping[str, Sequence[str]] | None = None,
    tolerance: float = TOLERANCE,
    common: Sequence[str] = (),
) -> list[Sized]:
    """Every model at every target, or a ValueError listing every model that cannot be matched (before any run).
    ``overrides``: a model's own settings for the map (Mamba-2's heads of 16, where its 64 leave too few widths);
    ``common``: every model's (``experiment=capabilities``: its depth of 2 for all)."""
    out, refused = [], []
    for target in targets:
        for model in models:
            try:
                settings = [*common, *(overrides or {}).get(model, ())]
                out.append(match(model, target, settings, tolerance))
            except ValueError as err:
                refused.append(str(err))
    if refused:
        raise ValueError("\n".join(refused))
    return out


def main(argv: list[str] | None = None) -> list[Sized]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", required=True, help="backbone parameters to match")
    parser.add_argument("--models", nargs="+", required=True)
    parser.add_argument("--override", nargs=2, action="append", default=[], metavar=("MODEL", "SETTING"),
                        help="a model's own setting, e.g. mamba2 model.backbone.mixer.head_dim=16")  # fmt: skip
    parser.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = parser.parse_args(argv)
    overrides: dict[str, list[str]] = {}
    for model, setting in args.override:
        overrides.setdefault(model, []).append(setting)
    sized = plan(args.models, args.targets, overrides, args.tolerance)
    print("| model | target | d_model | backbone parameters | off |\n|---|---|---|---|---|")
    for s in sized:
        print(f"| {s.model} | {s.target:,} | {s.d_model} | {s.parameters:,} | {s.off:+.1%} |")
    return sized


if __name__ == "__main__":
    main()
