"""The LRA at CPU scale (experiment=lra_cpu): one form of every model on every task, one budget, the table's runs."""

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from suite.report.run_settings import flatten, is_setting
from suite.run import execute
from tasks.lra_report import CPU_BENCHMARK, lra_rows
from tests.conftest import compose_config

TASKS = ("listops", "text", "image", "pathfinder")
RECURRENT = ("lstm", "gru", "mingru", "mamba", "s4d")
ATTENTION = ("full", "local", "longformer", "bigbird", "linear", "performer", "reformer", "linformer", "nystrom")
ATTENTION_ROW = ("model=transformer", "model.backbone.d_ff=256")  # as make bench-lra gives them


def cell(task: str, *row: str):
    return compose_config("experiment=lra_cpu", f"lra_cpu={task}", *row, tiny=False)


def settings(cfg, part: str) -> dict[str, str]:
    return {k: v for k, v in flatten(OmegaConf.to_container(cfg[part], resolve=True)).items() if is_setting(k)}


ROWS = [(f"model={m}",) for m in RECURRENT] + [(*ATTENTION_ROW, f"model/attention={a}") for a in ATTENTION]


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row[-1].split("=")[-1])
def test_a_row_is_one_model_on_every_task_with_one_width_depth_and_budget(row):
    """The report pools a row's cells only where the model's settings agree; the budget is every row's."""
    cells = {task: cell(task, *row) for task in TASKS}
    models = {task: settings(cfg, "model") for task, cfg in cells.items()}
    assert all(m == models["listops"] for m in models.values()), "the image task must not get the ViT's form"
    first = cells["listops"]
    assert first.model.d_model == 64 and first.model.backbone.n_layers == 2 and first.benchmark == CPU_BENCHMARK
    assert first.trainer.precision == "fp32"  # one arithmetic for every row on every CPU kind
    budget = settings(cell("listops", *ROWS[0]), "trainer")
    assert all(settings(cfg, "trainer") == budget for cfg in cells.values())
    if "model=transformer" in row:
        assert first.model.backbone.d_ff == 4 * first.model.d_model


def test_every_task_is_at_most_1k_long():
    lengths = {"listops": cell("listops").task.seq_len, "text": cell("text").task.seq_len}
    lengths["pathfinder"] = cell("pathfinder").task.image_size ** 2
    assert max(lengths.values()) == 1024 and cell("image").task.max_eval == 1000


@pytest.mark.parametrize("task", TASKS)
def test_every_attention_row_builds_sparse_at_its_task_length(task):
    """No cell of the table is refused at build for a window or block reaching every key (full attention by
    another name): the shortest length a task's longest input can have, [CLS] included."""
    shortest = {"listops": 513, "text": 1025, "image": 28 * 28 + 1, "pathfinder": 32 * 32 + 1}
    assert task != "pathfinder" or cell(task).task.image_size == 32
    for name in ATTENTION:
        cfg = cell(task, *ATTENTION_ROW, f"model/attention={name}")
        heads = cfg.model.backbone.n_heads
        instantiate(cfg.model.attention)(n_heads=heads, head_dim=cfg.model.d_model // heads, max_len=shortest[task])


@pytest.mark.parametrize(
    "row, precision",
    [(("model=s4d",), "fp32"), ((*ATTENTION_ROW, "model/attention=local"), "bf16")],
    ids=["s4d-fp32", "local-bf16"],  # bf16 forced: the path precision=auto takes for attention on AMX or CUDA
)
def test_a_cell_runs_and_lands_in_the_cpu_table(tmp_path, row, precision):
    cfg = compose_config(
        "experiment=lra_cpu",
        "lra_cpu=pathfinder",
        *row,
        "task.image_size=16",
        "task.length=8",
        "task.n_distractors=0",
        "task.n_train=32",
        "task.n_val=8",
        "task.n_test=8",
        f"data_dir={tmp_path}",
        "trainer.max_steps=2",
        "trainer.scheduler.warmup_steps=1",
        f"trainer.precision={precision}",
        "logger=none",
        tiny=False,  # the experiment's own trainer (the smoke profile has no warm-up)
    )
    attention = next((o.split("=")[1] for o in row if o.startswith("model/attention=")), None)
    record = execute(cfg, tmp_path / "run", attention=attention)  # as suite.run passes Hydra's choice
    assert record.status == "ok", record.error
    assert record.precision == precision and record.seq_len == 256
    rows = lra_rows([record], CPU_BENCHMARK)
    # chance, ours, and LRA's published row under a model LRA measured (its Local Attention: Pathfinder 66.6)
    assert [r["model"] for r in rows] == ["chance", attention or "s4d"] + ([""] if attention else [])
    assert float(rows[1]["Pathfinder 256"]) == pytest.approx(100 * record.metrics["accuracy"], abs=0.05)
    assert rows[1]["average"] == rows[1]["Pathfinder 256"]
