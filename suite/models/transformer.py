"""The shared Transformer core: multi-head attention, feed-forward, encoder and decoder layers and stacks.

Self-attention weights are laid out as in ``torch.nn.MultiheadAttention`` (one fused
in-projection), so a layer can be loaded from ``torch.nn.TransformerEncoderLayer`` or
torchvision's ViT and compared number for number; the decoder's cross-attention keeps its query
and key/value projections apart (``CrossAttention``) and loads torch's fused layout by splitting it.
"""

from __future__ import annotations

from typing import Callable, Literal

import torch.nn.functional as F
from torch import Tensor, nn

from suite.attention import FullAttention, require
from suite.attention.core import CACHE, CAUSAL, CROSS, PADDING
from suite.models import declaration
from suite.nn import Dropout
from suite.runtime.precision_policy import ATTENTION
from suite.types import State, prefixed, scoped

AttentionFactory = Callable[..., nn.Module]  # called as factory(n_heads=, head_dim=, max_len=)
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class MultiHeadAttention(nn.Module):
    """Project to H heads, run the injected attention core, merge heads, project out.

    Args:
        d_model: width D (divisible by n_heads).
        n_heads: number of heads H.
        attention: factory for the core (see ``suite.attention``); full softmax by default.
        bias: biases on the projections.
        max_len: longest sequence the layer will see (None: unknown); passed to the core.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        attention: AttentionFactory = FullAttention,
        bias: bool = True,
        max_len: int | None = None,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.projections(d_model, bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.core = attention(n_heads=n_heads, head_dim=d_model // n_heads, max_len=max_len)

    def projections(self, d_model: int, bias: bool) -> None:
        """The in-projection: one fused (D -> 3D) Linear for queries, keys and values."""
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)

    def split(self, x: Tensor) -> Tensor:
        """(B, L, D) -> (B, H, L, D/H)."""
        b, l, d = x.shape
        return x.view(b, l, self.n_heads, d // self.n_heads).transpose(1, 2)

    def project(self, x: Tensor, memory: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """Per-head (B, H, L, Dh) queries, keys and values of x (self-attention; ``CrossAttention`` reads a memory)."""
        if memory is not None:
            raise ValueError("self-attention takes no memory: the decoder's cross-attention is a CrossAttention")
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        return self.split(q), self.split(k), self.split(v)

    def forward(
        self, x: Tensor, pad_mask: Tensor | None = None, memory: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        """x (B, Lq, D), pad_mask over keys (B, Lk), memory (B, Lk, D) | None -> (B, Lq, D)."""
        q, k, v = self.project(x, memory)  # (B, H, L, Dh) each
        return self.attend(q, k, v, pad_mask, causal)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """Per-head q (B, H, Lq, Dh), k and v (B, H, Lk, Dh) -> merged and projected (B, Lq, D)."""
        return self.merge(self.core(q, k, v, pad_mask=pad_mask, causal=causal))

    def merge(self, out: Tensor) -> Tensor:
        """Per-head outputs (B, H, L, Dh) -> merged and projected (B, L, D)."""
        b, h, l, dh = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, l, h * dh))

    def decode_step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """Causal self-attention of new positions x (B, t, D) after those the core's ``state`` holds -> ((B, t, D), the
        new state)."""
        q, k, v = self.project(x, None)  # (B, H, t, Dh)
        out, state = self.core.decode_step(q, k, v, state)
        return self.merge(out), state


class CrossAttention(MultiHeadAttention):
    """Attention of queries x to a memory (a decoder's cross-attention): queries from x, keys and values from the
    memory.

    Its in-projection is two Linear layers, ``q_proj`` (D -> D) and ``kv_proj`` (D -> 2D), not
    slices of one fused weight, so a quantized or pruned copy (whose weight is packed, not a
    tensor to slice) projects them as any Linear. A state dict in torch's fused layout
    (``in_proj.weight`` and ``in_proj.bias``: q, k, v rows) loads too, split on the way in.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        attention: AttentionFactory = FullAttention,
        bias: bool = True,
        max_len: int | None = None,
    ) -> None:
        super().__init__(d_model, n_heads, attention, bias, max_len)
        self.register_load_state_dict_pre_hook(split_fused_projection)

    def projections(self, d_model: int, bias: bool) -> None:
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.kv_proj = nn.Linear(d_model, 2 * d_model, bias=bias)

    def project(self, x: Tensor, memory: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        if memory is None:
            raise ValueError("cross-attention needs a memory to attend to")
        return (self.query(x), *self.memory_kv(memory))

    def memory_kv(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values of memory (B, Lk, D) -> (B, H, Lk, Dh) each; computed once per generation."""
        k, v = self.kv_proj(memory).chunk(2, dim=-1)
        return self.split(k), self.split(v)

    def query(self, x: Tensor) -> Tensor:
        """Queries only: (B, Lq, D) -> (B, H, Lq, Dh)."""
        return self.split(self.q_proj(x))


def split_fused_projection(module: nn.Module, state_dict: dict[str, Tensor], prefix: str, *_: object) -> None:
    """Load-state-dict pre-hook: torch's fused ``in_proj`` (q, k, v rows) becomes ``q_proj`` and ``kv_proj``."""
    for kind in ("weight", "bias"):
        fused = state_dict.pop(f"{prefix}in_proj.{kind}", None)
        if fused is not None:
            d = fused.size(0) // 3
            state_dict[f"{prefix}q_proj.{kind}"], state_dict[f"{prefix}kv_proj.{kind}"] = fused[:d], fused[d:]


class FeedForward(nn.Module):
    """Position-wise Linear(D, F) -> activation -> dropout -> Linear(F, D)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.act = ACTIVATIONS[activation]
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.act(self.linear1(x))))  # (B, L, D)


class Residual(nn.Module):
    """One sublayer with its residual connection, in post-norm (the paper) or pre-norm arrangement."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool, eps: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: Tensor, sublayer: Callable[[Tensor], Tensor]) -> Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in residual + LayerNorm.

    Args:
        d_model, n_heads, d_ff: widths as in the paper.
        dropout: residual and feed-forward dropout.
        activation: 'relu' (the paper) or 'gelu' (BERT, ViT).
        norm_first: pre-norm if True, post-norm (the paper) if False.
        layer_norm_eps: LayerNorm epsilon (1e-5 in torch, 1e-6 in ViT).
        attention: attention-core factory; its own dropout is set there. It must honour padding.
        max_len: longest input (None: unknown), for variants with a fixed length.
        causal: position i attends to positions <= i only (a language model's body); the core must be causal.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        attention: AttentionFactory = FullAttention,
        max_len: int | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attention, max_len=max_len)
        require(
            self.self_attn.core, {PADDING, CAUSAL} if causal else {PADDING}, "causal encoder" if causal else "encoder"
        )
        self.causal = causal
        self.ff = FeedForward(d_model, d_ff, activation, dropout)
        self.attn_block = Residual(d_model, dropout, norm_first, layer_norm_eps)
        self.ff_block = Residual(d_model, dropout, norm_first, layer_norm_eps)

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None -> (B, L, D)."""
        x = self.attn_block(x, lambda h: self.self_attn(h, pad_mask, causal=self.causal))
        return self.ff_block(x, self.ff)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions x (B, t, D) after those in the attention core's ``state`` -> ((B, t, D), the new state)."""
        after: State = {}

        def attend(h: Tensor) -> Tensor:
            out, after["core"] = self.self_attn.decode_step(h, state)
            return out

        x = self.attn_block(x, attend)
        return self.ff_block(x, self.ff), after["core"]


class Encoder(nn.Module):
    """A stack of encoder layers; pre-norm stacks end with a LayerNorm (as GPT-2 and ViT do).

    Implements the ``Backbone`` contract, and with ``causal`` the ``CausalBackbone`` one: a
    GPT-style decoder-only body, decoded step by step with each core's own state.
    Args as ``EncoderLayer``, plus ``n_layers`` and ``init`` (a function applied to the built
    stack, ``suite/models/init.py``; None: torch's defaults).
    """

    def __init__(
        self,
        d_model: int,
        n_layers: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: Literal["relu", "gelu"] = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        attention: AttentionFactory = FullAttention,
        max_len: int | None = None,
        init: Callable[[nn.Module], None] | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        self.d_model, self.causal = d_model, causal
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps, attention, max_len, causal
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if norm_first else nn.Identity()
        if init is not None:  # e.g. suite.models.init.gpt2; None keeps torch's defaults
            init(self)

    precision_family = ATTENTION

    @property
    def capabilities(self) -> frozenset[str]:
        """Causal: reads <= t and goes on step by step through its cores' state; else both ways. A decoder exists for
        the cores that a decoder layer can use (causal, cached, cross-attention)."""
        core = self.layers[0].self_attn.core
        has = set(getattr(core, "capabilities", ()))
        declared = {PADDING} & has
        declared |= {declaration.CAUSAL, declaration.STEP} if self.causal else {declaration.BIDIRECTIONAL}
        if {CAUSAL, CACHE, CROSS} <= has:
            declared.add(declaration.DECODER)
        return frozenset(declared)

    def state_size(self, length: int) -> int:
        """What the cores carry between steps after ``length`` positions (full attention: the key/value cache)."""
        return sum(layer.self_attn.core.state_size(length) for layer in self.layers)

    def forward(self, x: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        """(B, L, D), (B, L) bool | None -> (B, L, D)."""
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.norm(x)

    def step(self, x: Tensor, state: State) -> tuple[Tensor, State]:
        """New positions x (B, t, D) after those in ``state`` ({} at the start) -> ((B, t, D), the new state); causal
        stacks only."""
        if not self.causal:
            raise ValueError("a bidirectional encoder cannot decode step by step: build it with causal=True")
        after: State = {}
        for i, layer in enumerate(self.layers):
            x, mine = layer.step(x, scoped(state, f"{i}."))
            after |= prefixed(mine, f"{i}.")
        return self.norm(x), after


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, then feed-forward;
    each wrapped in residual + LayerNorm. Args as ``EncoderLayer``; the core must also be causal,
    serve cross-attention and cached decoding (generation).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        attention: AttentionFactory = FullAttention,
        max_len: int | None = None,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attention, max_len=max_len)
        self.cross_attn = CrossAttention(d_model, n_heads, attention, max_len=max_len)
        require(self.self_attn.core, {CAUSAL, CACHE}, "decoder's self-attention")
        require(self.cross_attn.core, {CROSS, PADDING}, "decoder's cross-attention")
        self.ff = FeedForward(d_model, d_ff, activation, dropout)
        self.self_block, self.cross_block, self.ff_block = (
            Residual(d_model, dropout, norm_first, layer_norm_eps) for _ in range(3)
        )

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """x (B, T, D), memory (B, L, D), memory_mask (B, L) -> (B, T, D); position t sees targets <= t only."""
        x = self.self_block(x, lambda h: self.self_attn(h, causal=True))
        x = self.cross_block(x, lambda h: self.cross_attn(h, memory_mask, memory=memory))
        return self.ff_block(x, self.ff)

    def step(self, x: Tensor, memory_mask: Tensor | None, cache: dict[str, Tensor], i: int) -> Tensor:
        """New positions x (B, t, D) after the cached ones -> (B, t, D); updates this layer's entries of ``cache``.

        ``cache`` holds this layer's (index ``i``) self-attention state (``self.{i}.*``: the core's
        own, past keys and values for full attention) and the memory's cross-attention keys/values,
        so a new token costs one position, not the prefix.
        """

        def self_attention(h: Tensor) -> Tensor:
            out, mine = self.self_attn.decode_step(
                h, scoped(cache, f"self.{i}.")
            )  # the core's own state (a key/value cache for full attention)
            cache.update(prefixed(mine, f"self.{i}."))
            return out

        x = self.self_block(x, self_attention)
        x = self.cross_block(
            x,
            lambda h: self.cross_attn.attend(
                self.cross_attn.query(h), cache[f"cross_k.{i}"], cache[f"cross_v.{i}"], memory_mask
            ),
        )
        return self.ff_block(x, self.ff)


class Decoder(nn.Module):
    """A stack of decoder layers (pre-norm stacks end with a LayerNorm); the ``suite.types.Decoder`` contract.

    Args as ``DecoderLayer``, plus ``n_layers``.
    """

    def __init__(
        self,
        d_model: int,
        n_layers: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: Literal["relu", "gelu"] = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        attention: AttentionFactory = FullAttention,
        max_len: int | None = None,
        init: Callable[[nn.Module], None] | None = None,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps, attention, max_len)
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if norm_first else nn.Identity()
        if init is not None:  # e.g. suite.models.init.gpt2; None keeps torch's defaults
            init(self)

    def forward(self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """tgt (B, T, D), memory (B, L, D), memory_mask (B, L) bool | None -> (B, T, D)."""
        for layer in self.layers:
            tgt = layer(tgt, memory, memory_mask)
        return self.norm(tgt)

    def init_cache(self, memory: Tensor, memory_mask: Tensor | None = None) -> dict[str, Tensor]:
        """Each layer's cross-attention keys/values, batch-first; self-attention state appears with the first step."""
        cache: dict[str, Tensor] = {}
        for i, layer in enumerate(self.layers):
            k, v = layer.cross_attn.memory_kv(memory)  # (B, H, L, Dh)
            cache[f"cross_k.{i}"], cache[f"cross_v.{i}"] = k, v
        return cache

    def step(
        self, tgt: Tensor, memory: Tensor, memory_mask: Tensor | None, cache: dict[str, Tensor]
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """The next positions tgt (B, t, D) given the cache -> ((B, t, D), the grown cache)."""
        cache = dict(cache)
        for i, layer in enumerate(self.layers):
            tgt = layer.step(tgt, memory_mask, cache, i)
        return self.norm(tgt), cache
