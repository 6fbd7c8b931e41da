"""Input embeddings (what a token becomes) and position encodings (where it is)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class TokenEmbedding(nn.Module):
    """Token ids (B, L) -> vectors (B, L, D), scaled by sqrt(D) as in "Attention Is All You Need" §3.4.

    Args:
        vocab_size: number of ids.
        d_model: width D.
        padding_idx: id whose vector stays zero.
        scale: multiply by sqrt(D) (the paper's choice; keeps embeddings on the scale of the positions).
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = 0, scale: bool = True) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        nn.init.normal_(self.embed.weight, std=d_model**-0.5)
        if padding_idx is not None:
            with torch.no_grad():
                self.embed.weight[padding_idx].zero_()
        self.factor = math.sqrt(d_model) if scale else 1.0

    def forward(self, ids: Tensor) -> Tensor:
        # contiguous: a target shifted by slicing is a strided view, which int8 embedding tables (torch's quantized
        # lookup) refuse
        return self.embed(ids.contiguous()) * self.factor  # (B, L, D)


def sinusoidal_table(length: int, d_model: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D)); -> (length, D)."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    inv_freq = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * inv_freq)
    table[:, 1::2] = torch.cos(pos * inv_freq[: d_model // 2])
    return table.to(dtype)


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table; grows it on demand, so any length works.

    Args:
        d_model: width D.
        max_len: initial table length (a cache size, not a limit).
    """

    def __init__(self, d_model: int, max_len: int = 1024) -> None:
        super().__init__()
        self.d_model = d_model
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """(B, L, D) -> (B, L, D); ``offset`` is the position of x[:, 0] (for incremental decoding)."""
        end = offset + x.size(1)
        if end > self.table.size(0):
            self.table = sinusoidal_table(max(end, 2 * self.table.size(0)), self.d_model).to(x.device)
        return x + self.table[offset:end].to(x.dtype)


class LearnedPositions(nn.Module):
    """Adds a trained vector per position (BERT, ViT).

    Args:
        d_model: width D.
        max_len: number of positions; longer inputs are an error, named as such.
        init_std: normal init scale (0.02 as in BERT and torchvision's ViT).
    """

    def __init__(self, d_model: int, max_len: int, init_std: float = 0.02) -> None:
        super().__init__()
        self.pos = nn.Parameter(torch.empty(1, max_len, d_model).normal_(std=init_std))

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        end = offset + x.size(1)
        if end > self.pos.size(1):
            raise ValueError(f"input of length {end} exceeds the {self.pos.size(1)} learned positions")
        return x + self.pos[:, offset:end]


class NoPositions(nn.Module):
    """Identity: recurrent backbones know order by construction."""

    def __init__(self, d_model: int = 0, max_len: int = 0) -> None:
        super().__init__()

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        return x


class PatchEmbedding(nn.Module):
    """Images (B, C, H, W) -> patch vectors (B, N, D), N = (H / P) * (W / P), row-major.

    A convolution whose kernel and stride are the patch size P: the linear map of each
    flattened P x P patch, as torchvision's ViT ``conv_proj`` (and with its initialisation),
    so weights load from it one to one.

    Args:
        d_model: width D.
        patch_size: patch side P; the image sides must be multiples of it.
        in_channels: image channels C.
    """

    def __init__(self, d_model: int, patch_size: int, in_channels: int = 1) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)
        fan_in = in_channels * patch_size * patch_size
        nn.init.trunc_normal_(self.proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.proj.bias)

    def forward(self, images: Tensor) -> Tensor:
        h, w = images.shape[-2:]
        if h % self.patch_size or w % self.patch_size:
            raise ValueError(
                f"image of {h}x{w} pixels does not divide into {self.patch_size}x{self.patch_size} patches"
            )
        return self.proj(images).flatten(2).transpose(1, 2)  # (B, D, H/P, W/P) -> (B, N, D)
