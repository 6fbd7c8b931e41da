"""Classification metrics against scikit-learn on the same inputs; the confusion-matrix plot."""

import math

import pytest
import torch
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef, roc_auc_score

from tasks.classification import accuracy_f1, binary_metrics, confusion_matrix_png, per_class_metrics


def noisy_predictions(n: int, n_classes: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits that favour the true class often but not always: metrics well away from 0 and 1."""
    gen = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, n_classes, (n,), generator=gen)
    logits = torch.randn(n, n_classes, generator=gen)
    logits[torch.arange(n), targets] += 1.0
    return logits, targets


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_metrics_match_sklearn(seed):
    logits, targets = noisy_predictions(500, 2, seed)
    preds, positive = logits.argmax(-1).numpy(), logits.softmax(-1)[:, 1].numpy()
    got = binary_metrics(logits, targets, 2)
    assert got["accuracy"] == pytest.approx(accuracy_score(targets, preds), abs=1e-6)
    assert got["mcc"] == pytest.approx(matthews_corrcoef(targets, preds), abs=1e-5)
    assert got["roc_auc"] == pytest.approx(roc_auc_score(targets, positive), abs=1e-5)


def test_roc_auc_is_nan_when_one_class_is_present():
    logits = torch.randn(8, 2)
    assert math.isnan(binary_metrics(logits, torch.ones(8, dtype=torch.long), 2)["roc_auc"])
    with pytest.raises(ValueError, match="2 classes"):
        binary_metrics(torch.randn(4, 3), torch.zeros(4, dtype=torch.long), 3)


@pytest.mark.parametrize("seed", [0, 1])
def test_per_class_metrics_match_sklearn(seed):
    logits, targets = noisy_predictions(400, 3, seed)
    preds = logits.argmax(-1).numpy()
    got = per_class_metrics(logits, targets, 3, ["EI", "IE", "N"])
    per_class = f1_score(targets, preds, average=None)
    assert got["accuracy"] == pytest.approx(accuracy_score(targets, preds), abs=1e-6)
    assert got["macro_f1"] == pytest.approx(f1_score(targets, preds, average="macro"), abs=1e-5)
    assert [got["f1_EI"], got["f1_IE"], got["f1_N"]] == pytest.approx(per_class.tolist(), abs=1e-5)


def test_macro_f1_matches_sklearn_when_a_class_is_absent():
    # sklearn averages over the labels that occur in targets or predictions; so must we.
    logits = torch.tensor([[5.0, 0, 0, 0], [0, 5.0, 0, 0], [5.0, 0, 0, 0], [0, 5.0, 0, 0], [0, 0, 5.0, 0]])
    targets = torch.tensor([0, 1, 1, 1, 2])
    expected = f1_score(targets, logits.argmax(-1), average="macro")
    assert accuracy_f1(logits, targets, 4)["macro_f1"] == pytest.approx(expected, abs=1e-6)


def test_confusion_matrix_png_is_written(tmp_path):
    logits, targets = noisy_predictions(100, 3)
    path = confusion_matrix_png(logits, targets, ["a", "b", "c"], tmp_path)
    assert path == tmp_path / "confusion_matrix.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000
