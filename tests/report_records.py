"""Synthetic records of every kind the report draws, for the figure and page tests: training runs at several lengths,
budgets and seeds with their learning curves, speed points of every model family (attention in bf16 beside recurrent
models in fp32), and the compression and associative-recall records other tests make."""

from __future__ import annotations

import math

from test_compress_report import RECORDS as COMPRESSED
from test_mqar_report import records as mqar_records

from suite.runtime.record import ResultRecord

# What a backbone declares (``suite.models.declaration``) and the config node that builds it, by model.
BACKBONES = {
    "lstm": ("recurrent cells", "suite.models.rnn.RecurrentEncoder"),
    "gru": ("recurrent cells", "suite.models.rnn.RecurrentEncoder"),
    "rnn": ("recurrent cells", "suite.models.rnn.RecurrentEncoder"),
    "mingru": ("parallel scan", "suite.models.minrnn.MinRecurrentEncoder"),
    "mamba": ("parallel scan", "suite.models.mamba.MambaEncoder"),
    "s4d": ("convolution", "suite.models.s4d.S4DEncoder"),
    "transformer": ("attention", "suite.models.transformer.Encoder"),
}
CORES = (
    "full",
    "local",
    "longformer",
    "bigbird",
    "linear",
    "performer",
    "reformer",
    "linformer",
    "nystrom",
    "explicit",
)


def model_fields(model: str, attention: str | None = None, declared: bool = True) -> dict:
    """The record fields that say what a model is: its declaration, its composed config's model node."""
    family, target = BACKBONES[model]
    node = {"d_model": 128, "backbone": {"_target_": target, "n_layers": 2}}
    if model == "transformer":
        node["attention"] = {"_target_": attention or "full"}
    return {
        "model": model,
        "attention": (attention or "full") if model == "transformer" else None,
        "declaration": {"family": family} if declared else {},
        "config": {"model": node},
    }


def curve(steps: int, end: float, rate: float, seconds_per_step: float, every: int = 25) -> dict[str, list[float]]:
    """A learning curve's columns as a training run keeps them: accuracy rising to ``end`` at ``rate``."""
    at = list(range(every, steps + 1, every))
    return {
        "step": [float(s) for s in at],
        "examples": [32.0 * s for s in at],
        "seconds": [s * seconds_per_step for s in at],
        "val_accuracy": [end * (1 - math.exp(-rate * s)) for s in at],
        "val_loss": [1.5 * math.exp(-rate * s) + 0.2 for s in at],
        "train_step": [float(s) for s in range(1, steps + 1, 10)],
        "train_loss": [1.6 * math.exp(-rate * s) + 0.1 for s in range(1, steps + 1, 10)],
    }


def trained(
    model: str,
    task: str,
    dataset: str,
    length: int,
    accuracy: float,
    steps: int = 150,
    seed: int = 0,
    verdict: str = "plateaued",
    precision: str = "fp32",
    **metrics: float,
) -> ResultRecord:
    """A finished training run with its learning curve and the convergence test's verdict."""
    fields = model_fields(model)
    fields["config"] |= {"trainer": {"name": "quick", "max_steps": steps}, "task": {"seq_len": length}}
    r = ResultRecord(
        status="ok",
        task=task,
        dataset=dataset,
        seed=seed,
        job="train",
        seq_len=length,
        params=10_000,
        steps=steps,
        planned_steps=steps,
        train_seconds=steps * 0.05,
        precision=precision,
        primary_metric="accuracy",
        metrics={"accuracy": accuracy + 0.01 * seed, "val_accuracy": accuracy, "loss": 0.5} | metrics,
        speed={"train_tokens_per_s": 5e4 if model != "transformer" else 2e4},
        curves=curve(steps, accuracy, 0.03 if verdict == "plateaued" else 0.004, 0.05 if model == "lstm" else 0.02),
        **fields,
    )
    r.convergence = {"verdict": verdict}  # the field the convergence test fills (absent from older records)
    return r


def speed_point(model: str, length: int, rate: float, attention: str | None = None, precision: str = "fp32"):
    """One speed point (``job=speed``)."""
    fields = model_fields(model, attention)
    fields["config"] |= {"job": {"_target_": "suite.jobs.speed.speed_job", "batch_size": 4}}
    mib = 2**20
    return ResultRecord(
        status="ok",
        task="long_range",
        dataset="recall",
        seed=0,
        seq_len=length,
        precision=precision,
        speed={
            "train_tokens_per_s": rate,
            "infer_tokens_per_s": 3 * rate,
            "peak_mem_train_bytes": length * 4 * mib / 64,
            "peak_mem_infer_bytes": length * mib / 64,
            "batch_size": 4.0,
        },
        **fields,
    )


