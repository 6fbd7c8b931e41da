"""Composition is refactored, never changed by accident: every task x model x trainer, and every
experiment, composes to the config recorded in ``tests/data/composed_configs.json``.

The file holds a digest of each composed, resolved config (``_target_`` paths as they are now:
``suite.runtime.moved``). A combination it does not hold yet (a new model, task or experiment config) is
not compared: adding a config needs no edit here. After an intended change of an existing config, rewrite the
file and commit it with the change (``make snapshot`` runs):

    .venv/bin/python tests/test_composed_configs.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from suite.runtime.compose import CONF, composed  # noqa: E402
from suite.runtime.moved import current  # noqa: E402

SNAPSHOT = Path(__file__).parent / "data" / "composed_configs.json"


def combinations(conf: Path) -> list[list[str]]:
    """The overrides of every task x model x trainer, and of every experiment alone."""
    names = lambda group: sorted(p.stem for p in (conf / group).glob("*.yaml"))  # noqa: E731
    out = [
        [f"task={t}", f"model={m}", f"trainer={r}"]
        for t in names("task")
        for m in names("model")
        for r in names("trainer")
    ]
    return out + [[f"experiment={e}"] for e in names("experiment")]


def digest(overrides: list[str]) -> str:
    """sha256 of the composed config (inside ``initialize_config_dir``), resolved, keys sorted; or the error composing
    it raises."""
    try:
        config = current(
            OmegaConf.to_container(compose(config_name="config", overrides=["logger=none", *overrides]), resolve=True)
        )
    except Exception as err:  # noqa: BLE001 - a combination that cannot compose must keep failing the same way
        return f"error: {type(err).__name__}"
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:16]


def snapshot(conf: Path = CONF) -> dict[str, str]:
    """Every combination's digest, composed as ``suite.runtime.compose.composed`` does (one initialisation for all)."""
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return {" ".join(o): digest(o) for o in combinations(conf)}


def check(recorded: dict[str, str], now: dict[str, str]) -> None:
    """Every combination recorded and still there composes as recorded (new ones have nothing to compare)."""
    changed = sorted(k for k in recorded.keys() & now.keys() if recorded[k] != now[k])
    assert not changed, (
        f"{len(changed)} composed configs changed, e.g. {changed[:5]} (an intended change: --write, see the docstring)"
    )


@pytest.mark.slow  # ~400 compositions, ~75 s
def test_every_composed_config_is_unchanged():
    recorded, now = json.loads(SNAPSHOT.read_text()), snapshot()
    check(recorded, now)


def test_every_model_trainer_task_and_experiment_composes_unchanged():
    """The fast set: every config file at least once (every model on one task and every task with the Transformer, on
    the quick trainer; every trainer with the Transformer on that task; every experiment). The product is the slow
    test's."""
    recorded = json.loads(SNAPSHOT.read_text())
    keys = [
        k
        for k in recorded
        if k.startswith("experiment=")
        or (k.endswith(" trainer=quick") and (k.startswith("task=sentiment ") or " model=transformer " in k))
        or k.startswith("task=sentiment model=transformer ")
    ]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        check({k: recorded[k] for k in keys}, {k: digest(k.split()) for k in keys})


def test_a_changed_setting_changes_the_digest_as_composed_changes_the_config():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        a, b = digest(["task=sentiment", "model=lstm"]), digest(["task=sentiment", "model=lstm", "model.d_model=64"])
    assert a != b
    assert (
        OmegaConf.to_container(composed(["task=sentiment", "model=lstm"]), resolve=True)["model"]["d_model"] == 128
    )  # the same composition


if __name__ == "__main__":
    conf = Path(sys.argv[sys.argv.index("--conf") + 1]) if "--conf" in sys.argv else CONF
    if "--write" in sys.argv:
        SNAPSHOT.write_text(json.dumps(snapshot(conf), indent=0, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
