"""experiment=lra: one model and one budget for every variant and task; recall beyond every window; each task runs."""

import pytest
from omegaconf import OmegaConf

from suite.run import execute
from tests.conftest import CONF, compose_config, need_data, shrink

LRA_TASKS = sorted(p.stem for p in (CONF / "lra").glob("*.yaml"))
SWEPT = str(
    OmegaConf.to_container(OmegaConf.load(CONF / "experiment" / "lra.yaml"))["hydra"]["sweeper"]["params"][
        "model/attention"
    ]
).split(",")
ONE_STEP = [
    "trainer.max_steps=1",
    "trainer.limit_train_batches=1",
    "trainer.limit_eval_batches=1",
    "trainer.eval_batch_size=16",
    "trainer.progress=false",
    "logger=none",
]


def composed(lra: str, attention: str = "full", *extra: str):
    return compose_config("experiment=lra", f"lra={lra}", f"model/attention={attention}", *extra, tiny=False)


def test_the_sweep_covers_every_task_and_every_variant_but_explicit():
    params = OmegaConf.load(CONF / "experiment" / "lra.yaml").hydra.sweeper.params
    assert sorted(params.lra.split(",")) == LRA_TASKS == ["image", "listops", "pathfinder", "recall", "text"]
    assert sorted(SWEPT) == sorted(
        p.stem for p in (CONF / "model" / "attention").glob("*.yaml") if p.stem != "explicit"
    )


def test_every_variant_and_task_gets_the_same_model_and_budget():
    def without_core(cfg):
        model = OmegaConf.to_container(cfg.model, resolve=True)
        for node in (model, model["backbone"], model["decoder"]):
            node.pop("attention", None)
        return model

    first = composed("listops")
    for lra in LRA_TASKS:
        for attention in SWEPT:
            cfg = composed(lra, attention)
            assert cfg.benchmark == "lra"
            assert without_core(cfg)["backbone"] == without_core(first)["backbone"], (
                lra,
                attention,
            )  # image's ViT adaptation is undone
            assert cfg.model.positions == first.model.positions and cfg.model.d_model == 128
            assert OmegaConf.to_container(cfg.trainer) == OmegaConf.to_container(first.trainer), (lra, attention)
            assert cfg.trainer.max_steps == 2000 and cfg.trainer.patience == 0 and cfg.trainer.time_budget_s is None


def test_recall_puts_the_key_beyond_every_windows_reach_after_all_layers():
    cfg = composed("recall")
    distance = cfg.task.seq_len  # the key is last; [CLS] reads out at position 0
    assert cfg.task.key_position == -1
    layers = cfg.model.backbone.n_layers
    for name in ("local", "longformer"):
        assert layers * composed("recall", name).model.attention.window < distance
    bigbird = composed("recall", "bigbird").model.attention
    assert layers * (bigbird.window + 1) * bigbird.block < distance  # its windowed blocks; its global block reads all


@pytest.mark.parametrize(
    "lra, data", [("listops", None), ("recall", None), ("text", ("summarization", "bbc_news_summary")), ("image", None)]
)
def test_every_lra_task_trains_a_step_with_a_sparse_variant(lra, data, tmp_path):
    # Image: the 8x8 digits pixel by pixel (64 positions), since scoring Fashion-MNIST's 10,000 test images at 784
    # takes minutes.
    if data:
        need_data(*data)
    size = (
        ["task.dataset=digits"]
        if lra == "image"
        else ["task.seq_len=256"]
        + (["task.n_train=64", "task.n_val=16", "task.n_test=16"] if lra in ("listops", "recall") else [])
    )
    block = 8 if lra == "image" else 16  # 65 positions in blocks of 16 would be 5: every key in reach, refused
    cfg = shrink(composed(lra, "bigbird", f"model.attention.block={block}", *size, *ONE_STEP))
    record = execute(cfg, tmp_path, attention="bigbird")
    assert record.status == "ok", record.error
    assert record.config["benchmark"] == "lra" and record.steps == 1
    assert record.seq_len == (64 if lra == "image" else 256)  # 1x1 patches: a position per pixel
