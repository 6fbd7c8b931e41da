"""Generation from an encoder-decoder: batched greedy and beam search, with or without the cache.

With the cache (the default) each new token costs one decoder step: the Transformer keeps
its past keys and values and the memory's cross-attention keys/values, the recurrent decoder
its state. Without it, every step re-runs the decoder over the whole prefix (the reference,
and the baseline that ``python -m suite.tools.decode_bench`` measures against). Finished sequences
leave the batch, so a long one does not make the short ones pay.

Searches return token ids without BOS and EOS, one list per source sequence.
"""

from __future__ import annotations

from typing import Callable, Protocol

import torch
from torch import Tensor

from suite.types import State

Stepper = Callable[[Tensor, State], tuple[Tensor, State]]  # (prefix (N, t), state) -> (scores (N, V), state)


class Generative(Protocol):
    """What generation needs from a model (``suite.models.seq2seq.Seq2Seq``)."""

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> Tensor: ...

    def decode_features(self, tgt: Tensor, memory: Tensor, src_mask: Tensor | None = None) -> Tensor: ...

    def project(self, h: Tensor, state: State) -> Tensor: ...

    def start(self, memory: Tensor, src_mask: Tensor | None = None, src: Tensor | None = None) -> State: ...

    def step(self, tokens: Tensor, position: int, state: State) -> tuple[Tensor, State]: ...


def cached(model: Generative) -> Stepper:
    """One decoder step for the newest token; the state carries everything before it."""
    return lambda prefix, state: model.step(prefix[:, -1:], prefix.size(1) - 1, state)


def uncached(model: Generative) -> Stepper:
    """The decoder re-run over the whole prefix; only the last position goes through the output layer."""
    return lambda prefix, state: (
        model.project(model.decode_features(prefix, state["memory"], state["memory_mask"])[:, -1:], state)[:, -1],
        state,
    )


def repeated_ngram_ban(prefix: Tensor, n: int) -> Tensor:
    """Next tokens that would repeat an n-gram of the prefix: prefix (N, t), t >= n -> bool (N, max id + 1).

    True where the token would complete an n-gram that starts with the prefix's last n - 1
    tokens and already occurs in the prefix.
    """
    windows = prefix.unfold(1, n, 1)  # (N, W, n): every n-gram so far
    last = prefix[:, prefix.size(1) - n + 1 :]  # (N, n - 1)
    matches = (windows[:, :, :-1] == last[:, None, :]).all(-1)  # (N, W)
    ban = torch.zeros(prefix.size(0), int(prefix.max()) + 1, dtype=torch.int, device=prefix.device)
    return ban.scatter_add_(1, windows[:, :, -1], matches.int()) > 0


def log_probs(step: Stepper) -> Stepper:
    """The stepper with its scores (logits or log-probabilities) normalised to log-probabilities, in float32."""

    def normalised(prefix: Tensor, state: State) -> tuple[Tensor, State]:
        scores, state = step(prefix, state)
        return torch.log_softmax(scores.float(), dim=-1), state

    return normalised


def no_repeat(step: Stepper, n: int) -> Stepper:
    """The stepper with every token that would repeat an n-gram of the prefix scored -inf (n = 0: unchanged).

    Small models loop ("2001 2001 2001 ..."); blocking repeated n-grams is the usual remedy
    (fairseq's and Hugging Face's ``no_repeat_ngram_size``). BOS counts as a token of the prefix.
    Applied to log-probabilities, it prunes without renormalising: a hypothesis keeps the
    model's own probability.
    """
    if n <= 0:
        return step

    def blocked(prefix: Tensor, state: State) -> tuple[Tensor, State]:
        scores, state = step(prefix, state)
        if prefix.size(1) >= n:
            ban = repeated_ngram_ban(prefix, n)
            scores = scores.clone()
            scores[:, : ban.size(1)] = scores[:, : ban.size(1)].masked_fill(ban, float("-inf"))
        return scores, state

    return blocked


def min_length(step: Stepper, m: int, eos: int) -> Stepper:
    """The stepper with EOS scored -inf until ``m`` tokens have been generated (m = 0: unchanged).

    A model that ends after one word can score no bigram at all; a floor on the length is
    the usual control (fairseq's ``--min-len``, Hugging Face's ``min_length``).
    """
    if m <= 0:
        return step

    def floored(prefix: Tensor, state: State) -> tuple[Tensor, State]:
        scores, state = step(prefix, state)
        if prefix.size(1) - 1 < m and 0 <= eos < scores.size(-1):  # the prefix holds BOS and the tokens so far
            scores = scores.clone()
            scores[:, eos] = float("-inf")
        return scores, state

    return floored


def reorder(state: State, index: Tensor) -> State:
    """Select (and repeat) rows of every batch-first tensor in the state."""
    return {k: v.index_select(0, index) for k, v in state.items()}


def _begin(
    model: Generative,
    src: Tensor,
    src_mask: Tensor | None,
    cache: bool,
    no_repeat_ngram: int,
    min_len: int,
    eos: int,
    normalise: bool,
) -> tuple[State, Stepper]:
    """The generation state and the stepper: scores (log-probabilities if ``normalise``), with repeats and early ends
    pruned.

    Greedy search needs only the argmax, so it skips the normalisation (a softmax over the
    vocabulary at every step); beam search adds log-probabilities across steps and needs it.
    """
    memory = model.encode(src, src_mask)  # (B, L, D)
    step = cached(model) if cache else uncached(model)
    step = log_probs(step) if normalise else step
    return model.start(memory, src_mask, src), min_length(no_repeat(step, no_repeat_ngram), min_len, eos)