def speed_records() -> list[ResultRecord]:
    """Every attention core in bf16, three classic and three modern recurrent models in fp32, at four lengths."""
    out = []
    for length in (64, 256, 1024, 4096):
        for k, core in enumerate(CORES):
            out.append(speed_point("transformer", length, 4e4 / (1 + k) * 64 / length**0.5, core, "bf16"))
        for k, model in enumerate(("lstm", "gru", "rnn", "mingru", "mamba", "s4d")):
            out.append(speed_point(model, length, 3e4 * (1 + k / 3)))
    return out


def training_records() -> list[ResultRecord]:
    """A length study at one budget with seeds (recall), two lengths at two budgets (news topics: no curve), a binary
    task (its metrics give two classes), learning curves with one model still learning."""
    out = []
    for length, (t, lstm) in {16: (1.0, 1.0), 32: (1.0, 0.2), 64: (0.98, 0.15)}.items():
        for seed in (0, 1):
            out.append(trained("transformer", "long_range", "recall", length, t, steps=600, seed=seed))
            out.append(trained("lstm", "long_range", "recall", length, lstm, steps=600, seed=seed))
    out += [
        trained("transformer", "news_topic", "bbc", 64, 0.9),
        trained("lstm", "news_topic", "bbc", 64, 0.48, verdict="still learning"),
        trained("transformer", "news_topic", "bbc", 256, 0.92, steps=100),
        trained("lstm", "news_topic", "bbc", 256, 0.39, steps=100, verdict="still learning"),
        trained("transformer", "protein", "amp", 128, 0.88, mcc=0.7, roc_auc=0.9),
        trained("mingru", "protein", "amp", 128, 0.86, mcc=0.68, roc_auc=0.88),
    ]
    return out


def gradient_records() -> list[ResultRecord]:
    """The gradient-flow probe's records: the gradient's norm by distance, vanishing to an exact zero for the LSTM."""
    return [
        ResultRecord(
            status="ok",
            task="long_range",
            dataset="recall",
            seed=0,
            job="gradient_flow",
            seq_len=256,
            curves={"grad_norm_relative_by_distance": [decay**d for d in range(256)]},
            **model_fields(model),
        )
        for model, decay in (("transformer", 0.99), ("lstm", 0.5), ("mingru", 0.9))
    ]


def language_model_records() -> list[ResultRecord]:
    """The language models' context curve (``job=context_use``) and generation cost (``job=generation_cost``)."""
    out = []
    for model, flat in (("transformer", 256), ("lstm", 32)):
        lengths = [16, 64, 256, 1024]
        base = {"status": "ok", "task": "language_model", "dataset": "wikitext", "seed": 0, **model_fields(model)}
        out.append(
            ResultRecord(
                job="context_use",
                metrics={"context_saturation": float(flat)},
                curves={
                    "context": [float(c) for c in lengths],
                    "perplexity": [90 / min(c, flat) ** 0.3 for c in lengths],
                },
                **base,
            )
        )
        out.append(
            ResultRecord(
                job="generation_cost",
                speed={"generate_cache_speedup": 3.0, "compare_tokens": 512.0},
                curves={
                    "length": [float(c) for c in lengths],
                    "step_ms": [1.0 + c / 1000 for c in lengths],
                    "uncached_step_ms": [1.0 + c / 100 for c in lengths],
                    "state_bytes": [4096.0 * (c if model == "transformer" else 1) for c in lengths],
                },
                **base,
            )
        )
    return out


def capability_records() -> list[ResultRecord]:
    """The capability map's runs (tests/test_capability_report.py), a failed one among them, and a knob's sweep."""
    from tests.test_capability_report import records, run

    swept = []
    for pairs in (4, 16):
        r = run("lstm", "mqar", 1e-3, 0, 1.0 / pairs)
        r.config = r.config | {"capability_stage": "knob", "capability_knob": "n_pairs", "task": {"n_pairs": pairs}}
        swept.append(r)
    return records() + swept + [run("gru", "parity", 1e-3, 0, None)]  # a cell with no finished run


def every_record() -> list[ResultRecord]:
    return (
        training_records()
        + speed_records()
        + gradient_records()
        + language_model_records()
        + list(COMPRESSED)
        + mqar_records()
        + capability_records()
    )
