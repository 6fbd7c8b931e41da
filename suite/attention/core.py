"""The attention-core contract: sizes at construction, declared capabilities, shared masking helpers.

Every core is built by the attention layer as ``factory(n_heads=H, head_dim=Dh, max_len=L | None)``
(a Hydra ``_partial_`` holds the variant's own settings) and maps per-head tensors::

    core(q: (B, H, Lq, Dh), k: (B, H, Lk, Dh), v: (B, H, Lk, Dh),
         pad_mask: (B, Lk) bool | None, causal: bool) -> (B, H, Lq, Dh)

A core says what it can do in ``capabilities``; a layer that needs more refuses it at build
time (``require``), with the variant and the missing capability named.

Generating text one position at a time goes through ``decode_step``: the decoding state
(the key/value cache of full attention, the running sums of linear attention, the window of
local attention) belongs to the core, so a layer never knows which kind it holds.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from suite.types import State

PADDING = "padding mask"  # honours pad_mask: padded keys change no real output
CAUSAL = "causal"  # causal=True: query i sees keys <= i only
CROSS = "cross-attention"  # keys from another sequence (Lq != Lk, no causal alignment)
CACHE = "cached decoding"  # queries that are the last Lq of Lk keys (causal, aligned to the end)
ALL = frozenset({PADDING, CAUSAL, CROSS, CACHE})


class AttentionCore(nn.Module):
    """Base of every attention core.

    Args:
        dropout: dropout on the attention weights while training (where a variant has weights).
        n_heads: heads H of the layer that owns the core.
        head_dim: per-head width Dh.
        max_len: longest sequence the layer will see (None: not known); variants with a fixed
            length (linformer) need it, the others ignore it.
    """

    name: str = "core"
    capabilities: frozenset[str] = frozenset()

    def __init__(
        self, dropout: float = 0.0, n_heads: int | None = None, head_dim: int | None = None, max_len: int | None = None
    ) -> None:
        super().__init__()
        self.dropout = dropout
        self.n_heads, self.head_dim, self.max_len = n_heads, head_dim, max_len

    def state_size(self, length: int) -> int:
        """Numbers per sequence that ``decode_step`` carries after ``length`` positions: by default the key/value
        cache, 2 H Dh a position (a core with a smaller state overrides it, with its ``decode_step``)."""
        return 2 * self.sizes()[0] * self.sizes()[1] * length

    def sizes(self) -> tuple[int, int]:
        """(H, Dh), which a layer gives at construction; a ValueError naming the variant when it did not."""
        if self.n_heads is None or self.head_dim is None:
            raise ValueError(f"attention variant {self.name!r} was built without n_heads and head_dim")
        return self.n_heads, self.head_dim

    def decode_step(self, q: Tensor, k: Tensor, v: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions q, k, v (B, H, t, Dh) after those in ``state`` ({} at the start) -> (outputs (B, H, t, Dh), the
        state after them).

        The default is the key/value cache: every past key and value is kept (the state grows
        with the text) and the new queries attend to all of them, causally, aligned to the end,
        so it serves any core that can do cached decoding. A core with a smaller state (linear:
        running sums; local: the last window) overrides it.
        """
        require(self, {CACHE}, "step-by-step decoding")
        if state:
            k, v = torch.cat([state["k"], k], dim=2), torch.cat([state["v"], v], dim=2)  # (B, H, past + t, Dh)
        return self(q, k, v, causal=q.size(-2) > 1), {"k": k, "v": v}


def require(core: nn.Module, needs: set[str] | frozenset[str], role: str) -> None:
    """Raise a ValueError naming the variant and what it lacks when ``core`` cannot serve ``role``."""
    has = getattr(core, "capabilities", frozenset())
    missing = set(needs) - set(has)
    if missing:
        name = getattr(core, "name", type(core).__name__)
        raise ValueError(
            f"attention variant {name!r} cannot serve the {role}: it lacks {', '.join(sorted(missing))} "
            f"(it supports: {', '.join(sorted(has)) or 'nothing'})"
        )


