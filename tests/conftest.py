"""Shared fixtures: the real Hydra config composed at tiny size, and the data directory.

Tests that need ``data/`` skip when it is absent on a developer machine, but fail in CI
(``CI=true``): there a skip would hide a broken set-up.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest
import torch
from omegaconf import DictConfig, open_dict

from suite.data.datadir import data_root
from suite.runtime import numerics
from suite.runtime.compose import composed

# As every run of the suite does, before any thread pool exists (threads inherit the mode).
numerics.set_flush_denormals(True)

# `make gpu-check` runs the numerics tests with SUITE_TEST_DEVICE=cuda: every tensor and module a
# test creates is then made on the GPU, compared in true fp32 (TF32 would loosen the tolerances).
TEST_DEVICE = os.environ.get("SUITE_TEST_DEVICE", "cpu")
if TEST_DEVICE != "cpu":
    torch.set_default_device(TEST_DEVICE)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False

CONF = Path(__file__).resolve().parents[1] / "conf"
TINY_MODEL = ["model.d_model=32", "++model.backbone.d_ff=64", "++model.backbone.n_layers=1"]
# The tools' tests: recall at 32 positions with a few examples, and an encoder 16 wide.
TINY_LONG_RANGE = ["task=long_range", "task.seq_len=32", "task.n_train=16", "task.n_val=8", "task.n_test=8"]
TINY_ENCODER = ["model.d_model=16", "model.backbone.n_layers=1", "model.backbone.n_heads=2", "model.backbone.d_ff=32"]


def compose_config(*overrides: str, tiny: bool = True) -> DictConfig:
    """The real composed config (as ``python -m suite.run`` sees it), optionally shrunk."""
    return composed(["trainer=smoke", *overrides] if tiny else list(overrides), logger="none" if tiny else None)


def shrink(cfg: DictConfig) -> DictConfig:
    """Make the model tiny whatever its family (attention or recurrent)."""
    with open_dict(cfg):
        cfg.model.d_model = 32
        bb = cfg.model.get("backbone") or {}  # a model without one (Lead-k) has nothing to shrink
        if "n_heads" in bb:
            bb.n_heads, bb.d_ff, bb.n_layers = 4, 64, 1
        if "hidden_size" in bb:
            bb.hidden_size = 32
    return cfg


def skip_or_fail(message: str) -> None:
    """Missing data: skip on a developer machine, fail in CI (``CI=true``)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def need_data(*relative: str) -> Path:
    """Path under the data directory; skip (locally) or fail (CI) when it is missing."""
    path = data_root().joinpath(*relative)
    if not path.exists():
        skip_or_fail(f"dataset missing: {path} (run `make data`)")
    return path


@pytest.fixture(autouse=True)
def _seed_and_threads():
    # Tests run tiny models: one thread is as fast, and does not crawl when other processes
    # hold the cores (OpenMP workers spin waiting for each other).
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# Sequence-to-sequence tasks at tiny size: small vocabularies, short sources, short generations,
# and the first lines of each data file (they tokenize whole splits; test_*_data checks the full data).
TINY_TASK = {
    "translation": ["task.vocab_size=500", "task.max_target_len=12"],
    "summarization": ["task.vocab_size=500", "task.max_source_len=64", "task.max_target_len=12"],
    "language_model": ["task.vocab_size=500", "task.seq_len=32", "task.stride=16"],
    "pathfinder": ["task.n_train=32", "task.n_val=8", "task.n_test=8"],  # drawn in a second, not its 5,500 images
}
SUBSET_LINES = 400


@pytest.fixture(scope="module")
def subset_data(tmp_path_factory) -> Path:
    """A data directory with the first lines of every Multi30k, AESLC and BBC News file, in the real layout and
    format."""
    root = tmp_path_factory.mktemp("data")
    for folder in (("translation", "multi30k"), ("summarization", "aeslc"), ("summarization", "bbc_news_summary")):
        source = need_data(*folder)
        target = root.joinpath(*folder)
        target.mkdir(parents=True)
        for path in sorted(source.glob("*.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                head = [line for _, line in zip(range(SUBSET_LINES), f)]
            with gzip.open(target / path.name, "wt", encoding="utf-8") as f:
                f.writelines(head)
        for path in sorted(source.glob("*.jsonl")):
            with open(path, encoding="utf-8") as f:
                (target / path.name).write_text(
                    "".join(line for _, line in zip(range(SUBSET_LINES), f)), encoding="utf-8"
                )
    return root


# --- language models -------------------------------------------------------------------------

LM_VOCAB = 50
WORDS = (
    "the minister said shares rose sharply after the company reported profits in london on monday "
    "while fans cheered a new film"
).split()
TINY_LM = ["task.seq_len=16", "task.stride=8", "task.vocab_size=300"]  # task=language_model at tiny size


@pytest.fixture(scope="session")
def bbc_dir(tmp_path_factory) -> Path:
    """A data directory with small made-up BBC News and AESLC files in the real formats, with repeated texts."""
    root = tmp_path_factory.mktemp("lmdata")
    rng = random.Random(0)
    rows = []
    for i in range(60):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120))) + ". £5 café"
        rows.append(
            {
                "id": f"x/{i}",
                "category": ["business", "entertainment", "politics", "sport", "tech"][i % 5],
                "title": f"Story {i}",
                "article": f"Story {i}\n\n{body}",
                "summary": body[:40],
            }
        )
    rows.append(dict(rows[3]))  # the same article twice
    rows.append(
        {**rows[7], "article": "Another title\n\n" + rows[7]["article"].split("\n\n", 1)[1]}
    )  # one body under two titles
    folder = root / "summarization" / "bbc_news_summary"
    folder.mkdir(parents=True)
    (folder / "bbc_news_summary.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    emails = root / "summarization" / "aeslc"  # and AESLC, with a body repeated in a split and across splits
    emails.mkdir(parents=True)
    bodies = [" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(30)]
    for name, picked in (
        ("train", bodies[:20] + bodies[:2]),
        ("dev", bodies[20:25] + bodies[3:4]),
        ("test", bodies[25:]),
    ):
        (emails / f"{name}.jsonl").write_text(
            "".join(json.dumps({"id": str(i), "email_body": b, "subject": "s"}) + "\n" for i, b in enumerate(picked))
        )
    return root


def tiny_lm(model: str, *overrides: str, context: int = 16) -> torch.nn.Module:
    """A language model of ``model`` (a config name plus overrides) at tiny size, random weights, in eval mode."""
    from suite.models.language_model import build_language_model

    cfg = shrink(compose_config("task=language_model", f"model={model}", *overrides))
    return build_language_model(cfg.model, LM_VOCAB, context).eval()
