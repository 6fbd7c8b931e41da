"""Image classification: a ViT, or an RNN reading the same sequence of patches.

The task supplies the patch embedding (``PatchEmbedding``: each P x P patch, row-major, one
vector); the model config supplies the rest. With ``model=vit*`` that is the ViT of
Dosovitskiy et al. (2021): [CLS] token, learned positions, pre-norm encoder, linear head.
``model=lstm|gru|rnn`` read the very same patch sequence, so the comparison is like for like.

Datasets (``task.dataset``), pixels scaled to [0, 1]:

- ``digits``: scikit-learn's bundled 8x8 digits (1,797; always available, no files needed).
- ``usps``: USPS 16x16 digits, HDF5 (7,291 train / 2,007 test).
- ``mnist``: MNIST's 10,000 test images only: the training images are not in the data set here
  (MANIFEST.md §6), so the figures are not comparable with the usual 60k-train protocol.
- ``fashion_mnist``: Fashion-MNIST 28x28 (60,000 / 10,000), from the Debian package.

Sources without a test split (digits, mnist) are split train/val/test, seeded and stratified;
the others keep their test split and give a stratified validation slice of train. Images are
normalised with the training split's mean and standard deviation; training images get light
augmentation (random shifts, and horizontal flips where a flip keeps the class).

``task.permute_seed`` (an int) scrambles every image's pixels by one fixed permutation drawn from that seed,
the same for every image of every split (permuted MNIST's protocol): what stays is each pixel's identity,
what goes is which pixels are neighbours, so it tells a model's use of the image's layout from the rest.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset
from torchvision.datasets import MNIST, FashionMNIST
from torchvision.transforms import v2

from suite.data.datadir import DataError, require
from suite.data.splits import stratified_split
from suite.models.embeddings import PatchEmbedding
from suite.types import Batch
from tasks.classification import Artifact, ClassificationData, ClassificationTask

Images = tuple[Tensor, Tensor]  # (N, C, H, W) float32 in [0, 1], (N,) int64 labels
IDX_MAGIC = {1: 2049, 3: 2051}  # IDX header magic by number of dimensions: labels, images

# --- reading -------------------------------------------------------------------------------------


def read_digits(data_dir: str | None) -> dict[str, Images]:
    """scikit-learn's bundled digits: 8x8 counts 0..16 (no official split: one 'all' part)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.as_tensor(digits.images, dtype=torch.float32)[:, None] / 16.0
    return {"all": (images, torch.as_tensor(digits.target, dtype=torch.long))}


def read_usps(data_dir: str | None) -> dict[str, Images]:
    """USPS HDF5: groups train/test, each with data (N, 256) in [0, 1] and target (N,)."""
    import h5py

    path = require(data_dir, "image", "usps", "usps.h5")
    parts = {}
    with h5py.File(path, "r") as f:
        for split in ("train", "test"):
            try:
                pixels, labels = f[split]["data"][:], f[split]["target"][:]
            except KeyError as err:
                raise DataError(f"{path}: no {split}/data or {split}/target in the HDF5 file") from err
            parts[split] = (torch.from_numpy(pixels).float().view(-1, 1, 16, 16), torch.from_numpy(labels).long())
    return parts


def read_idx(path: Path, ndim: int) -> np.ndarray:
    """A gzip-compressed IDX file (MNIST's format): big-endian magic and sizes, then uint8 data."""
    try:
        data = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as err:
        raise DataError(f"{path}: not a readable gzip file ({err})") from err
    header = np.frombuffer(data, ">i4", count=1 + ndim)
    if header[0] != IDX_MAGIC[ndim]:
        raise DataError(f"{path}: IDX magic number {header[0]}, expected {IDX_MAGIC[ndim]} for {ndim}-d uint8 data")
    shape = tuple(int(n) for n in header[1:])
    body = np.frombuffer(data, np.uint8, offset=4 * (1 + ndim))
    if body.size != math.prod(shape):
        raise DataError(f"{path}: {body.size} data bytes for shape {shape} (truncated file?)")
    return body.reshape(shape)


