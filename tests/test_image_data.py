"""Image data: sources, seeded stratified splits, train-split normalisation, augmentation on train only."""

import gzip
from collections import Counter

import numpy as np
import pytest
import torch

from suite.data.datadir import DataError
from tasks.image import SOURCES, load, read_idx
from tests.conftest import need_data


def load_dataset(name: str, **kw):
    args = dict(data_dir=None, patch_size=None, augment=True, val_fraction=0.1, test_fraction=0.2, split_seed=0) | kw
    return load(name, **args)


def test_digits_split_is_seeded_stratified_and_complete():
    data = load_dataset("digits")
    sizes = {name: len(ds) for name, ds in data.splits.items()}
    assert sum(sizes.values()) == 1797 and sizes["test"] == pytest.approx(0.2 * 1797, abs=2)
    labels = {name: Counter(ds.labels.tolist()) for name, ds in data.splits.items()}
    for c in range(10):
        assert abs(labels["train"][c] / sizes["train"] - labels["test"][c] / sizes["test"]) < 0.02
    again = load_dataset("digits")
    assert torch.equal(again.splits["test"].images, data.splits["test"].images)
    other_seed = load_dataset("digits", split_seed=1)
    assert not torch.equal(other_seed.splits["test"].images, data.splits["test"].images)


def test_max_eval_caps_validation_and_test_with_a_stratified_sample_and_leaves_train_whole():
    whole, capped = load_dataset("digits"), load_dataset("digits", max_eval=100)
    assert len(capped.splits["train"]) == len(whole.splits["train"])
    for split in ("val", "test"):
        assert len(capped.splits[split]) == 100
        share = Counter(capped.splits[split].labels.tolist())
        full = Counter(whole.splits[split].labels.tolist())
        for c in range(10):  # every class in the sample as in the whole split, to the rounding of 100 images
            assert abs(share[c] / 100 - full[c] / len(whole.splits[split])) <= 0.015
    kept = {img.numpy().tobytes() for img in capped.splits["test"].images}
    assert kept <= {img.numpy().tobytes() for img in whole.splits["test"].images}


def test_max_eval_below_one_is_refused_at_build():
    from tasks.image import build

    with pytest.raises(ValueError, match="max_eval must be a positive number"):
        build("image", max_eval=0)


def test_patches_and_embedding_follow_the_dataset():
    data = load_dataset("digits")
    assert data.max_len == 16 and data.n_classes == 10  # 8x8 in 2x2 patches
    batch = data.collate([data.splits["val"][i] for i in range(5)])
    assert batch.inputs.shape == (5, 1, 8, 8) and batch.pad_mask is None and batch.n_tokens == 5 * 16
    assert data.embedding(24)(batch.inputs).shape == (5, 16, 24)
    assert load_dataset("digits", patch_size=4).max_len == 4
    with pytest.raises(ValueError, match="patch_size=3 does not divide"):
        load_dataset("digits", patch_size=3)


def test_normalised_with_training_statistics_and_augmented_on_train_only():
    data = load_dataset("digits")
    val = torch.stack([data.splits["val"][i][0] for i in range(len(data.splits["val"]))])
    train_eval_view = data.splits["val"].transform(data.splits["train"].images)
    assert abs(train_eval_view.mean().item()) < 1e-4 and train_eval_view.std().item() == pytest.approx(1.0, abs=1e-3)
    assert torch.equal(
        val, torch.stack([data.splits["val"][i][0] for i in range(len(data.splits["val"]))])
    )  # deterministic
    torch.manual_seed(0)
    first = torch.stack([data.splits["train"][i][0] for i in range(64)])
    second = torch.stack([data.splits["train"][i][0] for i in range(64)])
    assert not torch.equal(first, second)  # random shifts
    plain = load_dataset("digits", augment=False)
    assert torch.equal(plain.splits["train"][0][0], plain.splits["train"][0][0])


def test_a_permute_seed_scrambles_every_image_of_every_split_by_one_fixed_permutation():
    from tasks.image import PermutePixels

    plain = load_dataset("digits", augment=False)
    scrambled = load_dataset("digits", augment=False, permute_seed=3)
    order = PermutePixels(3, 8, 8).order
    assert sorted(order.tolist()) == list(range(64)) and not torch.equal(order, torch.arange(64))
    for split in ("train", "val", "test"):
        for i in (0, 1, len(plain.splits[split]) - 1):
            (x, y), (px, py) = plain.splits[split][i], scrambled.splits[split][i]
            assert y == py and torch.equal(px.flatten(1), x.flatten(1)[:, order])  # the same order for every image
    assert torch.equal(PermutePixels(3, 8, 8).order, order)  # seeded
    assert not torch.equal(PermutePixels(4, 8, 8).order, order)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_a_permute_seed_that_is_not_a_non_negative_int_is_refused_at_build(seed):
    from tasks.image import build

    with pytest.raises(ValueError, match="permute_seed must be a non-negative int or null"):
        build("image", permute_seed=seed)


def test_flips_only_where_they_keep_the_class():
    assert SOURCES["fashion_mnist"].flip and not any(SOURCES[d].flip for d in ("digits", "usps", "mnist"))


def write_idx(path, magic, shape, data):
    header = np.array([magic, *shape], dtype=">i4").tobytes()
    path.write_bytes(gzip.compress(header + bytes(data)))


def test_idx_reader_checks_magic_and_size(tmp_path):
    good = tmp_path / "good-idx1.gz"
    write_idx(good, 2049, (3,), [1, 2, 3])
    assert read_idx(good, 1).tolist() == [1, 2, 3]
    bad_magic = tmp_path / "magic-idx1.gz"
    write_idx(bad_magic, 2051, (3,), [1, 2, 3])
    with pytest.raises(DataError, match=f"{bad_magic}: IDX magic number 2051"):
        read_idx(bad_magic, 1)
    truncated = tmp_path / "short-idx3.gz"
    write_idx(truncated, 2051, (2, 2, 2), [0] * 7)
    with pytest.raises(DataError, match=f"{truncated}: 7 data bytes for shape"):
        read_idx(truncated, 3)
    not_gzip = tmp_path / "plain.gz"
    not_gzip.write_bytes(b"plain bytes")
    with pytest.raises(DataError, match=f"{not_gzip}: not a readable gzip file"):
        read_idx(not_gzip, 1)


@pytest.mark.parametrize(
    "name, folder, sizes, side",
    [
        ("usps", ("image", "usps"), {"train": 6561, "val": 730, "test": 2007}, 16),
        ("mnist", ("image", "MNIST"), {"train": 7000, "val": 1000, "test": 2000}, 28),
        ("fashion_mnist", ("image", "FashionMNIST"), {"train": 54000, "val": 6000, "test": 10000}, 28),
    ],
)
def test_file_datasets_load_with_their_splits(name, folder, sizes, side):
    need_data(*folder)
    data = load_dataset(name)
    assert {split: len(ds) for split, ds in data.splits.items()} == sizes
    images = data.splits["test"].images
    assert images.shape[1:] == (1, side, side) and 0.0 <= images.min() and images.max() <= 1.0
    assert set(data.splits["test"].labels.tolist()) == set(range(10)) and len(data.class_names) == 10
