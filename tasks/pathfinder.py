"""Pathfinder (Linsley et al. 2018; LRA's fifth task): are the two dots joined by one dashed curve?

Each image is ``image_size`` x ``image_size`` grey pixels on black: two *main* curves and
``n_distractors`` more, all of the same length, dashed and gently curved, and two 3 x 3 dots. Positive: the
dots sit on the two ends of the same main curve. Negative: one dot on an end of each main curve. Both
classes draw the same curves in the same way, so the pixel count, the number of curves and their
shapes say nothing about the label; only following a curve from one dot does.

The generator is ours, written from the paper's description (the LRA authors also generated their
set offline): a curve is a walk of ``length`` pixels whose heading turns by at most ``turn``
radians every two pixels, drawn ``dash`` pixels on and ``gap`` off. A curve keeps one pixel of
black between itself and every earlier curve and dot, so a curve never touches another: drawn
solid (``gap=0``), a positive's dots lie in one 8-connected component and a negative's in two
(the tests check exactly that). The images are made from ``split_seed`` alone, once, and cached
in the data directory (``<data>/image/pathfinder/``; ``make pathfinder`` makes the configured sets); nothing is
downloaded. The model reads them pixel by pixel, as LRA's Pathfinder-32 (1,024 positions).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from suite.data.datadir import data_root, handed_out
from suite.models.embeddings import PatchEmbedding
from suite.runtime.files import atomic_save
from tasks.classification import Artifact, ClassificationData, ClassificationTask
from tasks.image import ImageDataset, Images, image_collate

GENERATOR_VERSION = 2  # part of the cache key: a change to the drawing makes a new file, never a stale one
SIZES = range(16, 129)  # image sides the generator supports
TRIES = 200  # placements tried for one curve before the image is started again
CLASSES = ["disconnected", "connected"]


@dataclass(frozen=True)
class Style:
    """How the curves are drawn (pixels and radians)."""

    image_size: int = 32
    length: int = 20
    n_distractors: int = 2
    turn: float = 0.5
    dash: int = 2
    gap: int = 1

    def check(self) -> None:
        """A ValueError naming the setting the generator cannot draw."""
        if self.image_size not in SIZES:
            bounds = f"{SIZES.start}..{SIZES.stop - 1}"
            raise ValueError(f"pathfinder: image_size must be in {bounds}, got {self.image_size}")
        if not 4 <= self.length <= 2 * self.image_size:
            raise ValueError(
                f"pathfinder: length must be 4..{2 * self.image_size} pixels for image_size={self.image_size}, "
                f"got {self.length}"
            )
        for name in ("n_distractors", "gap"):
            if getattr(self, name) < 0:
                raise ValueError(f"pathfinder: {name} must be >= 0, got {getattr(self, name)}")
        if self.dash < 1 or not 0 <= self.turn <= math.pi:
            raise ValueError(f"pathfinder: dash must be >= 1 and turn in [0, pi], got {self.dash}, {self.turn}")


def dilate(mask: np.ndarray) -> np.ndarray:
    """A bool mask grown by one pixel in all 8 directions."""
    padded = np.pad(mask, 1)
    h, w = mask.shape
    return np.logical_or.reduce([padded[i : i + h, j : j + w] for i in range(3) for j in range(3)])


def walk(rng: np.random.Generator, style: Style, forbidden: np.ndarray) -> list[tuple[int, int, bool]] | None:
    """One curve avoiding ``forbidden`` pixels: its pixels in order as (row, col, drawn), or None if it ran into
    something."""
    size, margin = style.image_size, 2  # the dots (3 x 3) at the ends stay inside the image
    y, x = rng.uniform(margin, size - 1 - margin, 2)
    heading = rng.uniform(0, 2 * math.pi)
    pixels: list[tuple[int, int, bool]] = []
    for i in range(2 * style.length):  # half-pixel steps: consecutive pixels are 8-neighbours
        if i % 4 == 0:
            heading += rng.uniform(-style.turn, style.turn)
        r, c = int(round(y)), int(round(x))
        if not (margin <= r < size - margin and margin <= c < size - margin) or forbidden[r, c]:
            return None
        if not pixels or pixels[-1][:2] != (r, c):
            pixels.append((r, c, (i // 2) % (style.dash + style.gap) < style.dash))
        y, x = y + 0.5 * math.sin(heading), x + 0.5 * math.cos(heading)
    return pixels


def dot(mask: np.ndarray, r: int, c: int) -> None:
    mask[r - 1 : r + 2, c - 1 : c + 2] = True


def draw(rng: np.random.Generator, style: Style, connected: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """One image (H, W) uint8 (0 or 255) and its curves (each (n, 2) pixel coordinates, main curves first)."""
    size = style.image_size
    for _ in range(TRIES):
        taken = np.zeros((size, size), dtype=bool)  # every curve and end dot so far
        curves: list[list[tuple[int, int, bool]]] = []
        for _ in range(2 + style.n_distractors):
            forbidden = dilate(taken)
            far = dilate(forbidden)  # an end's 3 x 3 dot must keep a pixel of black from the earlier curves too
            walks = (walk(rng, style, forbidden) for _ in range(TRIES))
            curve = next((c for c in walks if c and not any(far[r, col] for r, col, _ in (c[0], c[-1]))), None)
            if curve is None:
                break
            curves.append(curve)
            for r, c, _ in curve:
                taken[r, c] = True
            for r, c, _ in (curve[0], curve[-1]):  # both ends may carry a dot: no curve may pass next to either
                dot(taken, r, c)
        else:
            image = np.zeros((size, size), dtype=bool)
            for curve in curves:
                for r, c, drawn in curve:
                    image[r, c] |= drawn
            ends = (curves[0][0], curves[0][-1]) if connected else (curves[0][rng.integers(2) - 1], curves[1][0])
            for r, c, _ in ends:
                dot(image, r, c)
            return image.astype(np.uint8) * 255, [np.array([(r, c) for r, c, _ in cv]) for cv in curves]
    raise ValueError(
        f"pathfinder: could not place {2 + style.n_distractors} curves of {style.length} pixels in "
        f"{size}x{size} images ({TRIES} tries); lower length or n_distractors, or raise image_size"
    )


def generate(style: Style, n: int, seed: Sequence[int], avoid: set[bytes] | None = None) -> Images:
    """``n`` images (N, 1, H, W) float32 in [0, 1], half of each label, from ``seed``; none whose bytes are in
    ``avoid``."""
    style.check()
    rng = np.random.default_rng(list(seed))
    labels = rng.permutation((np.arange(n) + 1) % 2)  # balanced: n // 2 of each (one more positive when n is odd)
    images = []
    for label in tqdm(labels, desc=f"pathfinder{style.image_size}", unit="image", leave=False, disable=n < 500):
        while True:
            image, _ = draw(rng, style, bool(label))
            if avoid is None or image.tobytes() not in avoid:
                break
        images.append(image)
    pixels = torch.from_numpy(np.stack(images)).float().div_(255)[:, None]  # (N, 1, H, W)
    return pixels, torch.from_numpy(labels).long()


def make_splits(style: Style, sizes: dict[str, int], split_seed: int) -> dict[str, Images]:
    """train/val/test, each from its own seed stream; val and test hold no training image."""
    train = generate(style, sizes["train"], (split_seed, 0))
    seen = {(img[0] * 255).to(torch.uint8).numpy().tobytes() for img in train[0]}
    return {
        "train": train,
        "val": generate(style, sizes["val"], (split_seed, 1), seen),
        "test": generate(style, sizes["test"], (split_seed, 2), seen),
    }


def cache_path(style: Style, sizes: dict[str, int], split_seed: int, data_dir: str | Path | None) -> Path:
    """The file for this style, these sizes and this seed (a hash of them all and the generator's version)."""
    key = json.dumps([GENERATOR_VERSION, asdict(style), sizes, split_seed], sort_keys=True)
    name = f"pathfinder{style.image_size}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.pt"
    return data_root(data_dir) / "image" / "pathfinder" / name


def splits(style: Style, sizes: dict[str, int], split_seed: int, data_dir: str | Path | None) -> dict[str, Images]:
    """The splits from their cache file, generated and cached first if it is not there."""
    path = handed_out(cache_path(style, sizes, split_seed, data_dir))
    if path.exists():
        stored = torch.load(path)
        return {k: (v[0].float().div_(255), v[1]) for k, v in stored.items()}
    made = make_splits(style, sizes, split_seed)
    atomic_save({k: ((v[0] * 255).to(torch.uint8), v[1]) for k, v in made.items()}, path)
    return made


def load(style: Style, sizes: dict[str, int], split_seed: int, data_dir: str | None) -> ClassificationData:
    """The splits, normalised with the training pixels' statistics; one pixel a position."""
    parts = splits(style, sizes, split_seed, data_dir)
    mean, std = parts["train"][0].mean().item(), parts["train"][0].std().item()
    normalize = lambda image: (image - mean) / std  # noqa: E731
    n_pixels = style.image_size**2
    return ClassificationData(
        splits={name: ImageDataset(images, normalize) for name, images in parts.items()},
        collate=image_collate(n_pixels),
        n_classes=2,
        class_names=list(CLASSES),
        embedding=partial(PatchEmbedding, patch_size=1, in_channels=1),
        max_len=n_pixels,
    )


def build(
    name: str,
    dataset: str = "pathfinder",
    data_dir: str | None = None,
    image_size: int = 32,
    length: int = 20,
    n_distractors: int = 2,
    turn: float = 0.5,
    dash: int = 2,
    gap: int = 1,
    n_train: int = 4000,
    n_val: int = 500,
    n_test: int = 1000,
    split_seed: int = 0,
    label_smoothing: float = 0.0,
    artifacts: Sequence[Artifact] = (),
) -> ClassificationTask:
    """The Pathfinder task (``conf/task/pathfinder.yaml``); a size the generator cannot draw fails here."""
    style = Style(image_size, length, n_distractors, turn, dash, gap)
    style.check()
    sizes = {"train": n_train, "val": n_val, "test": n_test}
    for split, n in sizes.items():
        if n < 2:
            raise ValueError(f"pathfinder: n_{split} must be at least 2 (one of each label), got {n}")
    loader = partial(load, style, sizes, split_seed, data_dir)
    return ClassificationTask(
        name, dataset, loader, label_smoothing=label_smoothing, artifacts=artifacts, max_len=image_size**2
    )


CONFIGURED = (["task=pathfinder"], ["experiment=lra_cpu", "lra_cpu=pathfinder"])  # the sets the configs read


def main() -> int:
    """Make every configured Pathfinder set offline (``make pathfinder``); a set already cached is kept."""
    from hydra.utils import instantiate

    from suite.runtime.compose import composed

    for overrides in CONFIGURED:
        task = instantiate(composed(overrides).task)
        task.setup()  # generates and caches the set, or reads it back: build() alone says how the set is drawn
        print(f"pathfinder ({' '.join(overrides)}): {task.split_sizes()} images ready")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
