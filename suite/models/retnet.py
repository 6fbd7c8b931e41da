"""RetNet (Sun et al. 2023, "Retentive Network"): multi-scale retention, a linear attention whose state decays by a
fixed rate a head, gamma_h = 1 - 2^(-5 - h), in three equal forms:

* ``parallel``: Q K^T masked by the decays gamma^(t - s) (s <= t), times V: one (L, L) product, as attention;
* ``chunkwise``: the same in chunks with the state carried between them (``suite.models.chunked.chunk_gated``);
* recurrent: S_t = gamma S_(t-1) + k_t^T v_t, o_t = q_t S_t, for decoding.

A mixer, laid out as ``torchscale``'s ``MultiScaleRetention``: q, k (width D), v and a gate (width value_factor x
D), in heads, q scaled by 1 / sqrt(d_k); an RMSNorm a head without weights, times SiLU of the gate; out_proj. Not
here: the xPos rotation of q and k (a position code beside retention, not part of its recurrence: positions reach
this model through the decays alone), and torchscale's rescalings of the decay matrix and the scores (numerical
guards for long sequences in low precision that the RMSNorm a head cancels up to its epsilon).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from suite.models.chunked import chunk_gated, parallel_gated, recurrent_gated
from suite.models.mixer_stack import head_widths, merge_heads, split_heads
from suite.models.scan import positive_int
from suite.runtime.precision_policy import SCAN
from suite.types import State

FORMS = ("chunkwise", "parallel")


class RetentionMixer(nn.Module):
    """(B, L, D) -> (B, L, D) (``mixer_stack`` contract).

    Args:
        d_model: D.
        heads: H, each with its own decay.
        value_factor: the value width over D.
        form: the training form, 'chunkwise' or 'parallel' (decoding is always the recurrence).
        chunk: positions the chunkwise form takes at once.
    """

    name = "RetNet"
    precision_family = SCAN

    def __init__(
        self, d_model: int, heads: int = 4, value_factor: int = 2, form: str = "chunkwise", chunk: int = 64
    ) -> None:
        super().__init__()
        if form not in FORMS:
            raise ValueError(f"RetNet: form (model.backbone.mixer.form) must be one of {list(FORMS)}, got {form!r}")
        widths = head_widths(d_model, heads, {"key": 1.0, "value_factor": value_factor}, self.name)
        self.chunk = positive_int(chunk, "chunk (model.backbone.mixer)", self.name)
        self.heads, self.form, self.key, self.value = heads, form, widths["key"], widths["value_factor"]
        self.q_proj, self.k_proj = nn.Linear(d_model, self.key, bias=False), nn.Linear(d_model, self.key, bias=False)
        self.v_proj = nn.Linear(d_model, self.value, bias=False)
        self.g_proj = nn.Linear(d_model, self.value, bias=False)
        self.out_proj = nn.Linear(self.value, d_model, bias=False)
        self.register_buffer("decay", torch.log(1 - 2.0 ** (-5 - torch.arange(heads, dtype=torch.float32))))

    def state_size(self, length: int) -> int:
        """(d_k, d_v) a head."""
        return self.key * self.value // self.heads

    def forward(self, x: Tensor, state: State | None = None, step: bool = False) -> tuple[Tensor, State]:
        """x (B, L, D) after ``state`` ({'S': (B, H, d_k, d_v)} or None) -> (y, state; none from the parallel form)."""
        q, k, v = (split_heads(p(x), self.heads) for p in (self.q_proj, self.k_proj, self.v_proj))
        q = q * q.shape[-1] ** -0.5
        g = self.decay[:, None, None].expand(q.shape[0], self.heads, q.shape[2], 1)
        if step:
            o, s = recurrent_gated(q, k, v, g, state["S"] if state else None)
        elif self.form == "parallel":
            o, s = parallel_gated(q, k, v, g), None
        else:
            o, s = chunk_gated(q, k, v, g, chunk=self.chunk)
        o = merge_heads(F.rms_norm(o, (o.shape[-1],), eps=1e-5)) * F.silu(self.g_proj(x).float())
        return self.out_proj(o.to(x.dtype)), ({"S": s} if s is not None else {})
