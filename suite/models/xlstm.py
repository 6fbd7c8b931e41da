"""xLSTM (Beck et al. 2024, "xLSTM: Extended Long Short-Term Memory"): the mLSTM block (a matrix memory, trained in
its chunked form) and the sLSTM block (a scalar memory whose heads mix through recurrent weights, trained as the
recurrence it is), each a mixer, laid out as the ``xlstm`` package's ``mLSTMLayer`` and ``sLSTMLayer``.

* **mLSTM** (pre-up-projection): x -> up-projection to 2 x expand x D, split into x_m and z; q, k from SiLU of a
  causal convolution of x_m, v from x_m, each through a block-diagonal map (blocks of ``qkv_blocksize``); the input
  and forget gates a head from [q, k, v]; the mLSTM memory (``suite.models.chunked_mlstm``); a layer norm a head;
  plus a learned skip of the convolution's output; times SiLU(z); down-projection. Stacked without an MLP.
* **sLSTM** (post-up-projection: the stack adds the MLP): i and f from SiLU of a causal convolution of x, z and o
  from x, each through a block-diagonal map a head; then a head at a time, with recurrent weights R a head,

      (i~, f~, z~, o~) = W x_t + R h_(t-1) + b,   m_t = max(log sigmoid(f~) + m_(t-1), i~),
      c_t = f' c_(t-1) + i' tanh(z~),   n_t = f' n_(t-1) + i',   h_t = sigmoid(o~) c_t / n_t

  with i' = exp(i~ - m_t) and f' = exp(log sigmoid(f~) + m_(t-1) - m_t) (the stabilised exponential gates); a
  layer norm a head. R h_(t-1) makes it a true recurrence: no parallel form exists, it runs position by position.

Not here: xlstm's gated (SwiGLU-like) feed-forward after an sLSTM block (the stack's GELU MLP instead), its
power-law forget-gate bias (a linspace of 3 to 6, xlstm's "small_init" option, instead), and its CUDA kernels.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked_mlstm import chunk_mlstm, recurrent_mlstm
from suite.models.mixer_stack import ShortConv, head_layer_norm, head_widths, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State

CHUNK = 64


class BlockDiagonal(nn.Module):
    """x (..., blocks x d) -> (..., blocks x d) through one (d, d) map a block (xlstm's LinearHeadwiseExpand)."""

    def __init__(self, width: int, blocks: int, bias: bool = False) -> None:
        super().__init__()
        self.blocks, size = blocks, width // blocks
        self.weight = nn.Parameter(torch.randn(blocks, size, size) * math.sqrt(2 / (5 * size)))
        self.bias = nn.Parameter(torch.zeros(width)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        y = torch.einsum("...bi,boi->...bo", x.unflatten(-1, (self.blocks, -1)), self.weight).flatten(-2)
        return y if self.bias is None else y + self.bias


class MLSTMMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        heads: H of the memory.
        expand: the inner width over D (xlstm's proj_factor 2).
        qkv_blocksize: the block size of q, k and v's block-diagonal maps (a divisor of the inner width).
        d_conv: the causal convolution's width.
        chunk: positions the chunked form takes at once.
    """

    name = "mLSTM"
    precision_family = SCAN

    def __init__(
        self,
        d_model: int,
        heads: int = 4,
        expand: float = 2.0,
        qkv_blocksize: int = 4,
        d_conv: int = 4,
        chunk: int = CHUNK,
    ) -> None:
        super().__init__()
        inner = head_widths(d_model, heads, {"expand": expand}, self.name)["expand"]
        positive_int(qkv_blocksize, "qkv_blocksize (model.backbone.mixer)", self.name)
        if inner % qkv_blocksize:
            raise ValueError(f"mLSTM: qkv_blocksize {qkv_blocksize} must divide the inner width {inner} (expand x D)")
        positive_int(d_conv, "d_conv (model.backbone.mixer)", self.name)
        self.chunk = positive_int(chunk, "chunk (model.backbone.mixer)", self.name)
        self.heads, self.inner = heads, inner
        self.up = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv = ShortConv(inner, d_conv, activation=True)
        self.q, self.k, self.v = (BlockDiagonal(inner, inner // qkv_blocksize) for _ in range(3))
        self.gates = nn.Linear(3 * inner, 2 * heads)  # input then forget, a head
        nn.init.zeros_(self.gates.weight)
        with torch.no_grad():  # xlstm's: forget gates open (3 to 6 across heads), input gates near 0
            self.gates.bias[:heads].normal_(0.0, 0.1)
            self.gates.bias[heads:] = torch.linspace(3.0, 6.0, heads)
        self.norm = nn.Parameter(torch.ones(inner))
        self.skip = nn.Parameter(torch.ones(inner))
        self.down = nn.Linear(inner, d_model, bias=False)

    def state_size(self, length: int) -> int:
        """The memory (d, d), its normaliser (d,) and stabiliser a head, and the convolution's window."""
        d = self.inner // self.heads
        return self.heads * (d * d + d + 1) + self.inner * (self.conv.width - 1)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'C', 'n', 'm', 'conv'} or None) -> (y, state)."""
        xm, z = self.up(x).chunk(2, dim=-1)
        xc, window = self.conv(xm, state["conv"] if state else None)
        q, k, v = self.q(xc), self.k(xc), self.v(xm)
        i, f = self.gates(torch.cat([q, k, v], dim=-1)).float().transpose(1, 2).chunk(2, dim=1)  # (B, H, L) each
        q, k, v = (split_heads(t, self.heads) for t in (q, k, v))
        before = (state["C"], state["n"], state["m"]) if state else None
        args = (q, k / math.sqrt(k.shape[-1]), v, i, F.logsigmoid(f), before)
        h, (C, n, m) = recurrent_mlstm(*args) if step else chunk_mlstm(*args, chunk=self.chunk)
        h = (head_layer_norm(h, self.norm.float()) + self.skip * xc.float()) * F.silu(z.float())
        return self.down(h.to(x.dtype)), {"C": C, "n": n, "m": m, "conv": window}


class SLSTMMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D (the cell's width).
        heads: H; the recurrent weights are a (d, 4d) map a head.
        d_conv: the causal convolution's width (the input and forget gates read it).
    """

    name = "sLSTM"
    precision_family = SCAN

    def __init__(self, d_model: int, heads: int = 4, d_conv: int = 4) -> None:
        super().__init__()
        positive_int(heads, "heads (model.backbone.mixer)", self.name)
        if d_model % heads:
            raise ValueError(f"sLSTM: heads = {heads} must divide d_model = {d_model} (model.backbone.mixer.heads)")
        positive_int(d_conv, "d_conv (model.backbone.mixer)", self.name)
        self.heads, self.width = heads, d_model
        self.conv = ShortConv(d_model, d_conv, activation=True)
        self.inputs = nn.ModuleList(BlockDiagonal(d_model, heads) for _ in range(4))  # i, f from the conv; z, o
        d = d_model // heads
        self.recurrent = nn.Parameter(torch.zeros(heads, d, 4 * d))  # xlstm's zeros init
        bias = torch.zeros(4, d_model)
        bias[1] = torch.linspace(3.0, 6.0, d_model)
        self.bias = nn.Parameter(bias)  # (4, D): i, f, z, o
        self.norm = nn.Parameter(torch.ones(d_model))

    def state_size(self, length: int) -> int:
        """h, c, n and m a unit, and the convolution's window."""
        return 4 * self.width + self.width * (self.conv.width - 1)

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'h', 'c', 'n', 'm', 'conv'} or None) -> (y, state). ``step`` changes
        nothing: training runs the recurrence too."""
        xc, window = self.conv(x, state["conv"] if state else None)
        wx = torch.stack([p(s) for p, s in zip(self.inputs, (xc, xc, x, x))], dim=2)  # (B, L, 4, D)
        wx = wx.to(torch.promote_types(wx.dtype, torch.float32)) + self.bias
        with torch.autocast(x.device.type, enabled=False):  # the state is carried over every position: float32
            y, kept = self._recur(wx, state)
        return y.to(x.dtype), kept | {"conv": window}

    def _recur(self, wx: Tensor, state: State | None) -> tuple[Tensor, State]:
        """wx (B, L, 4, D) the gates' inputs from x -> (y (B, L, D), {'h', 'c', 'n', 'm'} after the last position)."""
        batch, heads = wx.shape[0], self.heads
        if state:
            h, c, n, m = (state[key].to(wx.dtype) for key in "hcnm")
        else:
            h, c, n = (wx.new_zeros(batch, self.width) for _ in range(3))
            m = wx.new_full((batch, self.width), float("-inf"))
        recurrent = self.recurrent.to(wx.dtype)
        out = []
        for wt in wx.unbind(1):  # unbound once: indexing wx[:, t] costs a full-size gradient a position backwards
            # a head's batch as one product, (H, B, d) x (H, d, 4d): broadcasting h (B, H, 1, d) against the weights
            # would make their gradient a (B, H, d, 4d) tensor a position, summed over the batch afterwards
            rh = torch.bmm(h.view(batch, heads, -1).transpose(0, 1), recurrent)  # (H, B, 4d)
            rh = rh.view(heads, batch, 4, -1).permute(1, 2, 0, 3).flatten(2)  # (B, 4, D): i, f, z, o
            pre_i, pre_f, pre_z, pre_o = (wt + rh).unbind(1)
            log_f = F.logsigmoid(pre_f)
            m_new = torch.maximum(log_f + m, pre_i)
            c = torch.exp(log_f + m - m_new) * c + torch.exp(pre_i - m_new) * torch.tanh(pre_z)
            n = torch.exp(log_f + m - m_new) * n + torch.exp(pre_i - m_new)
            h, m = torch.sigmoid(pre_o) * c / n, m_new
            out.append(h)
        y = head_layer_norm(split_heads(torch.stack(out, dim=1), heads), self.norm.to(wx.dtype))
        return y, {"h": h, "c": c, "n": n, "m": m}
