"""A model family's declared search space: what a trial may change, and the overrides that change it.

A space is a list of parameters (``conf/tune/<family>.yaml``), each one of

    {name: lr, keys: [trainer.optimizer.lr], type: float, low: 1e-4, high: 3e-3, log: true}
    {name: batch, keys: [trainer.batch_size], type: categorical, choices: [32, 64]}
    {name: shape, type: shape, choices: {d128-l2: {model.d_model: 128, ...}, d96-l3: {...}}}

A parameter sets every config key it names (one dropout for the embedding, the layers and the
head); a ``shape`` parameter picks one of several sets of keys (width and depth together), each
held to the default's parameter count by ``suite.tune.shapes``. The space is checked against the
composed config before any training: a key the config lacks is an error naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from omegaconf import DictConfig, ListConfig, OmegaConf

KINDS = ("float", "int", "categorical", "shape")
_MISSING = object()


class SpaceError(ValueError):
    """A search space that is malformed or names what the config lacks."""


@dataclass(frozen=True)
class Param:
    """One searched setting: its Optuna name, the config keys it sets and its range or choices."""

    name: str
    kind: str
    keys: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    sets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # shape: choice -> {key: value}

    def suggest(self, trial: Any) -> Any:
        """The value an Optuna trial asks for (``trial.suggest_*``)."""
        if self.kind == "float":
            return trial.suggest_float(self.name, self.low, self.high, log=self.log)
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        return trial.suggest_categorical(self.name, list(self.choices))

    def assignments(self, value: Any) -> dict[str, Any]:
        """The config keys ``value`` sets: {key: value}."""
        if self.kind == "shape":
            return dict(self.sets[value])
        return {key: value for key in self.keys}

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a point of this parameter's range or choices."""
        if self.kind in ("categorical", "shape"):
            return value in self.choices
        return isinstance(value, (int, float)) and self.low <= value <= self.high

    def all_keys(self) -> list[str]:
        return sorted({k for s in self.sets.values() for k in s}) if self.kind == "shape" else list(self.keys)

    def default(self, cfg: DictConfig) -> Any:
        """The value the composed config already has (None: it has none this parameter can express, e.g. keys of one
        parameter set to different values; a shape: the choice whose keys all match it)."""
        if self.kind != "shape":
            values = {json.dumps(OmegaConf.select(cfg, k)) for k in self.keys}
            return OmegaConf.select(cfg, self.keys[0]) if len(values) == 1 else None
        for choice, keys in self.sets.items():
            if all(OmegaConf.select(cfg, k) == v for k, v in keys.items()):
                return choice
        return None


def parse_param(spec: Mapping[str, Any], where: str) -> Param:
    """One entry of a space file, checked: a clear error naming the entry for a malformed one."""
    spec = dict(spec)
    name, kind = spec.get("name"), spec.get("type")
    if not name or kind not in KINDS:
        raise SpaceError(f"{where}: each parameter needs a name and a type in {KINDS}, got {spec}")
    if kind == "shape":
        sets = {str(c): dict(v) for c, v in dict(spec.get("choices") or {}).items()}
        if len(sets) < 2:
            raise SpaceError(f"{where}: shape parameter {name!r} needs at least two choices, each a set of keys")
        return Param(name, kind, choices=tuple(sets), sets=sets)
    keys = tuple(spec.get("keys") or ())
    if not keys:
        raise SpaceError(f"{where}: parameter {name!r} names no config keys (keys: [...])")
    if kind == "categorical":
        choices = tuple(spec.get("choices") or ())
        if len(choices) < 2:
            raise SpaceError(f"{where}: categorical parameter {name!r} needs at least two choices")
        return Param(name, kind, keys, choices=choices)
    low, high = spec.get("low"), spec.get("high")
    if low is None or high is None or not float(low) < float(high):
        raise SpaceError(f"{where}: parameter {name!r} needs low < high, got low={low}, high={high}")
    return Param(name, kind, keys, float(low), float(high), bool(spec.get("log", False)))


@dataclass(frozen=True)
class Space:
    """The parameters of one family's search."""

    params: tuple[Param, ...]

    @classmethod
    def from_config(cls, specs: ListConfig | list[Any], where: str) -> Space:
        plain = OmegaConf.to_container(specs, resolve=True) if isinstance(specs, (ListConfig, DictConfig)) else specs
        if not isinstance(plain, list) or not plain:
            raise SpaceError(f"{where}: a search space is a non-empty list of parameters, got {plain!r}")
        params = tuple(parse_param(p, f"{where}[{i}]") for i, p in enumerate(plain))
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise SpaceError(f"{where}: parameter names repeat: {names}")
        return cls(params)

    def check_keys(self, cfg: DictConfig, described: str) -> None:
        """Raise ``SpaceError`` naming every key the composed config ``cfg`` lacks (before any training)."""
        missing = [
            k for p in self.params for k in p.all_keys() if OmegaConf.select(cfg, k, default=_MISSING) is _MISSING
        ]
        if missing:
            raise SpaceError(
                f"the search space names {', '.join(missing)}, which the composed config ({described}) lacks: "
                "fix the key in conf/tune/<family>.yaml"
            )

    def suggest(self, trial: Any) -> dict[str, Any]:
        return {p.name: p.suggest(trial) for p in self.params}

    def overrides(self, values: Mapping[str, Any]) -> list[str]:
        """Hydra overrides that set ``values`` (one per config key)."""
        out: dict[str, Any] = {}
        for p in self.params:
            out |= p.assignments(values[p.name])
        return [f"{key}={json.dumps(value)}" for key, value in out.items()]

    def defaults(self, cfg: DictConfig) -> dict[str, Any] | None:
        """The default config as a point of the space (the study's first trial); None when it is not one (a parameter
        cannot express it, or it lies outside a range)."""
        values = {p.name: p.default(cfg) for p in self.params}
        return values if all(v is not None and p.contains(v) for p, v in zip(self.params, values.values())) else None

    def restricted(self, name: str, kept: list[str]) -> Space:
        """This space with shape parameter ``name`` cut to the choices ``kept`` (fewer than two: without it)."""
        if len(kept) < 2:
            return Space(tuple(p for p in self.params if p.name != name))
        params = tuple(
            Param(p.name, p.kind, choices=tuple(kept), sets={c: p.sets[c] for c in kept}) if p.name == name else p
            for p in self.params
        )
        return Space(params)

    def describe(self) -> list[dict[str, Any]]:
        """A plain description, stored with the study so a study of another space is refused."""
        return [
            {"name": p.name, "type": p.kind, "keys": list(p.keys), "low": p.low, "high": p.high, "log": p.log}
            | ({"choices": list(p.choices)} if p.kind == "categorical" else {})
            | ({"choices": {c: dict(s) for c, s in p.sets.items()}} if p.kind == "shape" else {})
            for p in self.params
        ]
