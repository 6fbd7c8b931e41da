"""Physically smaller layers: a Linear keeping some of its outputs or inputs, an attention layer keeping some heads, a
feed-forward keeping some neurons, a recurrent encoder keeping some hidden units.

The kept rows and columns are copied, so for an input whose removed parts contribute nothing
(a head whose output projection is zero) the smaller layer computes exactly what the larger did.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from suite.models.rnn import RecurrentEncoder
from suite.models.transformer import CrossAttention, FeedForward, MultiHeadAttention


def keep_outputs(linear: nn.Linear, index: Tensor) -> nn.Linear:
    """A Linear with the output features ``index`` of ``linear`` (rows of the weight, entries of the bias)."""
    out = nn.Linear(
        linear.in_features,
        len(index),
        bias=linear.bias is not None,
        device=linear.weight.device,
        dtype=linear.weight.dtype,
    )
    with torch.no_grad():
        out.weight.copy_(linear.weight[index])
        if linear.bias is not None:
            out.bias.copy_(linear.bias[index])
    return out


def keep_inputs(linear: nn.Linear, index: Tensor) -> nn.Linear:
    """A Linear reading only the input features ``index`` of ``linear`` (columns of the weight; the bias is kept
    whole)."""
    out = nn.Linear(
        len(index),
        linear.out_features,
        bias=linear.bias is not None,
        device=linear.weight.device,
        dtype=linear.weight.dtype,
    )
    with torch.no_grad():
        out.weight.copy_(linear.weight[:, index])
        if linear.bias is not None:
            out.bias.copy_(linear.bias)
    return out


def head_features(heads: Tensor, head_dim: int) -> Tensor:
    """The feature indices of the given heads in a (H * Dh)-wide projection."""
    return (heads[:, None] * head_dim + torch.arange(head_dim, device=heads.device)).flatten()


def keep_heads(attention: MultiHeadAttention, heads: Tensor) -> None:
    """Keep only ``heads`` (sorted indices) of an attention layer: its in-projections lose their q, k, v rows, its
    out-projection their columns."""
    width = attention.out_proj.in_features
    head_dim = width // attention.n_heads
    features = head_features(heads.sort().values, head_dim)
    if isinstance(attention, CrossAttention):
        attention.q_proj = keep_outputs(attention.q_proj, features)
        attention.kv_proj = keep_outputs(attention.kv_proj, torch.cat([features, features + width]))  # k, v blocks
    else:
        rows = torch.cat([features, features + width, features + 2 * width])  # q, k, v blocks of the fused projection
        attention.in_proj = keep_outputs(attention.in_proj, rows)
    attention.out_proj = keep_inputs(attention.out_proj, features)
    attention.n_heads = len(heads)


def keep_neurons(ff: FeedForward, neurons: Tensor) -> None:
    """Keep only ``neurons`` of a feed-forward block's hidden layer (rows of ``linear1``, columns of ``linear2``)."""
    neurons = neurons.sort().values
    ff.linear1 = keep_outputs(ff.linear1, neurons)
    ff.linear2 = keep_inputs(ff.linear2, neurons)


def keep_units(encoder: RecurrentEncoder, units: Tensor) -> None:
    """Keep only ``units`` of a one-layer, one-direction recurrent encoder's hidden state.

    Every gate's rows of the input and hidden matrices (and biases) lose the other units, the
    hidden matrix their columns too; the output projection reads the kept units (an identity
    becomes the matching columns of one, so the outputs stay where they were).
    """
    rnn = encoder.rnn
    hidden, gates = rnn.hidden_size, rnn.weight_ih_l0.size(0) // rnn.hidden_size
    units = units.sort().values
    rows = (
        torch.arange(gates, device=units.device)[:, None] * hidden + units
    ).flatten()  # the units in every gate block
    smaller = type(rnn)(
        rnn.input_size, len(units), num_layers=1, batch_first=True, bias=rnn.bias, device=rnn.weight_ih_l0.device
    )
    with torch.no_grad():
        smaller.weight_ih_l0.copy_(rnn.weight_ih_l0[rows])
        smaller.weight_hh_l0.copy_(rnn.weight_hh_l0[rows][:, units])
        if rnn.bias:
            smaller.bias_ih_l0.copy_(rnn.bias_ih_l0[rows])
            smaller.bias_hh_l0.copy_(rnn.bias_hh_l0[rows])
    encoder.rnn = smaller
    if isinstance(encoder.proj, nn.Linear):
        encoder.proj = keep_inputs(encoder.proj, units)
    else:  # the identity: unit u was output feature u
        identity = nn.Linear(hidden, encoder.d_model, bias=True, device=units.device)
        with torch.no_grad():
            identity.weight.copy_(torch.eye(encoder.d_model, hidden, device=units.device))
            identity.bias.zero_()
        encoder.proj = keep_inputs(identity, units)
