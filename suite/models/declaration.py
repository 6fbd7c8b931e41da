"""What a backbone is, declared by the backbone itself, as an attention core declares its capabilities.

A backbone (``suite.types.Backbone``) that declares itself (``suite.types.Declared``) says:

- ``capabilities``: what the built instance can do, from the constants below (an encoder built causal can go
  on step by step; the same class built bidirectional reads the future and cannot);
- ``precision_family``: the family whose measured precision policy applies (``FAMILIES``;
  ``suite.runtime.precision_policy``), so ``precision=auto`` never guesses a model's nature from its class;
- ``state_size(length)``: the numbers a sequence carries from one step to the next after ``length`` positions
  (constant for a recurrence; the key/value cache of ``length`` positions for attention).

A task or job that needs a capability asks with ``require``, which names the model, the role and what is missing.
A backbone that declares nothing (a user's own) is undeclared: it runs in fp32 under ``precision=auto`` and the
record says so, and nothing is refused on its behalf (the structural checks of each task still apply).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from suite.runtime.precision_policy import FAMILIES, UNDECLARED
from suite.types import Declared

PADDING = "padding mask"  # pad_mask honoured: padded positions change no real output
CAUSAL = "causal"  # position t reads positions <= t only
STEP = "step-by-step decoding"  # ``step(x, state)`` goes on from a carried state, equal to the full pass
DECODER = "sequence-to-sequence decoder"  # the model config pairs it with a decoder (``model.decoder``)
BIDIRECTIONAL = "bidirectional"  # reads both ways (classification; never a language model)
ALL = frozenset({PADDING, CAUSAL, STEP, DECODER, BIDIRECTIONAL})


@dataclass(frozen=True)
class Declaration:
    """A backbone's declaration as a record keeps it.

    Args:
        backbone: the class's name.
        family: one of ``FAMILIES``, or ``UNDECLARED``.
        capabilities: sorted capability names (empty when undeclared).
        parameters: trainable parameters of the backbone alone.
        state_numbers: numbers per sequence carried between steps after ``at_length`` positions (None: undeclared).
        at_length: the length ``state_numbers`` is given at.
    """

    backbone: str
    family: str
    capabilities: tuple[str, ...]
    parameters: int
    state_numbers: int | None
    at_length: int

    def fields(self) -> dict[str, object]:
        return {
            "backbone": self.backbone,
            "family": self.family,
            "capabilities": list(self.capabilities),
            "parameters": self.parameters,
            "state_numbers": self.state_numbers,
            "state_at_length": self.at_length,
        }


def check(backbone: nn.Module) -> None:
    """A ValueError naming the backbone when what it declares is not in the contract's vocabulary."""
    if not isinstance(backbone, Declared):
        return
    name = type(backbone).__name__
    unknown = set(backbone.capabilities) - ALL
    if unknown:
        raise ValueError(f"backbone {name} declares unknown capabilities {sorted(unknown)}; known: {sorted(ALL)}")
    if backbone.precision_family not in FAMILIES:
        raise ValueError(
            f"backbone {name} declares precision family {backbone.precision_family!r}; known: {list(FAMILIES)}"
        )


def declare(backbone: nn.Module, length: int = 1024) -> Declaration:
    """What ``backbone`` declares (its family, capabilities and state size at ``length``), with its parameters."""
    check(backbone)
    parameters = sum(p.numel() for p in backbone.parameters() if p.requires_grad)
    if not isinstance(backbone, Declared):
        return Declaration(type(backbone).__name__, UNDECLARED, (), parameters, None, length)
    return Declaration(
        type(backbone).__name__,
        backbone.precision_family,
        tuple(sorted(backbone.capabilities)),
        parameters,
        int(backbone.state_size(length)),
        length,
    )


def require(backbone: nn.Module, needs: set[str] | frozenset[str], role: str, model: str | None = None) -> None:
    """A ValueError naming the model, the role and what it lacks, when a declared ``backbone`` cannot serve ``role``.

    An undeclared backbone is not refused here: nothing is known of it, and the role's own structural checks apply.
    """
    if not isinstance(backbone, Declared):
        return
    check(backbone)
    missing = set(needs) - set(backbone.capabilities)
    if missing:
        who = f"model {model!r} ({type(backbone).__name__})" if model else f"backbone {type(backbone).__name__}"
        raise ValueError(
            f"{who} cannot serve the {role}: it lacks {', '.join(sorted(missing))} "
            f"(it declares: {', '.join(sorted(backbone.capabilities)) or 'nothing'})"
        )
