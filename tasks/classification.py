"""Classification as a task kind: any domain that maps an input to one of C classes.

A domain module supplies a loader returning ``ClassificationData`` (splits, collate, the
content embedding); this module supplies loaders, model building, loss and metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset

from suite.models.classifier import build_classifier
from suite.models.heads import ClsPooling
from suite.types import Batch, Readable

Metrics = Callable[[Tensor, Tensor, int], dict[str, float]]
# (logits (N, C), targets (N,), class names, run directory) -> the file written
Artifact = Callable[[Tensor, Tensor, list[str], Path], Path]


@dataclass
class ClassificationData:
    """Everything a classification task needs from its domain.

    Args:
        splits: 'train', 'val', 'test' datasets of (input, label) pairs.
        collate: list of pairs -> Batch.
        n_classes: number of classes.
        class_names: one name per class id.
        embedding: d_model -> module mapping the collated inputs to (B, L, D).
        max_len: longest sequence the model will see.
        token_names: the readable tokens of one input's ids (for attention maps); None where
            the inputs are no tokens (images).
    """

    splits: dict[str, Dataset]
    collate: Callable[[list[tuple[Any, int]]], Batch]
    n_classes: int
    class_names: list[str]
    embedding: Callable[[int], nn.Module]
    max_len: int
    token_names: Callable[[list[int]], list[str]] | None = None


class TokenDataset(Dataset):
    """Token-id sequences with labels, kept as int tensors."""

    def __init__(self, sequences: Sequence[Sequence[int]], labels: Sequence[int]) -> None:
        if len(sequences) != len(labels):
            raise ValueError(f"{len(sequences)} sequences but {len(labels)} labels")
        self.sequences = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
        self.labels = torch.as_tensor(labels, dtype=torch.long)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[Tensor, int]:
        return self.sequences[i], int(self.labels[i])


def pad_collate(pad_id: int, max_len: int) -> Callable[[list[tuple[Tensor, int]]], Batch]:
    """Collate (ids (L_i,), label) pairs: truncate to ``max_len``, right-pad to the batch's longest."""

    def collate(pairs: list[tuple[Tensor, int]]) -> Batch:
        seqs = [ids[:max_len] for ids, _ in pairs]
        longest = max(1, max(len(s) for s in seqs))
        inputs = torch.full((len(seqs), longest), pad_id, dtype=torch.long)
        for row, s in enumerate(seqs):
            inputs[row, : len(s)] = s
        lengths = torch.tensor([len(s) for s in seqs])
        pad_mask = torch.arange(longest)[None, :] >= lengths[:, None]  # (B, L), True at padding
        targets = torch.tensor([label for _, label in pairs], dtype=torch.long)
        return Batch(
            inputs, targets, pad_mask if pad_mask.any() else None, n_items=len(seqs), n_tokens=int((~pad_mask).sum())
        )

    return collate


# The metrics are scikit-learn's, imported when a split is scored: torchmetrics, which the suite used before,
# imports torchvision and torch._dynamo with its package, 15 s of every process's start on a 2-core CPU.


def accuracy_f1(logits: Tensor, targets: Tensor, n_classes: int) -> dict[str, float]:
    """Accuracy and macro-F1 over the whole split (the macro mean over the classes in the targets or predictions)."""
    from sklearn.metrics import accuracy_score, f1_score

    preds, truth = logits.argmax(dim=-1).cpu().numpy(), targets.cpu().numpy()
    return {
        "accuracy": float(accuracy_score(truth, preds)),
        "macro_f1": float(f1_score(truth, preds, average="macro", zero_division=0)),
    }


