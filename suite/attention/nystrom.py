"""Nystromformer attention (Xiong et al. 2021): softmax attention through m landmarks.

    out = softmax(Q K~^T / sqrt(d)) pinv(softmax(Q~ K~^T / sqrt(d))) softmax(Q~ K^T / sqrt(d)) V

The landmarks Q~, K~ are the means of consecutive segments of ceil(L / m) positions, taken
over real positions only, so padded queries and keys change no landmark; padded keys are also
masked in the last factor. The pseudo-inverse is the paper's iterative one (``pinv_iterations``
steps) or, with 0, ``torch.linalg.pinv``. Cost O(L * m + m^3). With m >= L every position is its
own landmark and, with the exact inverse, the result is full attention. Encoder only.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from suite.attention.core import PADDING, AttentionCore, key_padding, masked_softmax, positive_int, self_attention_only
from suite.nn import dropout


def segment_means(x: Tensor, real: Tensor, size: int) -> Tensor:
    """Means of segments of ``size`` positions over real positions: (B, H, L, Dh), (B, L) -> (B, H, m, Dh)."""
    extra = -x.size(2) % size
    weight = F.pad(real.to(x.dtype), (0, extra))[:, None, :, None]  # (B, 1, L', 1)
    sums = (F.pad(x, (0, 0, 0, extra)) * weight).unflatten(2, (-1, size)).sum(3)  # (B, H, m, Dh)
    counts = weight.unflatten(2, (-1, size)).sum(3)  # (B, 1, m, 1)
    return sums / counts.clamp_min(1.0)


def iterative_pinv(a: Tensor, steps: int) -> Tensor:
    """Moore-Penrose pseudo-inverse of (..., m, m) by the iteration of Razavi et al. 2014, as the paper uses."""
    eye = torch.eye(a.size(-1), dtype=a.dtype, device=a.device)
    z = a.transpose(-2, -1) / (a.abs().sum(-1).amax(-1) * a.abs().sum(-2).amax(-1))[..., None, None]
    for _ in range(steps):  # a fixed number of matrix steps, not a loop over positions
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


class NystromAttention(AttentionCore):
    """Nystrom approximation of softmax attention.

    Args:
        n_landmarks: m, the number of landmarks (at most L are used).
        pinv_iterations: steps of the iterative pseudo-inverse; 0: ``torch.linalg.pinv``.
        dropout: dropout on the attention weights of the last factor while training.
    """

    name = "nystrom"
    capabilities = frozenset({PADDING})

    def __init__(
        self, n_landmarks: int = 64, pinv_iterations: int = 6, dropout: float = 0.0, **sizes: int | None
    ) -> None:
        super().__init__(dropout, **sizes)
        self.n_landmarks = positive_int(n_landmarks, "n_landmarks", self.name)
        self.pinv_iterations = positive_int(pinv_iterations, "pinv_iterations", self.name, least=0)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, pad_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """(B, H, L, Dh) x3 -> (B, H, L, Dh)."""
        self_attention_only(self, q, k, causal)
        b, _, length, d = q.shape
        pad = key_padding(pad_mask, b, length, q.device)
        size = math.ceil(length / self.n_landmarks)
        q_land, k_land = segment_means(q, ~pad, size), segment_means(k, ~pad, size)  # (B, H, m, Dh)
        scale = 1.0 / math.sqrt(d)
        f1 = (q @ k_land.transpose(-2, -1) * scale).softmax(-1)  # (B, H, L, m)
        a = (q_land @ k_land.transpose(-2, -1) * scale).softmax(-1)  # (B, H, m, m)
        f2 = masked_softmax(q_land @ k.transpose(-2, -1) * scale, ~pad[:, None, None, :])  # (B, H, m, L)
        a_inv = iterative_pinv(a, self.pinv_iterations) if self.pinv_iterations else torch.linalg.pinv(a)
        return f1 @ (a_inv @ (dropout(f2, self.dropout, self.training) @ v))  # (B, H, L, Dh)
