"""Recall: tasks whose answer is a value shown earlier in the same sequence beside its key, so a model must look it up.

The recall family of the MAD synthetic tasks (Poli et al. 2024, "Mechanistic Design and Scaling of Hybrid
Architectures", github.com/athms/mad-lab), in MAD's multi-query form (``multi_query: True``, its baseline). Associative
recall goes back to Graves et al. 2014 and Ba et al. 2016; Zoology's MQAR (Arora et al. 2023; ``tasks/mqar.py``) is the
variant whose pairs come first and queries after; here queries and pairs are one stream, as in MAD.

* ``InContextRecall`` (``in_context_recall``): pairs ``k v k v ...``; each key is drawn uniformly from ``n_keys``, and
  its value, drawn uniformly from ``n_values`` at the key's first occurrence, is the same at every later one (a new
  mapping each sequence). Every occurrence of a key seen before is scored: at the key's position the next token must
  be its value. The last pair is a probe, a key seen before (MAD's), so every sequence has an answer.
* ``FuzzyRecall`` (``fuzzy_recall``): keys are spans of 1..``max_key_len`` distinct key tokens and values spans of
  1..``max_value_len`` distinct value tokens (MAD's "motifs": ordered draws without repetition). A recurring key's value
  span is scored token by token: at the key's last token the next token must be the value's first, at each value token
  but the last the next value token. Its first occurrence, its key tokens and the token after its value (the next key,
  random) are not scored.
* ``NoisyRecall`` (``noisy_recall``): in-context recall where each slot before the probe is, with probability ``noise``,
  two noise tokens (from a vocabulary of their own) instead of a pair (MAD's ``frac_noise``); one slot is always a pair,
  so the probe has a key to recall. Noise is never scored.

Ids (0 the padding): keys ``1..n_keys``, values ``n_keys+1..n_keys+n_values``, noise ``n_keys+n_values+1..
n_keys+n_values+n_noise``. Only fuzzy recall pads (at the start, fewer than ``2 * (max_key_len + max_value_len)``
tokens), as MAD does: its pairs do not fill a length exactly.

As in MAD, the last position may be scored on a token the sequence does not show: the tokens are the first ``length``
of a stream that ends with the probe (at an odd length the plain tasks end on the probe's key, fuzzy recall always
cuts the probe's last value token).

Where this differs from MAD, and why:

* MAD trains on every next token and scores only the recalled values; the diagnostic contract (``base.py``) trains and
  scores the same positions, so here the loss is on the recalled values alone. The other tokens are random (a key, a
  first value) and carry no signal, so the learning problem is the same; the loss's scale is not.
* Keys and values each have their own vocabulary size (``n_keys``, ``n_values``) where MAD splits one ``vocab_size``
  in half (fuzzy recall: its ``vocab_size - 1`` non-special ids, 7 keys and 8 values at 16).
* Fuzzy recall: within a sequence a key's length is set by its first token (drawn per sequence, uniform in
  1..``max_key_len``), so no key is a prefix of another. MAD draws each pair's key length afresh, so a key ``a`` and a
  longer key ``a b`` can share a sequence, and the first value token after ``a`` is then not determined by the tokens
  before it (MAD's test set sidesteps this by prompting with keys of the longest length only). Here every scored
  token is determined, and the splits share one distribution (MAD's test keys are all of the longest length).
* Fuzzy recall's probe is a key of the sequence chosen again at the end (MAD draws it first and places it at a random
  point of the sequence too); the effect, one answer at least a sequence, is the same. It has no noise (MAD's
  baseline has none).
* A sequence is ``seq_len`` tokens (MAD reads ``seq_len - 1``: its stream of ``seq_len`` less the last token). MAD's
  slot kept free of noise is drawn from one slot more than there are, so now and then none is kept (and a sequence of
  noise alone fails); here one always is.

Sizes: MAD's baselines are 128 tokens, 12,800 training sequences and a vocabulary of 16 (noisy recall: 16 and 16
noise). The configs (conf/task/capability/) keep MAD's vocabularies and training set and halve the length to 64 (half
the time a step on a CPU). There a 2-layer Transformer 128 wide (lr 1e-3, no dropout, batch 64) learnt each task to
about 0.99 in 600 steps, its recall arriving suddenly after 200 to 300 (induction heads); 64 wide it had not left the
plateau below by step 600 (in-context recall), nor had a 2-layer LSTM (128 wide on each task, 64 on in-context
recall). The plateau, 0.31-0.33, is what a model that has not learnt recall gets: guessing the value seen most often
so far scores 0.34 in in-context recall at these sizes (chance is 1/8).
"""

from __future__ import annotations

import random

from tasks.capabilities.base import Example, knob


