"""``job=generate``: text from a trained language model, from prompts on the command line or test-set prefixes.

    python -m suite.run task=language_model job=generate job.checkpoint=<run dir>/checkpoints/best.pt \\
        'job.prompts=[The government said]' job.sampling.top_p=0.9
    python -m suite.run task=language_model model=lstm job=generate      # trains first, then samples

Every sample goes to ``samples.jsonl`` in the run directory (one JSON object a line) and to the
run's W&B table ``samples``. Each prompt is read as the start of a document ([EOS] before it, as
in training). A prompt that does not fit the context with the new tokens is cut from the left,
with a warning; an empty prompt, or sampling settings out of range, are errors.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from suite.generation.sampling import Sampling, cut_at, fit_to_context, generate
from suite.jobs.checkpoint_or_train import trained_model
from suite.runtime.device import sync
from suite.runtime.tracking import Tracker
from suite.types import LanguageTask

log = logging.getLogger("suite.jobs.generate")
SAMPLES_FILE = "samples.jsonl"
TABLE_COLUMNS = ["source", "sample", "prompt", "output", "reference"]


def command_line_prompts(task: LanguageTask, prompts: str | list[str]) -> list[dict[str, Any]]:
    """Prompts given as text -> [{'source', 'ids', 'reference'}]; an empty one is an error."""
    texts = [prompts] if isinstance(prompts, str) else list(prompts)
    if not texts:
        raise ValueError(
            "job.prompts is an empty list: give at least one prompt, or job.prompts=null to continue test-set prefixes"
        )
    for i, text in enumerate(texts):
        if not str(text).strip():
            raise ValueError(
                f"prompt {i} is empty: give some text to continue (job.prompts=null continues "
                "test-set prefixes instead)"
            )
    return [{"source": "command line", "ids": task.encode(str(text)), "reference": None} for text in texts]


def test_prefixes(task: LanguageTask, n: int, prompt_tokens: int, reference_tokens: int) -> list[dict[str, Any]]:
    """The first ``prompt_tokens`` tokens of the first ``n`` test documents long enough, with their true
    continuations."""
    if prompt_tokens < 1:
        raise ValueError(f"job.prompt_tokens must be >= 1, got {prompt_tokens}")
    out = []
    for k, text in enumerate(task.documents("test")):
        ids = task.encode(text)
        if len(ids) > prompt_tokens:
            out.append(
                {
                    "source": f"test document {k}",
                    "ids": ids[:prompt_tokens],
                    "reference": task.decode(ids[prompt_tokens : prompt_tokens + reference_tokens]),
                }
            )
        if len(out) == n:
            break
    return out


def generate_job(
    cfg: DictConfig,
    device: torch.device,
    run_dir: Path,
    tracker: Tracker,
    sampling: Sampling,
    checkpoint: str | None = None,
    prompts: str | list[str] | None = None,
    test_prompts: int = 3,
    prompt_tokens: int = 32,
    num_samples: int = 1,
    max_new_tokens: int = 100,
    cache: bool = True,
) -> dict[str, Any]:
    """Generate ``num_samples`` continuations of each prompt; returns the record's fields.

    Args:
        sampling: greedy or sampled, with temperature, top-k, top-p (``suite.generation.sampling.Sampling``).
        checkpoint: a training run's ``checkpoints/best.pt`` (composed with that run's overrides);
            None trains the configured model first.
        prompts: text(s) to continue; None continues test-set prefixes.
        test_prompts, prompt_tokens: how many test documents, and how many of their first tokens.
        num_samples: continuations per prompt.
        max_new_tokens: at most this many tokens each (fewer when a document ends: [EOS]).
        cache: decode with the model's state (False re-reads the whole text for every token).
    """
    if num_samples < 1:
        raise ValueError(f"job.num_samples must be >= 1, got {num_samples}")
    task, model, fields = trained_model(cfg, device, run_dir, tracker, checkpoint, job="generate")
    todo = (
        command_line_prompts(task, prompts)
        if prompts is not None
        else test_prefixes(task, test_prompts, prompt_tokens, max_new_tokens)
    )
    generator = torch.Generator(device=device).manual_seed(int(cfg.seed))
    rows, tokens, seconds = [], 0, 0.0
    for item in todo:
        ids, dropped = fit_to_context([task.eos_id(), *item["ids"]], max_new_tokens, task.seq_len(), keep_first=1)
        prompt = torch.tensor([ids] * num_samples, device=device)  # (S, P)
        sync(device)
        start = time.perf_counter()
        new = generate(model, prompt, max_new_tokens, sampling, cache=cache, eos=task.eos_id(), generator=generator)
        sync(device)
        seconds += time.perf_counter() - start
        tokens += new.numel()  # every token computed, those after a row's end included
        for j, out in enumerate(new.tolist()):
            out = cut_at(out, task.eos_id())
            rows.append(
                {
                    "source": item["source"],
                    "sample": j,
                    "prompt": task.decode(ids),
                    "output": task.decode(out),
                    "reference": item["reference"],
                    "prompt_tokens": len(ids) - 1,
                    "dropped_prompt_tokens": dropped,
                    "new_tokens": len(out),
                }
            )
            log.info("%s, sample %d: %r -> %r", item["source"], j, rows[-1]["prompt"][-80:], rows[-1]["output"][:200])
    path = Path(run_dir) / SAMPLES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    tracker.table("samples", TABLE_COLUMNS, [[row[c] for c in TABLE_COLUMNS] for row in rows])
    # one pass, no warm-up: how long this sampling took, not a benchmark figure (job=generation_cost times generation)
    speed = {**fields.get("speed", {}), "sample_tokens_per_s": tokens / max(seconds, 1e-9)}
    return {**fields, "speed": speed, "artifacts": [*fields.get("artifacts", []), SAMPLES_FILE]}
