"""The per-run result record (``result.json``) and its reading back for tables."""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from suite.runtime.files import atomic_write_text
from suite.runtime.moved import current
from suite.runtime.paths import PROJECT_ROOT

STATUSES = ("ok", "failed", "diverged", "oom", "timeout", "skipped", "interrupted")
RESULT_FILE = "result.json"


@dataclass
class ResultRecord:
    """Everything needed to trust and compare one run.

    ``metrics`` holds the test metrics and, prefixed ``val_``, the best validation ones.
    ``speed`` holds throughput in real (non-pad) tokens and items per second, for training
    steps and for inference separately.
    """

    status: str
    task: str
    dataset: str
    model: str
    seed: int
    job: str | None = (
        None  # what the run did, by its conf/job name: train, speed, evaluate, compress, ...
        # (None: ``job_of`` its config)
    )
    seq_len: int | None = None
    params: int | None = None
    declaration: dict[str, Any] = field(
        default_factory=dict
    )  # what the backbone declares: family, capabilities, its parameters, state size (suite.models.declaration)
    split_sizes: dict[str, int] = field(default_factory=dict)
    test_label_counts: dict[str, int] = field(
        default_factory=dict
    )  # a classifier's scored test examples per label ({} for other tasks and records from before the field)
    data: dict[str, str] = field(
        default_factory=dict
    )  # what the task read (suite.data.datadir.identity): its folder, links resolved, and a fingerprint of its files;
    # empty where it read none (generated data) and in records from before the field
    metrics: dict[str, float] = field(default_factory=dict)
    speed: dict[str, float] = field(default_factory=dict)
    train_seconds: float | None = None
    steps: int | None = None
    epochs: int | None = None
    stop_reason: str | None = None
    planned_steps: int | None = None  # the steps planned; more than ``steps`` when the time cap cut the run short
    precision: str | None = None  # 'fp32' or 'bf16' (autocast), as resolved on the device
    precision_reason: str | None = (
        None  # why that precision: set by the config, or what 'auto' chose for this model family on this device
    )
    resumed_at: int | None = None  # the step a resumed training continued from (None: it ran in one go)
    world_size: int = 1  # training processes (torchrun); throughput is summed over them
    backend: str | None = None  # torch.distributed backend (gloo, nccl) when world_size > 1
    primary_metric: str | None = None  # the task's headline metric (higher is better), as the task names it
    scored_with: str | None = None  # job=evaluate: how the task scored the saved weights (e.g. its decoding), in words
    wall_seconds: float | None = None
    error: str | None = None
    curves: dict[str, list[float]] = field(
        default_factory=dict
    )  # a training run's learning curve (step, examples, seconds, val_<metric>, train_step, train_loss); other jobs'
    # own curves (a context or length axis)
    convergence: dict[str, Any] = field(
        default_factory=dict
    )  # the verdict on the learning curve (suite.training.convergence: verdict, reason, gain, test parameters)
    artifacts: list[str] = field(default_factory=list)  # files the task wrote into the run directory (plots)
    pretrain: dict[str, Any] = field(
        default_factory=dict
    )  # pretrain=denoise: objective, steps, seconds before the supervised fit (empty: trained from scratch)
    compression: dict[str, Any] = field(
        default_factory=dict
    )  # job=compress: the method, sizes, weights, speed against the uncompressed model (README)
    attention: str | None = None
    device: str = ""
    numerics: dict[str, Any] = field(
        default_factory=dict
    )  # floating-point environment (suite.runtime.numerics.describe)
    versions: dict[str, str] = field(default_factory=dict)
    git_commit: str | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")
        if self.job is None:
            self.job = job_of(self.config)

    @property
    def shortened(self) -> bool:
        """True when the time cap ended training before its planned steps (the figures then depend on the machine's
        speed)."""
        return self.stop_reason == "time_budget" and (
            self.planned_steps is None or (self.steps or 0) < self.planned_steps
        )

    def write(self, run_dir: Path) -> Path:
        return atomic_write_text(
            Path(run_dir) / RESULT_FILE, json.dumps(asdict(self), indent=2, sort_keys=False, default=str) + "\n"
        )


def job_of(config: dict[str, Any]) -> str:
    """The job a composed config runs, by its conf/job name ('speed' for ``suite.jobs.speed.speed_job``; 'train' if
    none)."""
    target = (config.get("job") or {}).get("_target_", "")
    return target.rpartition(".")[2].removesuffix("_job") or "train"


