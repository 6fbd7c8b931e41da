"""State tracking beyond a running sum: a group's word problem, a one-bit memory, a bounded stack.

Each generator follows the diagnostic contract of tasks/capabilities/base.py (a causal model reads the tokens; where a
position has a target, the model's output there must be that answer id). Id 0 pads; input and answer ids lie in
disjoint ranges, laid out in each class's docstring. The defaults (conf/task/capability/<name>.yaml) train at a length
L of 16-64 and test at 2L and 4L, sized for a 2-layer model of width 64-128 trained for 1000-2000 steps at batch 64 on
a CPU: the papers train on GPUs, at longer lengths (flip-flop: 512) or on far more sequences (S5), for far more steps.

* ``WordProblem`` (``s5``): the word problem of a finite group, as Merrill, Petty and Sabharwal 2024 ("The Illusion
  of State in State-Space Models"; their generator is github.com/jopetty/word-problem): each token an element of the
  group drawn uniformly, the target at every position the product of the prefix. For S5 and A5 (non-solvable) it is
  NC1-complete (Barrington 1989): unless TC0 = NC1, no fixed-depth Transformer or linear/diagonal SSM (both in TC0)
  tracks it at every length, while a one-layer RNN can. ``group``: ``s<n>`` (the symmetric group, 2 <= n <= 6),
  ``a<n>`` (the alternating group, the even permutations, 3 <= n <= 6) or ``z<n>`` (the cyclic group, 2 <= n <= 720):
  ``a5`` and ``z60`` are two of the 60-element comparisons Merrill et al. set beside S5 (their A4 x Z5 is not here).
  Composition order: a permutation p is the tuple of images, p[x] the image of x; (q o p)[x] = q[p[x]]; the state
  after reading g_1 .. g_i is g_i o ... o g_1 (g_1 acts first). Z_n is the group of rotations x -> x + k (mod n), so
  every group's elements are permutations, composed one way.
* ``FlipFlop`` (``flip_flop``): flip-flop language modelling, as Liu et al. 2023 ("Exposing Attention Glitches with
  Flip-Flop Language Modeling"): pairs (instruction, bit); ``w b`` writes b, ``i b`` is ignored, ``r b`` reads: b equals
  the last written bit. The first instruction is a write and the last a read (so every sequence has an answer); the
  others are ignores with probability ``p_ignore`` and otherwise writes or reads with equal odds; written and ignored
  bits are uniform. Scored at each read instruction's position: the model must name the bit that follows it. Liu et
  al. train at p_ignore = 0.8 and test that model also at 0.98 (sparse: long gaps) and 0.1 (dense); the contract draws
  every split from one generator, so one config tests at its training distribution (see the config's comment).
* ``Dyck`` (``dyck``): prefixes of Dyck-2 strings of bounded depth (Hewitt et al. 2020's Dyck-(k, m) with k = 2 bracket
  types; also Suzgun et al. 2019, Bhattamishra et al. 2020, Yao et al. 2021). At every position the target is the
  pair (depth, type of the innermost open bracket), or 'empty' at depth 0: what a depth-bounded recogniser needs to
  decide the next symbol (which closer is legal, whether an opener still is, whether the string may end). A counter
  gets the depth but not the type once a bracket closes (the new innermost one was opened arbitrarily far back), and
  the targets along a sequence determine its whole stack, so being right everywhere means tracking the stack.

What differs from the papers, and why. S5: one training length, every position scored (as Merrill et al.; a causal
model's answer at position j reads a j-long prefix, so the shorter lengths they add to training are in it), on far
fewer sequences. Flip-flop: scored on the reads only (Liu et al. train a next-token loss on every token, most of them
coin flips, and evaluate at the reads), answers in ids of their own (the contract's layout), no sparse / dense test
(one generator a task). Dyck: prefixes rather than complete strings (the state is defined at every prefix, and closing
every string would skew the last positions toward closers), scored on the recogniser state rather than Hewitt et al.'s
next-token distribution (one answer a position, as the contract scores); Delétang et al. 2023's suite has no Dyck task
(its context-free tasks are stack manipulation, reversal, bracketed arithmetic and equation solving). Every length is
scaled down for a CPU (the configs say from what).
"""

from __future__ import annotations

import itertools
import random
import re

from tasks.capabilities.base import Example

Permutation = tuple[int, ...]  # p[x]: the image of x
GROUP = re.compile(r"([saz])(\d+)")
ORDERS = {"s": (2, 6), "a": (3, 6), "z": (2, 720)}  # n: S_7 would hold 5040 elements (answer ids), A_2 just one


def compose(q: Permutation, p: Permutation) -> Permutation:
    """q o p: p acts first, (q o p)[x] = q[p[x]]."""
    return tuple(q[y] for y in p)


def group_elements(group: str) -> list[Permutation]:
    """The elements of ``group`` (s<n>, a<n>, z<n>) as permutations of range(n), the identity first.

    S_n and A_n in lexicographic order; Z_n as rotations, element k the rotation by k."""
    match = GROUP.fullmatch(group) if isinstance(group, str) else None
    limits = ", ".join(f"{f}<n> ({lo} <= n <= {hi})" for f, (lo, hi) in ORDERS.items())
    if match is None or not ORDERS[match[1]][0] <= int(match[2]) <= ORDERS[match[1]][1]:
        raise ValueError(f"word_problem: task.generator.group must be one of {limits}, got {group!r}")
    family, n = match[1], int(match[2])
    if family == "z":
        return [tuple((x + k) % n for x in range(n)) for k in range(n)]
    perms = list(itertools.permutations(range(n)))
    if family == "a":  # even: an even number of inversions
        perms = [p for p in perms if sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n)) % 2 == 0]
    return perms


