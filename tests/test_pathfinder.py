"""Pathfinder's generator: seeded, balanced, connected by construction; the task caches and trains."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy import ndimage

from suite.run import execute
from tasks import pathfinder
from tasks.pathfinder import Style, draw, generate
from tests.conftest import compose_config

SMALL = {"train": 40, "val": 10, "test": 10}
EIGHT_CONNECTED = np.ones((3, 3), dtype=int)


def components_of_dots(image: np.ndarray) -> set[int]:
    """The 8-connected components the image's two 3 x 3 dots lie in."""
    labels, _ = ndimage.label(image > 0, structure=EIGHT_CONNECTED)
    filled = ndimage.binary_erosion(image > 0, structure=EIGHT_CONNECTED)  # only a dot's centre survives
    return {int(labels[r, c]) for r, c in zip(*np.nonzero(filled))}


def test_the_same_seed_gives_the_same_images_and_another_seed_others():
    a, b, c = (generate(Style(), 16, seed) for seed in ((0, 0), (0, 0), (1, 0)))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


@pytest.mark.parametrize("n", [10, 11])
def test_labels_are_balanced(n):
    _, labels = generate(Style(), n, (3, 0))
    assert labels.sum().item() == (n + 1) // 2 and set(labels.tolist()) <= {0, 1}


@pytest.mark.parametrize("connected", [True, False])
def test_drawn_solid_the_dots_share_a_component_exactly_when_connected(connected):
    rng = np.random.default_rng(7)
    solid = replace(Style(), gap=0)
    for _ in range(30):
        image, curves = draw(rng, solid, connected)
        dots = components_of_dots(image)
        assert len(dots) == (1 if connected else 2), "curves must never touch: one component per dot pair"
        assert len(curves) == 2 + solid.n_distractors


def test_curves_are_the_same_in_both_classes():
    """Pixel counts cannot tell the classes apart: only the dots' places differ."""
    rng = np.random.default_rng(0)
    lengths = {label: [len(c) for _ in range(20) for c in draw(rng, Style(), label)[1]] for label in (True, False)}
    assert abs(np.mean(lengths[True]) - np.mean(lengths[False])) < 1.5


def test_dashed_curves_have_gaps_and_stay_inside():
    image, curves = draw(np.random.default_rng(1), Style(), True)
    for curve in curves:
        drawn = image[curve[:, 0], curve[:, 1]] > 0
        assert drawn.any() and not drawn.all()
        assert curve.min() >= 2 and curve.max() < Style().image_size - 2


def test_validation_and_test_hold_no_training_image():
    parts = pathfinder.make_splits(Style(image_size=16, length=8, n_distractors=0), SMALL, 0)
    train = {img.numpy().tobytes() for img in parts["train"][0]}
    for split in ("val", "test"):
        assert not train & {img.numpy().tobytes() for img in parts[split][0]}


def test_splits_are_cached_in_the_data_directory_and_read_back(tmp_path):
    style = Style(image_size=16, length=8, n_distractors=0)
    made = pathfinder.splits(style, SMALL, 0, tmp_path)
    (path,) = (tmp_path / "image" / "pathfinder").glob("pathfinder16-*.pt")
    again = pathfinder.splits(style, SMALL, 0, tmp_path)
    assert all(torch.equal(made[k][0], again[k][0]) and torch.equal(made[k][1], again[k][1]) for k in SMALL)
    assert pathfinder.cache_path(replace(style, gap=0), SMALL, 0, tmp_path) != path


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("image_size", 8, "image_size must be in 16..128"),
        ("image_size", 256, "image_size must be in 16..128"),
        ("length", 3, "length must be 4..64"),
        ("dash", 0, "dash must be >= 1"),
        ("n_distractors", -1, "n_distractors must be >= 0"),
    ],
)
def test_a_size_the_generator_cannot_draw_is_refused_at_build(setting, value, message):
    with pytest.raises(ValueError, match=message):
        pathfinder.build("pathfinder", **{setting: value})


def test_too_many_curves_for_the_image_is_a_clear_error():
    with pytest.raises(ValueError, match="could not place 22 curves of 30 pixels in 16x16"):
        draw(np.random.default_rng(0), Style(image_size=16, length=30, n_distractors=20), True)


def test_task_pathfinder_trains_a_step_pixel_by_pixel(tmp_path):
    cfg = compose_config(
        "task=pathfinder",
        "task.image_size=16",
        "task.length=10",
        "task.n_distractors=0",
        "task.n_train=16",
        "task.n_val=8",
        "task.n_test=8",
        f"data_dir={tmp_path}",
        "trainer.max_steps=1",
    )
    record = execute(cfg, tmp_path / "run")
    assert record.status == "ok", record.error
    assert record.task == "pathfinder" and record.seq_len == 256 and 0 <= record.metrics["accuracy"] <= 1