def binary_metrics(logits: Tensor, targets: Tensor, n_classes: int) -> dict[str, float]:
    """Accuracy, Matthews correlation (MCC) and ROC-AUC for two classes; class 1 is the positive one.

    ROC-AUC ranks by the softmax probability of class 1; it is undefined (NaN) when the
    targets hold one class only.
    """
    if n_classes != 2:
        raise ValueError(f"binary metrics need 2 classes, got {n_classes}")
    from sklearn.metrics import accuracy_score, matthews_corrcoef, roc_auc_score

    preds, truth = logits.argmax(dim=-1).cpu().numpy(), targets.cpu().numpy()
    positive = logits.float().softmax(dim=-1)[:, 1].cpu().numpy()
    one_class = targets.unique().numel() < 2
    return {
        "accuracy": float(accuracy_score(truth, preds)),
        "mcc": float(matthews_corrcoef(truth, preds)),
        "roc_auc": float("nan") if one_class else float(roc_auc_score(truth, positive)),
    }


def per_class_metrics(logits: Tensor, targets: Tensor, n_classes: int, class_names: Sequence[str]) -> dict[str, float]:
    """Accuracy, macro-F1 and each class's F1 as ``f1_<class name>``."""
    if len(class_names) != n_classes:
        raise ValueError(f"{len(class_names)} class names for {n_classes} classes")
    from sklearn.metrics import f1_score

    preds, truth = logits.argmax(dim=-1).cpu().numpy(), targets.cpu().numpy()
    per_class = f1_score(truth, preds, labels=list(range(n_classes)), average=None, zero_division=0)
    return {
        **accuracy_f1(logits, targets, n_classes),
        **{f"f1_{name}": f for name, f in zip(class_names, per_class.tolist())},
    }


