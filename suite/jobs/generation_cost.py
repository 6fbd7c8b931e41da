"""``job=generation_cost``: what one more generated token costs as the text grows.

For each length t, the model reads t tokens and keeps its decoding state: a Transformer with full
attention its keys and values (growing with t), with ``linear`` attention its running sums
(constant), with ``local`` attention its last window (bounded), an RNN its hidden state (constant).
Then one more token is timed with that state (median of timed calls through ``suite.measure.timing``),
beside the same token computed without it (the model re-run over all t + 1 tokens); the state's
bytes and the step's peak memory are recorded too. Finally the headline: tokens per second
generating ``compare_tokens`` tokens greedily from a short prompt, with the state and without.

Weights are random (speed does not depend on them) and nothing is read from disk.

    python -m suite.run -m experiment=generation_cost
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from suite.generation.sampling import Sampling, generate
from suite.measure.harness import generation_speed
from suite.measure.memory import peak_memory
from suite.measure.timing import time_calls
from suite.models.classifier import count_parameters
from suite.models.language_model import build_language_model
from suite.runtime import numerics
from suite.runtime.tracking import Tracker
from suite.types import State


def state_bytes(state: State) -> int:
    """Bytes held by a decoding state."""
    return sum(t.numel() * t.element_size() for t in state.values())


def generation_cost_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    lengths: list[int] = (64, 128, 256, 512, 1024, 2048),
    batch_size: int = 1,
    vocab_size: int = 4000,
    prompt_tokens: int = 16,
    compare_tokens: int = 256,
    warmup: int = 2,
    repeats: int = 5,
    min_time_s: float = 1.0,
    precision: str = "auto",
) -> dict[str, Any]:
    """Per-token time and memory against the length of the text so far, and cached against uncached generation.

    Args:
        lengths: tokens already read when the next one is timed.
        batch_size: texts generated side by side.
        vocab_size: V of the randomly initialised model.
        prompt_tokens, compare_tokens: the headline's prompt and the tokens it generates.
        warmup, repeats, min_time_s: timing (``suite.measure.timing.time_calls``) at each length.
        precision: autocast of the timed calls: 'auto', 'fp32' or 'bf16'.
    """
    lengths = sorted(int(t) for t in lengths)
    context = max(lengths[-1], prompt_tokens + compare_tokens) + 1
    model = build_language_model(cfg.model, vocab_size, context).to(device).eval()
    choice = numerics.choose(precision, device, model)
    precision = choice.precision
    text = torch.randint(
        4, vocab_size, (batch_size, context), generator=torch.Generator().manual_seed(int(cfg.seed))
    ).to(device)
    curves: dict[str, list[float]] = {
        k: []
        for k in (
            "length",
            "step_ms",
            "step_iqr_ms",
            "tokens_per_s",
            "uncached_step_ms",
            "state_bytes",
            "peak_step_bytes",
        )
    }
    with torch.inference_mode(), numerics.autocast(precision, device):
        for t in lengths:
            _, state = model.step(text[:, :t], 0, {})
            cached = lambda: model.step(text[:, t : t + 1], t, state)  # noqa: E731 - the state is not changed: each call is the same step
            uncached = lambda: model.next_logits(text[:, : t + 1])  # noqa: E731
            # Timed apart, not interleaved: an uncached call at length t writes (B, t, V) logits, which evicts the
            # weights from the caches, and a cached step after it then paid for the reload (a constant-state LSTM's
            # step seemed to double from 64 to 2,048 tokens); in a generation loop cached steps follow each other.
            timing = dict(warmup=warmup, repeats=repeats, min_seconds=min_time_s)
            times = {
                **time_calls({"cached": cached}, device, **timing),
                **time_calls({"uncached": uncached}, device, **timing),
            }
            curves["length"].append(float(t))
            curves["step_ms"].append(times["cached"].median * 1e3)
            curves["step_iqr_ms"].append(times["cached"].spread * 1e3)
            curves["tokens_per_s"].append(batch_size / times["cached"].median)
            curves["uncached_step_ms"].append(times["uncached"].median * 1e3)
            curves["state_bytes"].append(float(state_bytes(cached()[1])))
            curves["peak_step_bytes"].append(float(peak_memory(cached, device)))
        prompt, greedy = text[:, :prompt_tokens], Sampling("greedy")
        # the same headline as job=speed's for sequence-to-sequence models (its keys: generate_*)
        speed = generation_speed(
            lambda cache: generate(model, prompt, compare_tokens, greedy, cache=cache).tolist(),
            device,
            warmup=1,
            repeats=max(1, repeats // 2),
            min_time_s=min_time_s,
        )
    speed["compare_tokens"] = float(compare_tokens)
    tracker.summary({f"generation/{k}": v for k, v in speed.items()})
    return {
        "status": "ok",
        "dataset": str(cfg.task.get("dataset", "")),
        "seq_len": lengths[-1],
        "params": count_parameters(model),
        "speed": speed,
        "curves": curves,
        "steps": 0,
        **choice.fields(),
    }