class WordProblem:
    """A group's elements as ids 1..N, the prefix products as ids N+1..2N (0 pads; N = |G|, 120 for S5).

    Args:
        group: 's5' (Merrill et al.'s hard case), 'a5', 'z60', or any s<n>, a<n>, z<n> (see the module).
    """

    def __init__(self, group: str = "s5") -> None:
        self.elements = group_elements(group)
        self.index = {p: i for i, p in enumerate(self.elements)}
        self.group = self.name = group
        self.vocab = 1 + 2 * len(self.elements)

    def check(self, length: int) -> None:
        if length < 1:
            raise ValueError(f"{self.name}: task.seq_len must be >= 1, got {length}")

    def example(self, rng: random.Random, length: int) -> Example:
        n = len(self.elements)
        drawn = [rng.randrange(n) for _ in range(length)]
        targets, state = [], self.elements[0]
        for i in drawn:
            state = compose(self.elements[i], state)  # the new element acts after the prefix
            targets.append(1 + n + self.index[state])
        return [1 + i for i in drawn], targets


WRITE, IGNORE, READ = 1, 2, 3  # instruction ids
BIT = 4  # bit b as input: id 4 + b
ANSWER = 6  # bit b as the answer at a read instruction: id 6 + b


class FlipFlop:
    """Instructions as ids 1-3 (write, ignore, read), bits as ids 4-5, answers (the read bit) as ids 6-7 (0 pads).

    A sequence of length L is L/2 (instruction, bit) pairs; the target sits on each read instruction.

    Args:
        p_ignore: probability an instruction (other than the first and last) is an ignore, in [0, 1]; the rest split
            evenly between writes and reads (Liu et al.'s FFL(p): 0.8 to train; 0.98 sparse, 0.1 dense).
    """

    name = "flip_flop"
    vocab = 8

    def __init__(self, p_ignore: float = 0.8) -> None:
        if isinstance(p_ignore, bool) or not isinstance(p_ignore, (int, float)) or not 0 <= p_ignore <= 1:
            raise ValueError(f"flip_flop: task.generator.p_ignore must be a probability in [0, 1], got {p_ignore!r}")
        self.p_ignore = float(p_ignore)

    def check(self, length: int) -> None:
        if length < 4 or length % 2:
            raise ValueError(
                f"flip_flop: a length (task.seq_len, task.test_lengths) must be even and >= 4 (instruction-bit "
                f"pairs, a write first and a read last), got {length}"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        n = length // 2
        tokens, targets, memory = [], [], 0
        for k in range(n):
            if k == 0:
                op = WRITE
            elif k == n - 1:
                op = READ
            else:
                u = rng.random()
                op = IGNORE if u < self.p_ignore else WRITE if u < (1 + self.p_ignore) / 2 else READ
            if op == READ:
                bit = memory
            else:
                bit = rng.randrange(2)
                memory = bit if op == WRITE else memory
            tokens += [op, BIT + bit]
            targets += [ANSWER + bit if op == READ else -1, -1]  # scored on the instruction: the next token is b
        return tokens, targets


BRACKETS = ((1, 2), (3, 4))  # (opener, closer) ids of type 0 '(' ')' and type 1 '[' ']'
EMPTY = 5  # the answer at depth 0; depth d >= 1 with the innermost bracket of type t: 6 + 2 (d - 1) + t


class Dyck:
    """Brackets as ids 1-4 ('(' ')' '[' ']'), answers as ids 5..5+2m (5: empty; 6 + 2 (d - 1) + t: depth d, innermost
    type t), 0 pads; m = ``max_depth``.

    Each position: at depth 0 an opener, at depth m a closer (of the innermost type), otherwise an opener with
    probability ``p_open``; openers of either type with equal odds. Every sequence is a valid prefix (not necessarily
    a complete string) whose depth never exceeds m.

    Args:
        max_depth: m >= 1, at most the length.
        p_open: probability of opening where both moves are legal, in (0, 1).
    """

    name = "dyck"

    def __init__(self, max_depth: int = 4, p_open: float = 0.5) -> None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"dyck: task.generator.max_depth must be an integer >= 1, got {max_depth!r}")
        if isinstance(p_open, bool) or not isinstance(p_open, (int, float)) or not 0 < p_open < 1:
            raise ValueError(f"dyck: task.generator.p_open must be a probability in (0, 1), got {p_open!r}")
        self.max_depth, self.p_open = max_depth, float(p_open)
        self.vocab = EMPTY + 1 + 2 * max_depth

    def check(self, length: int) -> None:
        if self.max_depth > length:
            raise ValueError(
                f"dyck: task.generator.max_depth={self.max_depth} is beyond the length {length} (task.seq_len, "
                f"task.test_lengths): {length} brackets never reach that depth; lower max_depth or raise task.seq_len"
            )

    def example(self, rng: random.Random, length: int) -> Example:
        tokens, targets, stack = [], [], []  # stack: the open brackets' types, innermost last
        for _ in range(length):
            if stack and (len(stack) == self.max_depth or rng.random() >= self.p_open):
                tokens.append(BRACKETS[stack.pop()][1])
            else:
                stack.append(rng.randrange(2))
                tokens.append(BRACKETS[stack[-1]][0])
            targets.append(EMPTY + 1 + 2 * (len(stack) - 1) + stack[-1] if stack else EMPTY)
        return tokens, targets
