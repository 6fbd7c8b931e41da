"""Attention cores: one variant per file, one signature.

A core maps per-head queries, keys and values to per-head outputs::

    core(q: (B, H, Lq, Dh), k: (B, H, Lk, Dh), v: (B, H, Lk, Dh),
         pad_mask: (B, Lk) bool | None, causal: bool) -> (B, H, Lq, Dh)

and is injected into the attention layer as a zero-argument factory (a Hydra
``_partial_`` config), so a new variant is one file here and one config in
``conf/model/attention/``.
"""
from suite.attention.full import FullAttention, attention_weights

__all__ = ["FullAttention", "attention_weights"]
