"""Sampling and ``job=generate``: settings out of range are named, the filters keep what they should,
a long prompt is cut from the left with a warning, nothing runs past the context, and the job
writes its samples (command-line prompts and test-set prefixes) or names what is wrong."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from suite.generation.sampling import Sampling, choose, fit_to_context, generate, top_k_filter, top_p_filter
from suite.jobs.generate import command_line_prompts
from suite.run import execute
from tests.conftest import LM_VOCAB as V
from tests.conftest import TINY_LM, compose_config, shrink, tiny_lm


def run(tmp_path: Path, data: Path, *overrides: str):
    return execute(shrink(compose_config("task=language_model", f"data_dir={data}", *TINY_LM, *overrides)), tmp_path)


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(temperature=0.0), "temperature > 0"),
        (dict(temperature=-1.0), "temperature > 0"),
        (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
        (dict(top_p=1.5), r"top_p must be in \(0, 1\]"),
        (dict(top_k=0), "top_k must be an integer >= 1"),
        (dict(strategy="beam"), "strategy must be one of"),
    ],
)
def test_bad_sampling_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        Sampling(**settings)


def test_greedy_ignores_the_temperature_and_filters_keep_what_they_should():
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    assert choose(logits, Sampling("greedy", temperature=0.0)).tolist() == [1]  # accepted, and no division by it
    assert torch.isinf(top_k_filter(logits, 2)).tolist() == [[True, False, False, True]]
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    assert torch.isinf(top_p_filter(probs, 0.8)).tolist() == [[False, False, True, True]]
    assert torch.isinf(top_p_filter(probs, 0.01)).tolist() == [[False, True, True, True]]  # never empty
    assert choose(logits, Sampling("greedy")).tolist() == [1]
    draws = {choose(logits, Sampling(top_k=1), torch.Generator().manual_seed(s)).item() for s in range(5)}
    assert draws == {1}


def test_a_long_prompt_is_cut_from_the_left_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="suite.generation.sampling"):
        ids, dropped = fit_to_context([3, *range(10, 30)], 6, 16, keep_first=1)
    assert dropped == 11 and ids == [3, *range(21, 30)] and len(ids) + 6 == 16  # the start marker stays
    assert "first 11 tokens are dropped" in caplog.text
    assert fit_to_context([3, 10], 6, 16, keep_first=1) == ([3, 10], 0)
    with pytest.raises(ValueError, match="no room for a prompt"):
        fit_to_context([3, 10], 16, 16, keep_first=1)


def test_generation_never_runs_past_the_context_or_from_nothing():
    net = tiny_lm("transformer", context=16)
    with pytest.raises(ValueError, match="run past the model's context of 16"):
        generate(net, torch.randint(4, V, (1, 10)), 7, Sampling("greedy"))
    with pytest.raises(ValueError, match="length >= 1"):
        generate(net, torch.zeros(1, 0, dtype=torch.long), 3, Sampling("greedy"))


def test_an_empty_prompt_is_named():
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        command_line_prompts(None, ["Shares rose", "   "])
    with pytest.raises(ValueError, match="empty list"):
        command_line_prompts(None, [])


def test_generate_job_writes_samples_and_handles_long_prompts(tmp_path, bbc_dir, caplog):
    trained = run(tmp_path / "train", bbc_dir, "model=transformer")
    assert trained.status == "ok", trained.error
    checkpoint = tmp_path / "train" / "checkpoints" / "best.pt"
    long_prompt = "the minister said " * 20
    with caplog.at_level(logging.WARNING, logger="suite.generation.sampling"):
        record = run(
            tmp_path / "gen",
            bbc_dir,
            "model=transformer",
            "job=generate",
            f"job.checkpoint={checkpoint}",
            f"job.prompts=[shares rose,{long_prompt}]",
            "job.num_samples=2",
            "job.max_new_tokens=6",
        )
    assert record.status == "ok", record.error
    assert (
        record.artifacts == ["samples.jsonl"]
        and record.speed["sample_tokens_per_s"] > 0
        and "generate_tokens_per_s" not in record.speed
        and record.stop_reason == "evaluated"
    )
    rows = [json.loads(line) for line in (tmp_path / "gen" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["sample"] for r in rows} == {0, 1}
    assert rows[0]["prompt"] == "shares rose" and rows[0]["dropped_prompt_tokens"] == 0 and rows[0]["new_tokens"] <= 6
    assert rows[2]["dropped_prompt_tokens"] > 0 and rows[2]["prompt_tokens"] + 1 + 6 == 16 and "dropped" in caplog.text
    prefixes = run(
        tmp_path / "prefix",
        bbc_dir,
        "model=transformer",
        "job=generate",
        f"job.checkpoint={checkpoint}",
        "job.test_prompts=2",
        "job.prompt_tokens=5",
        "job.max_new_tokens=4",
    )
    rows = [json.loads(line) for line in (tmp_path / "prefix" / "samples.jsonl").read_text().splitlines()]
    assert (
        prefixes.status == "ok"
        and len(rows) == 2
        and all(r["reference"] and r["source"].startswith("test document") for r in rows)
    )


@pytest.mark.parametrize(
    "override, message",
    [
        ("job.prompts=[' ']", "prompt 0 is empty"),
        ("job.sampling.temperature=0", "temperature > 0"),
        ("job.sampling.top_p=2", "top_p must be in"),
        ("job.max_new_tokens=16", "no room for a prompt"),
    ],
)
def test_generate_job_names_bad_input(override, message, tmp_path, bbc_dir):
    trained = run(tmp_path / "train", bbc_dir, "model=lstm")
    record = run(
        tmp_path / "gen",
        bbc_dir,
        "model=lstm",
        "job=generate",
        f"job.checkpoint={tmp_path / 'train' / 'checkpoints' / 'best.pt'}",
        "job.prompts=[hello]",
        override,
    )
    assert trained.status == "ok" and record.status == "failed" and message in record.error


def test_generate_job_refuses_another_task(tmp_path):
    record = execute(shrink(compose_config("task=long_range", "job=generate")), tmp_path)
    assert record.status == "failed" and "needs a language-modelling task" in record.error
