"""Text generation from a decoder-only language model: greedy, or sampled with temperature, top-k and top-p.

With the cache (the default) the prompt is read in one step over all its positions and every
new token costs one step: the model's backbone carries its own state (a Transformer's keys and
values, a linear core's running sums, a local core's last window, an RNN's hidden state), as
``suite.generation.search`` does for the seq2seq decoder. Without it, each token re-runs the model over the
whole text so far: the reference, and the baseline the generation-cost measurement compares with.

A generation never runs past the model's context: ``fit_to_context`` cuts a long prompt from the
left, with a warning, and ``generate`` refuses a request that would not fit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from suite.types import State

log = logging.getLogger("suite.generation.sampling")
STRATEGIES = ("greedy", "sample")


@dataclass(frozen=True)
class Sampling:
    """How each next token is chosen.

    Args:
        strategy: 'greedy' (the most likely token) or 'sample'.
        temperature: logits are divided by it before sampling (> 0; below 1 sharpens).
        top_k: sample among the k most likely tokens only (None: all).
        top_p: sample among the fewest most likely tokens whose probability reaches p
            (nucleus sampling, Holtzman et al. 2020; None or 1: all).
    """

    strategy: str = "sample"
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"sampling strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.strategy == "sample" and not self.temperature > 0:
            raise ValueError(
                f"sampling needs a temperature > 0, got {self.temperature} (strategy=greedy "
                "picks the most likely token)"
            )
        if self.top_k is not None and (
            isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1
        ):
            raise ValueError(f"top_k must be an integer >= 1 (or null: every token), got {self.top_k!r}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (or null: every token), got {self.top_p!r}")


def top_k_filter(logits: Tensor, k: int) -> Tensor:
    """(N, V) logits with all but the k largest of each row set to -inf."""
    kth = logits.topk(min(k, logits.size(-1)), dim=-1).values[:, -1:]  # (N, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: Tensor, p: float) -> Tensor:
    """(N, V) logits keeping, per row, the most likely tokens until their probability reaches p (at least one)."""
    ordered, order = logits.sort(dim=-1, descending=True)
    probs = ordered.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # probability of the tokens ranked above each one
    drop = before >= p
    drop[:, 0] = False
    return logits.scatter(-1, order, ordered.masked_fill(drop, float("-inf")))


def choose(logits: Tensor, sampling: Sampling, generator: torch.Generator | None = None) -> Tensor:
    """Next-token logits (N, V) -> ids (N,): temperature, then top-k, then top-p, then a draw (or the argmax)."""
    if sampling.strategy == "greedy":
        return logits.argmax(dim=-1)
    logits = logits.float() / sampling.temperature
    if sampling.top_k is not None:
        logits = top_k_filter(logits, sampling.top_k)
    if sampling.top_p is not None and sampling.top_p < 1:
        logits = top_p_filter(logits, sampling.top_p)
    return torch.multinomial(logits.softmax(dim=-1), 1, generator=generator).squeeze(-1)


class Steppable(Protocol):
    """What generation needs from a model (``suite.models.language_model.LanguageModel``)."""

    context: int | None

    def next_logits(self, ids: Tensor) -> Tensor: ...

    def step(self, ids: Tensor, position: int, state: State) -> tuple[Tensor, State]: ...


def fit_to_context(
    ids: list[int], max_new_tokens: int, context: int | None, keep_first: int = 0
) -> tuple[list[int], int]:
    """A prompt cut from the left so that it and ``max_new_tokens`` fit the context; returns (ids, tokens dropped).

    The first ``keep_first`` ids (e.g. the document-start marker) stay. A request with no room for
    a prompt at all is an error; a cut is logged as a warning.
    """
    if context is None:
        return ids, 0
    room = context - max_new_tokens
    if room < keep_first + 1:
        raise ValueError(
            f"{max_new_tokens} new tokens leave no room for a prompt in the model's context of {context} tokens: ask "
            f"for at most {context - keep_first - 1}"
        )
    dropped = max(0, len(ids) - room)
    if dropped:
        log.warning(
            "the prompt (%d tokens) and %d new tokens exceed the model's context of %d: "
            "its first %d tokens are dropped",
            len(ids),
            max_new_tokens,
            context,
            dropped,
        )
        ids = ids[:keep_first] + ids[keep_first + dropped :]
    return ids, dropped


@torch.no_grad()
def generate(
    model: Steppable,
    prompt: Tensor,
    max_new_tokens: int,
    sampling: Sampling,
    *,
    cache: bool = True,
    eos: int | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Continue each row of ``prompt`` (B, P) by up to ``max_new_tokens`` ids -> (B, n), n <= max_new_tokens.

    Args:
        model: a ``Steppable`` language model (in eval mode).
        prompt: (B, P) ids, P >= 1, all rows of one length.
        max_new_tokens: tokens to add; P + max_new_tokens must fit ``model.context``.
        sampling: how each token is chosen.
        cache: carry the model's decoding state (one position per token); False re-runs the whole text.
        eos: stop once every row has produced it (rows that ended early go on; cut them at their first eos).
        generator: random numbers for sampling (seeded for reproducible samples).
    """
    if prompt.dim() != 2 or prompt.size(1) == 0:
        raise ValueError(f"the prompt must be a (batch, length >= 1) tensor of ids, got shape {tuple(prompt.shape)}")
    if model.context is not None and prompt.size(1) + max_new_tokens > model.context:
        raise ValueError(
            f"a prompt of {prompt.size(1)} tokens and {max_new_tokens} new ones would run past the model's context of "
            f"{model.context} tokens (fit_to_context cuts the prompt)"
        )
    text, state = prompt, {}
    ended = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)
    for i in range(max_new_tokens):
        if cache:
            new = text if i == 0 else text[:, -1:]  # the whole prompt first, then one token a step
            logits, state = model.step(new, text.size(1) - new.size(1), state)
            logits = logits[:, -1]
        else:
            logits = model.next_logits(text)
        token = choose(logits, sampling, generator)  # (B,)
        text = torch.cat([text, token[:, None]], dim=1)
        if eos is not None:
            ended |= token == eos
            if ended.all():
                break
    return text[:, prompt.size(1) :]


def cut_at(ids: list[int], eos: int | None) -> list[int]:
    """The ids before the first ``eos`` (all of them when there is none)."""
    return ids[: ids.index(eos)] if eos is not None and eos in ids else ids