def confusion_matrix_png(logits: Tensor, targets: Tensor, class_names: list[str], run_dir: Path) -> Path:
    """Counts of (true class, predicted class) drawn to ``run_dir/confusion_matrix.png``."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state, no display needed
    from sklearn.metrics import ConfusionMatrixDisplay

    preds = logits.argmax(dim=-1)
    side = max(4.0, 0.6 * len(class_names) + 2)
    fig = Figure(figsize=(side, side))
    ax = fig.subplots()
    ConfusionMatrixDisplay.from_predictions(
        targets.numpy(),
        preds.numpy(),
        labels=list(range(len(class_names))),
        display_labels=class_names,
        ax=ax,
        colorbar=False,
        xticks_rotation=45,
    )
    ax.set_title(f"test: {len(targets)} examples, accuracy {(preds == targets).float().mean().item():.4f}")
    fig.tight_layout()
    path = Path(run_dir) / "confusion_matrix.png"
    fig.savefig(path, dpi=120)
    return path


class ClassificationTask:
    """The ``Task`` contract for classification.

    Args:
        name: task name (sentiment, long_range, ...).
        dataset: dataset name within the task.
        load: builds the ``ClassificationData`` (called once, by ``setup``).
        label_smoothing: cross-entropy label smoothing.
        metrics: (logits (N, C), targets (N,), C) -> metrics; accuracy and macro-F1 by default.
        primary_metric: metric used for model selection (higher is better).
        artifacts: writers of files about the test split (e.g. ``confusion_matrix_png``).
        max_len: the input length the configuration asks for, known before the data is read
            (None where only the data tells, as an image's patch count).
    """

    def __init__(
        self,
        name: str,
        dataset: str,
        load: Callable[[], ClassificationData],
        label_smoothing: float = 0.0,
        metrics: Metrics = accuracy_f1,
        primary_metric: str = "accuracy",
        artifacts: Sequence[Artifact] = (),
        max_len: int | None = None,
    ) -> None:
        self.name, self.dataset, self.max_len = name, dataset, max_len
        self.load, self.label_smoothing = load, label_smoothing
        self.metrics, self.primary_metric = metrics, primary_metric
        self.artifacts = list(artifacts)
        self.data: ClassificationData | None = None
        self.latest: tuple[Tensor, Tensor] | None = None  # the logits and targets of the latest evaluate

    def setup(self) -> None:
        if self.data is None:
            self.data = self.load()

    @property
    def ready(self) -> ClassificationData:
        if self.data is None:
            raise RuntimeError(f"task {self.name!r} used before setup()")
        return self.data

    def split_sizes(self) -> dict[str, int]:
        return {name: len(ds) for name, ds in self.ready.splits.items()}

    def seq_len(self) -> int | None:
        """The data's length once set up, the configured one before."""
        return self.data.max_len if self.data is not None else self.max_len

    def loaders(self, batch_size: int, seed: int, eval_batch_size: int | None = None) -> dict[str, DataLoader]:
        data = self.ready
        gen = torch.Generator().manual_seed(seed)
        make = lambda split, bs, shuffle: DataLoader(
            data.splits[split],
            batch_size=bs,
            shuffle=shuffle,
            generator=gen if shuffle else None,
            collate_fn=data.collate,
        )  # noqa: E731
        eval_bs = eval_batch_size or batch_size
        return {
            "train": make("train", batch_size, True),
            "val": make("val", eval_bs, False),
            "test": make("test", eval_bs, False),
        }

    def build_model(self, model_cfg: Any) -> nn.Module:
        data = self.ready
        return build_classifier(model_cfg, data.embedding(model_cfg.d_model), data.n_classes, data.max_len)

    def loss(self, model: nn.Module, batch: Batch) -> Tensor:
        logits = model(batch.inputs, batch.pad_mask)
        return F.cross_entropy(logits.float(), batch.targets, label_smoothing=self.label_smoothing)

    def predict(self, model: nn.Module, batches) -> tuple[Tensor, Tensor]:
        """Concatenated logits (N, C) and targets (N,) over a split, on the CPU."""
        logits, targets = [], []
        for batch in batches:
            logits.append(model(batch.inputs, batch.pad_mask).float().cpu())
            targets.append(batch.targets.cpu())
        return torch.cat(logits), torch.cat(targets)

    def evaluate(self, model: nn.Module, batches, device: torch.device) -> dict[str, float]:
        logits, targets = self.predict(model, batches)
        self.latest = logits, targets
        loss = F.cross_entropy(logits, targets).item()
        return {**self.metrics(logits, targets, self.ready.n_classes), "loss": loss}

    def predictions(self) -> list[dict[str, Any]]:
        """The latest evaluation's examples, in the split's order: id, label, predicted class."""
        if self.latest is None:
            raise RuntimeError(f"task {self.name!r}: predictions() before any evaluate()")
        logits, targets = self.latest
        return [
            {"id": i, "label": label, "prediction": pred}
            for i, (label, pred) in enumerate(zip(targets.tolist(), logits.argmax(dim=-1).tolist()))
        ]

    def readable(self, model: nn.Module, batch: Batch) -> Readable:
        """The batch's first input without its padding, with its tokens ([CLS] first where the model's pooling prepends
        it)."""
        names = self.ready.token_names
        if names is None:
            raise ValueError(
                f"task {self.name!r} ({self.dataset}) has no tokens to show: attention maps need "
                "a task of tokens (e.g. sentiment)"
            )
        n = batch.inputs.size(1) if batch.pad_mask is None else int((~batch.pad_mask[0]).sum())
        ids = batch.inputs[:1, :n]  # (1, n)
        tokens = names(ids[0].tolist())
        if isinstance(getattr(model, "pooler", None), ClsPooling):
            tokens = ["[CLS]", *tokens]
        return Readable(lambda: model(ids, None), tokens)

    def write_artifacts(
        self, model: nn.Module, run_dir: Path, device: torch.device, batch_size: int = 256
    ) -> list[Path]:
        """Predict the whole test split once and hand the predictions to each artifact writer."""
        if not self.artifacts:
            return []
        data = self.ready
        loader = DataLoader(data.splits["test"], batch_size=batch_size, collate_fn=data.collate)
        model.eval()
        with torch.inference_mode():
            logits, targets = self.predict(model, (batch.to(device) for batch in loader))
        return [write(logits, targets, data.class_names, Path(run_dir)) for write in self.artifacts]