def read_idx_pair(root: Path, prefix: str) -> Images:
    """``<prefix>-images-idx3-ubyte.gz`` and ``<prefix>-labels-idx1-ubyte.gz`` -> images, labels."""
    images = read_idx(root / f"{prefix}-images-idx3-ubyte.gz", 3)
    labels = read_idx(root / f"{prefix}-labels-idx1-ubyte.gz", 1)
    if len(images) != len(labels):
        raise DataError(f"{root}: {len(images)} {prefix} images but {len(labels)} labels")
    return torch.from_numpy(images.copy()).float()[:, None] / 255.0, torch.from_numpy(labels.astype(np.int64))


def read_mnist(data_dir: str | None) -> dict[str, Images]:
    """MNIST's test set: the only complete part here (one 'all' part, split locally)."""
    root = require(data_dir, "image", "MNIST", "raw")
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        require(data_dir, "image", "MNIST", "raw", name)
    return {"all": read_idx_pair(root, "t10k")}


def read_fashion_mnist(data_dir: str | None) -> dict[str, Images]:
    """Fashion-MNIST's own train and test sets (installed by ``make data`` from dataset-fashion-mnist)."""
    root = require(data_dir, "image", "FashionMNIST", "raw")
    return {"train": read_idx_pair(root, "train"), "test": read_idx_pair(root, "t10k")}


@dataclass(frozen=True)
class ImageSource:
    """One dataset: how to read it, and what holds for its images.

    Args:
        read: data_dir -> {split: images}; 'all' when the source fixes no split.
        classes: class names by id.
        patch_size: default patch side in pixels.
        shift: largest random translation in pixels for augmentation (0: none).
        flip: horizontal flips keep the class (clothes: yes; digits: no).
    """

    read: Callable[[str | None], dict[str, Images]]
    classes: Sequence[str]
    patch_size: int
    shift: int
    flip: bool


DIGITS = [str(d) for d in range(10)]
SOURCES: dict[str, ImageSource] = {
    "digits": ImageSource(read_digits, DIGITS, patch_size=2, shift=1, flip=False),
    "usps": ImageSource(read_usps, DIGITS, patch_size=4, shift=1, flip=False),
    "mnist": ImageSource(read_mnist, MNIST.classes, patch_size=4, shift=2, flip=False),
    "fashion_mnist": ImageSource(read_fashion_mnist, FashionMNIST.classes, patch_size=4, shift=2, flip=True),
}

# --- splits, datasets, batches ---------------------------------------------------------------------


def subset(images: Images, index: Sequence[int]) -> Images:
    idx = torch.as_tensor(index, dtype=torch.long)
    return images[0][idx], images[1][idx]


def make_splits(
    parts: dict[str, Images], val_fraction: float, test_fraction: float, split_seed: int
) -> dict[str, Images]:
    """train/val/test: divide an 'all' part, or carve validation out of the source's train split."""
    if "all" in parts:
        whole = parts["all"]
        fractions = {"train": 1 - val_fraction - test_fraction, "val": val_fraction, "test": test_fraction}
        return {
            name: subset(whole, idx) for name, idx in stratified_split(whole[1].tolist(), fractions, split_seed).items()
        }
    idx = stratified_split(parts["train"][1].tolist(), {"train": 1 - val_fraction, "val": val_fraction}, split_seed)
    return {
        "train": subset(parts["train"], idx["train"]),
        "val": subset(parts["train"], idx["val"]),
        "test": parts["test"],
    }


def capped(images: Images, most: int | None, split_seed: int) -> Images:
    """At most ``most`` of ``images``, a sample stratified by label (``split_seed``); all of them when None."""
    if most is None or len(images[1]) <= most:
        return images
    share = most / len(images[1])
    kept = stratified_split(images[1].tolist(), {"kept": share, "rest": 1 - share}, split_seed)["kept"]
    return subset(images, kept)


class ImageDataset(Dataset):
    """Images with labels; ``transform`` maps one (C, H, W) image (augmentation, normalisation)."""

    def __init__(self, images: Images, transform: Callable[[Tensor], Tensor]) -> None:
        self.images, self.labels = images
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[Tensor, int]:
        return self.transform(self.images[i]), int(self.labels[i])


def image_collate(n_patches: int) -> Callable[[list[tuple[Tensor, int]]], Batch]:
    """Stack (image (C, H, W), label) pairs; every image is ``n_patches`` tokens, none padded."""

    def collate(pairs: list[tuple[Tensor, int]]) -> Batch:
        images = torch.stack([image for image, _ in pairs])  # (B, C, H, W)
        targets = torch.tensor([label for _, label in pairs], dtype=torch.long)
        return Batch(images, targets, None, n_items=len(pairs), n_tokens=len(pairs) * n_patches)

    return collate


