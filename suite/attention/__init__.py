"""Attention cores: one variant per file, one signature (the contract is in ``suite.attention.core``).

A core maps per-head queries, keys and values to per-head outputs::

    core(q: (B, H, Lq, Dh), k: (B, H, Lk, Dh), v: (B, H, Lk, Dh),
         pad_mask: (B, Lk) bool | None, causal: bool) -> (B, H, Lq, Dh)

and is injected into the attention layer as a factory (a Hydra ``_partial_`` config) that the
layer calls with the sizes a variant may need (``n_heads``, ``head_dim``, ``max_len``). Each
core declares its ``capabilities``; a layer that needs one it lacks refuses it at build time.
A new variant is one file here and one config in ``conf/model/attention/``.
"""

from suite.attention.core import AttentionCore, implied_weights, require
from suite.attention.full import FullAttention, attention_weights

__all__ = ["AttentionCore", "FullAttention", "attention_weights", "implied_weights", "require"]