@torch.no_grad()
def greedy(
    model: Generative,
    src: Tensor,
    src_mask: Tensor | None,
    *,
    bos: int,
    eos: int,
    max_len: int,
    cache: bool = True,
    no_repeat_ngram: int = 0,
    min_len: int = 0,
) -> list[list[int]]:
    """The most likely next token at every step, for a batch of sources (B, L).

    Args:
        model: an encoder-decoder (``Generative``).
        src, src_mask: source ids (B, L) and padding mask (B, L) | None.
        bos, eos: start and end ids (an ``eos`` never produced, e.g. -1, forces ``max_len`` tokens).
        max_len: most tokens generated per sequence (EOS not counted).
        cache: incremental decoding; False re-runs the prefix each step.
        no_repeat_ngram: n > 0 forbids any n-gram of tokens to occur twice (0: no blocking).
        min_len: fewest tokens generated before EOS may end a sequence (EOS not counted).
    """
    state, step = _begin(model, src, src_mask, cache, no_repeat_ngram, min_len, eos, normalise=False)
    prefix = src.new_full((src.size(0), 1), bos)  # (N, t), N = unfinished rows
    rows = torch.arange(src.size(0), device=src.device)  # original row of each unfinished one
    out: list[list[int]] = [[] for _ in range(src.size(0))]
    for _ in range(max_len):
        scores, state = step(prefix, state)
        token = scores.argmax(dim=-1)  # (N,)
        ended = token == eos
        if ended.any():
            for r in ended.nonzero().flatten().tolist():
                out[int(rows[r])] = prefix[r, 1:].tolist()
            keep = (~ended).nonzero().flatten()
            prefix, token, rows, state = prefix[keep], token[keep], rows[keep], reorder(state, keep)
            if not len(rows):
                return out
        prefix = torch.cat([prefix, token[:, None]], dim=1)
    for r, row in enumerate(rows.tolist()):
        out[row] = prefix[r, 1:].tolist()
    return out


def gnmt_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + |Y|) / 6)^alpha (Wu et al. 2016): a hypothesis' log-probability is divided by it."""
    return ((5 + length) / 6) ** alpha


@torch.no_grad()
def beam_search(
    model: Generative,
    src: Tensor,
    src_mask: Tensor | None,
    *,
    bos: int,
    eos: int,
    max_len: int,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    cache: bool = True,
    no_repeat_ngram: int = 0,
    min_len: int = 0,
) -> list[list[int]]:
    """Beam search for a batch of sources (B, L); the best finished hypothesis per source.

    Each step keeps the ``beam_size`` best unfinished continuations; a hypothesis that ends
    (EOS among the best ``beam_size`` candidates) is set aside with its score divided by the
    length penalty. A source is done when ``beam_size`` hypotheses have ended (as in fairseq),
    or at ``max_len``, when its open beams end there. Beam size 1 is greedy search.

    Args as ``greedy``, plus:
        beam_size: hypotheses kept per source (K).
        length_penalty: GNMT alpha; 0 ranks by log-probability alone, larger favours longer outputs.
    """
    k = beam_size
    state, step = _begin(model, src, src_mask, cache, no_repeat_ngram, min_len, eos, normalise=True)
    n = src.size(0)
    sources = torch.arange(n, device=src.device)  # original index of each unfinished source
    state = reorder(state, sources.repeat_interleave(k))  # (N * K, ...)
    prefix = src.new_full((n * k, 1), bos)
    scores = torch.full((n, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0  # one live beam at the start: identical beams would fill the top K with copies
    ended: list[list[tuple[float, list[int]]]] = [[] for _ in range(n)]
    for _ in range(max_len):
        logp, state = step(prefix, state)  # (N * K, V)
        vocab = logp.size(-1)
        total = (scores[:, :, None] + logp.view(-1, k, vocab)).view(-1, k * vocab)  # (N, K * V)
        top, index = total.topk(2 * k, dim=1)  # (N, 2K): at most K end with EOS, so K others remain
        beam, token = index // vocab, index % vocab
        is_eos = token == eos
        rows = prefix.view(-1, k, prefix.size(1))
        for s, r in (is_eos[:, :k] & torch.isfinite(top[:, :k])).nonzero().tolist():
            hyp = rows[s, int(beam[s, r]), 1:].tolist()
            ended[int(sources[s])].append((top[s, r].item() / gnmt_penalty(len(hyp) + 1, length_penalty), hyp))
        scores, pick = top.masked_fill(is_eos, float("-inf")).topk(k, dim=1)  # (N, K) best unfinished
        origin = (torch.arange(len(sources), device=src.device)[:, None] * k + beam.gather(1, pick)).flatten()
        prefix = torch.cat([prefix[origin], token.gather(1, pick).flatten()[:, None]], dim=1)
        state = reorder(state, origin)
        open_ = torch.tensor([len(ended[s]) < k for s in sources.tolist()], device=src.device)
        if not open_.all():
            keep = open_.nonzero().flatten()
            beams = (keep[:, None] * k + torch.arange(k, device=src.device)).flatten()
            sources, scores, prefix, state = sources[keep], scores[keep], prefix[beams], reorder(state, beams)
            if not len(sources):
                break
    for s, source in enumerate(sources.tolist()):  # max_len reached: open beams end here
        for b in range(k):
            if torch.isfinite(scores[s, b]):
                hyp = prefix[s * k + b, 1:].tolist()
                ended[source].append((scores[s, b].item() / gnmt_penalty(len(hyp), length_penalty), hyp))
    return [max(hyps, key=lambda h: h[0])[1] for hyps in ended]