class InContextRecall:
    """Keys as ids 1..K, values K+1..K+V (0 pads, unused here).

    Args:
        n_keys: K >= 1, the keys a sequence draws from (with replacement).
        n_values: V >= 2, the values a key may map to (one value would need no recall).
    """

    name = "in_context_recall"

    def __init__(self, n_keys: int = 8, n_values: int = 8) -> None:
        self.n_keys = knob(n_keys, 1, "n_keys", self.name)
        self.n_values = knob(n_values, 2, "n_values", self.name)
        self.n_noise, self.noise = 0, 0.0
        self.vocab = 1 + self.n_keys + self.n_values

    def check(self, length: int) -> None:
        # a pair, then the probe's key: k v k (the probe's value is the last position's target)
        if length < 3:
            raise ValueError(f"{self.name}: task.seq_len={length} cannot hold a pair and its recall (at least 3)")

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (length,), and at a recurring key's position its value (-1 elsewhere)."""
        slots = (length + 1) // 2  # pairs (or noise) of the stream of length + 1 tokens; the last is the probe
        first_value, noise_base = 1 + self.n_keys, 1 + self.n_keys + self.n_values
        kept = rng.randrange(slots - 1) if self.noise > 0 else -1  # the slot that is a pair whatever the noise
        mapping: dict[int, int] = {}
        tokens: list[int] = []
        targets: list[int] = []
        for slot in range(slots):
            if slot < slots - 1 and slot != kept and self.noise > 0 and rng.random() < self.noise:
                tokens += [noise_base + rng.randrange(self.n_noise) for _ in range(2)]  # two, a pair's size (MAD)
                targets += [-1, -1]
                continue
            # the probe recalls a key seen before (insertion order: the same seed, the same sequence)
            key = rng.choice(list(mapping)) if slot == slots - 1 else 1 + rng.randrange(self.n_keys)
            seen = key in mapping
            if not seen:
                mapping[key] = first_value + rng.randrange(self.n_values)
            tokens += [key, mapping[key]]
            targets += [mapping[key] if seen else -1, -1]
        return tokens[:length], targets[:length]


class NoisyRecall(InContextRecall):
    """In-context recall with noise: keys 1..K, values K+1..K+V, noise K+V+1..K+V+N (0 pads, unused).

    Args:
        n_keys, n_values: as ``InContextRecall``.
        n_noise: N >= 1, the noise tokens.
        noise: the chance in [0, 1) that a slot before the probe is two noise tokens rather than a pair (MAD's
            ``frac_noise``); about this share of the tokens is noise.
    """

    name = "noisy_recall"

    def __init__(self, n_keys: int = 8, n_values: int = 8, n_noise: int = 16, noise: float = 0.2) -> None:
        super().__init__(n_keys, n_values)
        self.n_noise = knob(n_noise, 1, "n_noise", self.name)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise < 1:
            raise ValueError(
                f"{self.name}: task.generator.noise must be in [0, 1) (a share of the slots), got {noise!r}"
            )
        self.noise = float(noise)
        self.vocab = 1 + self.n_keys + self.n_values + self.n_noise


class FuzzyRecall:
    """Keys as spans of ids 1..K, values as spans of K+1..K+V (0 pads the start).

    Args:
        n_keys: K, the key tokens (at least ``max_key_len``: a key's tokens are distinct, as MAD's).
        n_values: V, the value tokens (at least ``max_value_len``, and 2).
        max_key_len, max_value_len: the longest key and value spans (>= 1); lengths are uniform from 1.
    """

    name = "fuzzy_recall"

    def __init__(self, n_keys: int = 8, n_values: int = 8, max_key_len: int = 3, max_value_len: int = 3) -> None:
        self.max_key_len = knob(max_key_len, 1, "max_key_len", self.name)
        self.max_value_len = knob(max_value_len, 1, "max_value_len", self.name)
        self.n_keys = knob(n_keys, 1, "n_keys", self.name)
        self.n_values = knob(n_values, 2, "n_values", self.name)
        for tokens, setting, longest, span in ((n_keys, "n_keys", max_key_len, "key"),
                                               (n_values, "n_values", max_value_len, "value")):  # fmt: skip
            if tokens < longest:
                raise ValueError(
                    f"{self.name}: task.generator.{setting}={tokens} is fewer than task.generator.max_{span}_len="
                    f"{longest}: a {span} span's tokens are distinct"
                )
        self.vocab = 1 + self.n_keys + self.n_values

    @property
    def longest_pair(self) -> int:
        return self.max_key_len + self.max_value_len

    def check(self, length: int) -> None:
        # a longest pair, and room for a longest probe after it: the stream is length + 1 tokens
        least = 2 * self.longest_pair - 1
        if length < least:
            raise ValueError(
                f"{self.name}: task.seq_len={length} cannot hold a pair and its recall at task.generator.max_key_len="
                f"{self.max_key_len} and task.generator.max_value_len={self.max_value_len} (at least {least})"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        """Tokens (length,), and before each token of a recurring key's value that token (-1 elsewhere)."""
        # a key's length is fixed by its first token in this sequence: no key is a prefix of another
        key_len = [rng.randint(1, self.max_key_len) for _ in range(self.n_keys)]
        mapping: dict[tuple[int, ...], tuple[int, ...]] = {}
        stream: list[int] = []
        targets: list[int] = []

        def pair(key: tuple[int, ...]) -> None:
            seen = key in mapping
            if not seen:
                size = rng.randint(1, self.max_value_len)
                mapping[key] = tuple(1 + self.n_keys + v for v in rng.sample(range(self.n_values), size))
            value = mapping[key]
            stream.extend(key + value)
            # position i is scored on the token at i + 1: the key's last token on value[0], value[j] on value[j + 1]
            targets.extend([-1] * (len(key) - 1) + ([*value, -1] if seen else [-1] * (len(value) + 1)))

        # pairs while a longest pair and a longest probe still fit the stream's length + 1 tokens (MAD's rule)
        while len(stream) + 2 * self.longest_pair <= length + 1:
            first = rng.randrange(self.n_keys)
            rest = rng.sample([t for t in range(self.n_keys) if t != first], key_len[first] - 1)
            pair(tuple(1 + t for t in (first, *rest)))
        pair(rng.choice(list(mapping)))  # the probe: a key of the sequence again
        pad = length + 1 - len(stream)
        return ([0] * pad + stream)[:length], ([-1] * pad + targets)[:length]