def check_permute_seed(seed: object) -> None:
    """Refuse a ``permute_seed`` that is not a non-negative int (None, no permutation, is the caller's to skip)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"image: permute_seed must be a non-negative int or null, got {seed!r}")


class PermutePixels:
    """One fixed permutation of an image's H * W pixel positions (every channel alike): (C, H, W) -> (C, H, W)."""

    def __init__(self, seed: int, height: int, width: int) -> None:
        check_permute_seed(seed)
        self.order = torch.randperm(height * width, generator=torch.Generator().manual_seed(seed))

    def __call__(self, image: Tensor) -> Tensor:
        return image.flatten(1)[:, self.order].view(image.shape)


def transforms(train: Images, source: ImageSource, augment: bool) -> tuple[v2.Transform, v2.Transform]:
    """(training transform, evaluation transform), normalising with the training split's statistics."""
    pixels = train[0].transpose(0, 1).flatten(1)  # (C, N*H*W)
    normalize = v2.Normalize(pixels.mean(dim=1).tolist(), pixels.std(dim=1).tolist())
    steps: list[v2.Transform] = []
    if augment and source.shift:
        steps.append(v2.RandomCrop(train[0].shape[-2:], padding=source.shift))  # zero padding = background
    if augment and source.flip:
        steps.append(v2.RandomHorizontalFlip())
    return v2.Compose([*steps, normalize]), normalize


def load(
    dataset: str,
    data_dir: str | None,
    patch_size: int | None,
    augment: bool,
    val_fraction: float,
    test_fraction: float,
    split_seed: int,
    max_eval: int | None = None,
    permute_seed: int | None = None,
) -> ClassificationData:
    """Read, split, normalise (and permute the pixels: ``permute_seed``); the embedding cuts images into
    ``patch_size`` patches; validation and test hold at most ``max_eval`` images each (a stratified sample)."""
    if dataset not in SOURCES:
        raise ValueError(f"unknown image dataset {dataset!r}; choose one of {sorted(SOURCES)}")
    source = SOURCES[dataset]
    splits = make_splits(source.read(data_dir), val_fraction, test_fraction, split_seed)
    splits = {name: part if name == "train" else capped(part, max_eval, split_seed) for name, part in splits.items()}
    channels, height, width = splits["train"][0].shape[1:]
    patch = patch_size or source.patch_size
    if height % patch or width % patch:
        raise ValueError(f"{dataset} images are {height}x{width}: patch_size={patch} does not divide them")
    train_tf, eval_tf = transforms(splits["train"], source, augment)
    if permute_seed is not None:  # after augmentation: a shift or flip acts on the image, then it is scrambled
        permute = PermutePixels(permute_seed, height, width)
        train_tf, eval_tf = v2.Compose([train_tf, permute]), v2.Compose([eval_tf, permute])
    n_patches = (height // patch) * (width // patch)
    return ClassificationData(
        splits={
            name: ImageDataset(images, train_tf if name == "train" else eval_tf) for name, images in splits.items()
        },
        collate=image_collate(n_patches),
        n_classes=len(source.classes),
        class_names=list(source.classes),
        embedding=partial(PatchEmbedding, patch_size=patch, in_channels=channels),
        max_len=n_patches,
    )


def build(
    name: str,
    dataset: str = "digits",
    data_dir: str | None = None,
    patch_size: int | None = None,
    augment: bool = True,
    val_fraction: float = 0.1,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
    artifacts: Sequence[Artifact] = (),
    max_eval: int | None = None,
    permute_seed: int | None = None,
) -> ClassificationTask:
    """The image task (``conf/task/image.yaml``)."""
    if max_eval is not None and max_eval < 1:
        raise ValueError(f"image: max_eval must be a positive number of images or null, got {max_eval}")
    if permute_seed is not None:
        check_permute_seed(permute_seed)  # at build, before any data is read
    loader = partial(
        load, dataset, data_dir, patch_size, augment, val_fraction, test_fraction, split_seed, max_eval, permute_seed
    )
    return ClassificationTask(name, dataset, loader, label_smoothing=label_smoothing, artifacts=artifacts)
