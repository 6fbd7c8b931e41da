"""RWKV-7 "Goose" (Peng et al. 2025, "RWKV-7 Goose with Expressive Dynamic State Evolution"): a state corrected
towards each value at its normalised key at a learned in-context rate (a generalised delta rule), decaying by a
data-dependent rate on every key dimension.

The time-mixing block, laid out as RWKV-LM's ``RWKV_Tmix_x070`` with its initialisation: each of r, w, k, v, a, g
reads x mixed with the previous position (token shift, x + (x_(t-1) - x) * mu); r, k, v linear; the log decay
g = -exp(-softplus(-(w0 + tanh(x W1) W2)) - 0.5) in (-e^-0.5, 0); the rate a = sigmoid(a0 + x A1 A2); the output gate
sigmoid(x G1) G2; k^ = normalise(k * k_k) a head, the key k * (1 + (a - 1) k_a); then, a head,

    S_t = (diag(exp g_t) - k^_t^T (a_t * k^_t)) S_(t-1) + k_t^T v_t,   o_t = r_t S_t

(``suite.models.chunked_dplr``: chunked for training, the recurrence for decoding); a layer norm a head; plus the
bonus (r_t . (k_t * r_k)) v_t a head; times the gate; the output map.

The transition diag(w) - k^^T (a * k^) is similar to diag(w) - z z^T with z = sqrt(a) * k^ (a > 0), a symmetric
matrix: its eigenvalues are real and lie in [min w - |z|^2, max w], so in (FASTEST - 1, 1), since w > FASTEST,
|k^| = 1 and a < 1. A negative eigenvalue is reachable (down to about -0.45), the -1 with which Grazzi et al. 2024
flip a state for parity is not (tests/test_rwkv7.py).

Not here: the value residual from the first layer (v mixed towards layer 0's v: it needs a tensor passed between
layers, which the shared stack does not carry), the channel-mixing block's token shift and squared ReLU (the stack's
GELU MLP instead), and the initialisations that depend on the layer's depth (every layer gets layer 0's).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked_dplr import chunk_dplr, recurrent_dplr
from suite.models.mixer_stack import head_layer_norm, merge_heads, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State

CHUNK = 16  # a chunk's scores cost C^2 K (a decay a key dimension)
SHIFTED = ("r", "w", "k", "v", "a", "g")
POWERS = {"r": 0.2, "w": 0.9, "k": 0.7, "v": 0.7, "a": 0.9, "g": 0.2}  # RWKV-LM's token-shift initialisation
FASTEST = math.exp(-math.exp(-0.5))  # the fastest decay a position: w = exp(g) with g > -e^-0.5


def low_rank(d_model: int, rank: int, out: int) -> nn.Sequential:
    """x -> x A B with A zero and B small (RWKV-7's initialisation: the map starts at nothing)."""
    first, second = nn.Linear(d_model, rank, bias=False), nn.Linear(rank, out, bias=False)
    nn.init.zeros_(first.weight)
    nn.init.orthogonal_(second.weight, gain=0.1)
    return nn.Sequential(first, second)


class RWKV7Mixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        heads: H, a divisor of D (2 at D = 128: RWKV-7's heads of 64).
        rank: the rank of the decay's, the rate's and the gate's low-rank maps.
        chunk: positions the chunked form takes at once.
    """

    name = "RWKV-7"
    precision_family = SCAN

    def __init__(self, d_model: int, heads: int = 2, rank: int = 32, chunk: int = CHUNK) -> None:
        super().__init__()
        positive_int(heads, "heads (model.backbone.mixer)", self.name)
        if d_model % heads:
            raise ValueError(f"RWKV-7: heads = {heads} must divide d_model = {d_model} (model.backbone.mixer.heads)")
        positive_int(rank, "rank (model.backbone.mixer)", self.name)
        self.chunk = positive_int(chunk, "chunk (model.backbone.mixer)", self.name)
        self.heads, self.width = heads, d_model
        ramp = torch.arange(d_model, dtype=torch.float32) / d_model
        self.mu = nn.ParameterDict({n: nn.Parameter(1 - ramp ** POWERS[n]) for n in SHIFTED})
        self.r, self.k, self.v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))
        self.out = nn.Linear(d_model, d_model, bias=False)
        bound = d_model**-0.5
        for layer, scale in ((self.r, 0.5), (self.k, 0.05), (self.v, 0.5)):
            nn.init.uniform_(layer.weight, -scale * bound, scale * bound)
        nn.init.zeros_(self.out.weight)
        speed = -7 + 5 * (torch.arange(d_model) / (d_model - 1)) ** 0.85 if d_model > 1 else torch.full((1,), -7.0)
        self.w0 = nn.Parameter(speed + 0.5)  # decays from near 1 (slow) to fast across the key dimensions
        self.a0 = nn.Parameter(torch.zeros(d_model))
        self.w_map, self.a_map = low_rank(d_model, rank, d_model), low_rank(d_model, rank, d_model)
        self.g_map = low_rank(d_model, rank, d_model)
        self.k_k, self.k_a = nn.Parameter(torch.full((d_model,), 0.85)), nn.Parameter(torch.ones(d_model))
        self.r_k = nn.Parameter(torch.zeros(heads, d_model // heads))
        # a layer norm a head (RWKV's GroupNorm), with a weight and bias a channel
        self.norm_weight, self.norm_bias = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model))

    def state_size(self, length: int) -> int:
        """(d, d) a head, and the previous position's input for the token shift."""
        return self.width * self.width // self.heads + self.width

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'S': (B, H, d, d), 'last': (B, D)} or None) -> (y, state)."""
        previous = state["last"][:, None].to(x.dtype) if state else x.new_zeros(x.shape[0], 1, x.shape[2])
        delta = torch.cat([previous, x[:, :-1]], dim=1) - x
        xr, xw, xk, xv, xa, xg = (x + delta * self.mu[n] for n in SHIFTED)
        r, k, v = self.r(xr), self.k(xk), self.v(xv)
        wide = torch.promote_types(x.dtype, torch.float32)  # the gates and the state in float32 at least
        g = -torch.exp(-F.softplus(-(self.w0 + self.w_map[1](torch.tanh(self.w_map[0](xw))).to(wide))) - 0.5)
        a = torch.sigmoid(self.a0 + self.a_map(xa).to(wide))
        gate = self.g_map[1](torch.sigmoid(self.g_map[0](xg)))
        kk = F.normalize(split_heads((k * self.k_k).to(wide), self.heads), dim=-1)
        k = k.to(wide) * (1 + (a - 1) * self.k_a)
        r, k, v, a, g = (split_heads(t, self.heads) for t in (r.to(wide), k, v.to(wide), a, g))
        args = (r, k, v, -kk, kk * a, g, state["S"] if state else None)
        o, s = recurrent_dplr(*args) if step else chunk_dplr(*args, chunk=self.chunk)
        o = head_layer_norm(o, self.norm_weight, eps=64e-5) + self.norm_bias
        o = o + merge_heads((r * k * self.r_k[:, None]).sum(-1, keepdim=True) * v)  # the current position's bonus
        return self.out((o * gate.to(wide)).to(x.dtype)), {"S": s, "last": x[:, -1]}