def positive_int(value: object, what: str, variant: str, least: int = 1) -> int:
    """``value`` as an int >= ``least`` (1: positive, 0: non-negative), else a ValueError naming the setting and the
    variant."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        kind = "a positive" if least == 1 else "a non-negative" if least == 0 else f"an >= {least}"
        raise ValueError(f"attention variant {variant!r}: {what} must be {kind} integer, got {value!r}")
    return value


def sparse_reach(variant: str, setting: str, max_len: int | None, reaches_all: bool, most: int | None) -> None:
    """A ValueError at build time when a sparse pattern reaches every key of the longest sequence.

    Such a pattern is full attention under another name, so a table row or a speed point labelled
    with the variant would measure something else.
    ``most`` is the largest ``setting`` that stays sparse (None: none does at this length).
    """
    if max_len is None or not reaches_all:
        return
    fix = f"a {setting} of at most {most}" if most is not None else f"a longer task or a smaller {setting}"
    raise ValueError(
        f"attention variant {variant!r}: at its {setting} every query reaches every key of the longest "
        f"sequence ({max_len} positions), so it would compute full attention under its own name; use {fix}, "
        "or model/attention=full"
    )


def self_attention_only(core: AttentionCore, q: Tensor, k: Tensor, causal: bool) -> None:
    """For variants that serve self-attention only: one length for queries and keys, and causal only if declared."""
    if q.size(-2) != k.size(-2):
        raise ValueError(
            f"attention variant {core.name!r} needs queries and keys of one length (self-attention), "
            f"got {q.size(-2)} and {k.size(-2)}"
        )
    if causal and CAUSAL not in core.capabilities:
        raise ValueError(f"attention variant {core.name!r} has no causal mode")


def masked_softmax(scores: Tensor, allowed: Tensor) -> Tensor:
    """Softmax over the last dim where ``allowed`` (broadcastable bool); a row with nothing allowed
    stays finite (uniform), so padded queries never turn into NaN that would spread."""
    return scores.masked_fill(~allowed, torch.finfo(scores.dtype).min).softmax(dim=-1)


def pad_length(x: Tensor, multiple: int, dim: int = 2, value: float = 0.0) -> Tensor:
    """Pad ``x`` at the end of ``dim`` to a multiple of ``multiple``."""
    extra = -x.size(dim) % multiple
    if not extra:
        return x
    shape = list(x.shape)
    shape[dim] = extra
    return torch.cat([x, x.new_full(shape, value)], dim=dim)


def key_padding(pad_mask: Tensor | None, b: int, length: int, device: torch.device) -> Tensor:
    """The (B, L) pad mask, all False when None."""
    return pad_mask if pad_mask is not None else torch.zeros(b, length, dtype=torch.bool, device=device)


def implied_weights(
    core: nn.Module, q: Tensor, k: Tensor, pad_mask: Tensor | None = None, causal: bool = False
) -> Tensor:
    """The weights W (B, H, Lq, Lk) with core(q, k, v) = W v, for a core linear in its values (every variant here).

    Found from the core itself, not from a drawing of its pattern: values of width Dh carry Dh
    unit vectors at a time (value j + d is 1 in channel d), so each call reads Dh columns of W.
    For softmax-style cores the rows are distributions; a key a query may not use gets exactly 0.
    Calls ``core.forward`` (no hooks), without gradients.
    """
    b, h, lk, d = k.shape
    columns = []
    with torch.no_grad():
        for start in range(0, lk, d):
            n = min(d, lk - start)
            v = torch.zeros(b, h, lk, d, dtype=q.dtype, device=q.device)
            v[:, :, start + torch.arange(n), torch.arange(n)] = (
                1.0  # key start + c carries the unit vector of channel c
            )
            columns.append(core.forward(q, k, v, pad_mask=pad_mask, causal=causal)[..., :n])  # (B, H, Lq, n)
    return torch.cat(columns, dim=-1)  # (B, H, Lq, Lk)