def read_result(path: Path) -> ResultRecord:
    """Load a ``result.json`` back into a record (validates the status).

    A record written before the package move reads as if written now: its config's ``_target_``
    paths are the current ones (``suite.runtime.moved``), and its ``job`` comes from its config.
    """
    data = json.loads(Path(path).read_text())
    data["config"] = current(data.get("config") or {})
    return ResultRecord(**data)


def trainer_name(r: ResultRecord) -> str:
    """The trainer profile and the steps its runs take (runs of different profiles or budgets are never averaged
    together): 'quick (200 steps)'; 'quick (9 of 30 steps: epoch cap)' where the epochs end a run before its
    ``max_steps``; 'quick (90 steps: 3 epochs)' where none is set; with a stop target, 'quick (600 steps, stop at 1)';
    stopping at a plateau, 'quick (1000 steps, stop at a plateau from 300)'.

    The steps are those the run planned (``planned_steps``: max_steps or the epochs' steps, whichever come first), which
    every seed of one setting shares, so its seeds pool whatever stopped each of them; a limit that set no step is not
    named (a time cap is a cap: a run it cut short is ``shortened``, and ``stopped_by`` says how a run ended early).
    A record without ``planned_steps`` (from before the field, or a job that plans none) is named by its configured
    limits.

    Weights scored by ``job=evaluate`` are named by the run that trained them and what the task
    scored them with (the record's ``scored_with``, e.g. the decoding), so different weights and
    decodings of one model stay apart too.
    """
    job = r.config.get("job") or {}
    if r.job == "evaluate":
        weights = (
            Path(job["checkpoint"]).parent.parent.name if job.get("checkpoint") else ""
        )  # <run dir>/checkpoints/best.pt
        return "evaluated" + (f" {weights}" if weights else "") + (f" ({r.scored_with})" if r.scored_with else "")
    trainer = r.config.get("trainer") or {}
    planned, max_steps, epochs = getattr(r, "planned_steps", None), trainer.get("max_steps"), trainer.get("max_epochs")
    if planned and max_steps and planned < max_steps:
        limits = [f"{planned} of {max_steps} steps: epoch cap"]
    elif planned:
        limits = [f"{planned} steps" + (f": {epochs} epochs" if not max_steps and epochs else "")]
    else:
        limits = [f"{max_steps} steps"] if max_steps else []
        limits += [f"{trainer['time_budget_s']:g} s"] if trainer.get("time_budget_s") else []
    limits += [f"stop at {trainer['stop_at']:g}"] if trainer.get("stop_at") is not None else []
    if trainer.get("stop_on_plateau") is not None:
        limits += [f"stop at a plateau from {trainer['stop_on_plateau']}"]
    return f"{trainer.get('name', '')}" + (f" ({', '.join(limits)})" if limits else "")


def stopped_by(r: ResultRecord) -> str:
    """What ended a run before its planned steps, in words ('time cap 900 s', 'target 0.9 reached', 'early stopping
    after 3 epochs without gain'); '' for a run that took them all (or that trained none)."""
    if r.planned_steps and (r.steps or 0) >= r.planned_steps:
        return ""
    trainer = r.config.get("trainer") or {}
    return {
        "time_budget": f"time cap {trainer.get('time_budget_s') or 0:g} s",
        "target_reached": f"target {trainer.get('stop_at') or 0:g} reached",
        "early_stopping": f"early stopping after {trainer.get('patience')} epochs without gain",
        "plateaued": f"plateaued at step {r.steps}",
    }.get(r.stop_reason or "", "")


def find_results(*roots: Path) -> list[tuple[Path, ResultRecord]]:
    """Every ``result.json`` below the given run or sweep directories, sorted by path."""
    found = []
    for root in roots:
        for path in sorted(Path(root).rglob(RESULT_FILE)):
            found.append((path.parent, read_result(path)))
    return found


def cpu_name(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_description(device: torch.device) -> str:
    """A human description of where the run ran."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return f"cpu:{cpu_name()} x{torch.get_num_threads()} threads"


def library_versions() -> dict[str, str]:
    """The versions of the libraries a result depends on, from the installed packages' metadata (importing
    torchvision only to read its version costs seconds a process)."""
    from importlib.metadata import version

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": version("torchvision"),
        "hydra": version("hydra-core"),
        "tokenizers": version("tokenizers"),
    }


def git_commit() -> str | None:
    """The project's HEAD commit, with '-dirty' when the work tree has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--verify", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    sha = head.stdout.strip() if head.returncode == 0 else ""
    return sha + ("-dirty" if dirty else "") if sha else None
