"""The measurement harness on tiny models: figures, statuses, memory growth, FLOPs, resume."""

import os

import pytest
import torch

from suite.measure.flops import count_flops
from suite.measure.memory import peak_memory
from suite.models.transformer import Encoder, EncoderLayer
from suite.run import execute
from suite.runtime.record import RESULT_FILE, read_result
from tests.conftest import TINY_TASK, compose_config, shrink


def speed_cfg(model: str, seq_len: int, *extra: str):
    cfg = compose_config(
        "experiment=speed_vs_length",
        f"model={model}",
        f"task.seq_len={seq_len}",
        "job.min_time_s=0",
        "job.repeats=2",
        "job.warmup=1",
        "job.measure_peak=false",
        *extra,
    )
    return shrink(cfg)


@pytest.mark.parametrize(
    "precision", ["fp32", "bf16"]
)  # forced: FLOPs counted, memory and time measured in either on any CPU
@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_speed_point_figures_are_positive_finite_with_spread(model, precision, tmp_path):
    record = execute(speed_cfg(model, 32, f"job.precision={precision}"), tmp_path)
    assert record.status == "ok", record.error
    assert record.precision == precision and record.precision_reason == f"set: precision={precision}"
    s = record.speed
    for key in (
        "train_tokens_per_s",
        "infer_tokens_per_s",
        "latency_ms",
        "peak_mem_train_bytes",
        "flops_train_step",
        "train_step_iqr_ms",
    ):
        assert s[key] >= 0 and torch.isfinite(torch.tensor(s[key])), key
    assert s["train_tokens_per_s"] > 0 and s["flops_train_step"] > s["flops_infer"] > 0
    assert s["peak_mem_train_bytes"] > s["peak_mem_infer_bytes"] > 0
    assert isinstance(
        s["others_cpu_share"], float
    )  # the load the point was timed under, from time_calls (its value: the /proc/stat test)


@pytest.mark.parametrize(
    "precision", ["fp32", "bf16"]
)  # bf16: issue 21's crash (the FLOP counter reached oneDNN's bf16 LSTM)
@pytest.mark.parametrize("task", ["translation", "summarization"])
@pytest.mark.parametrize("model", ["transformer", "lstm"])
def test_speed_job_measures_a_sequence_to_sequence_model(task, model, precision, tmp_path, subset_data):
    # The task says how its model runs (a teacher-forced pass) and generates (greedy, with and without the cache).
    cfg = shrink(
        compose_config(
            f"task={task}",
            f"model={model}",
            "job=speed",
            *TINY_TASK[task],
            f"data_dir={subset_data}",
            f"job.precision={precision}",
            "job.min_time_s=0",
            "job.repeats=2",
            "job.warmup=1",
            "job.measure_peak=false",
            "job.batch_size=4",
        )
    )
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    s = record.speed
    assert record.seq_len == cfg.task.max_source_len and s["batch_size"] == 4
    assert (
        s["train_tokens_per_s"] > 0
        and s["infer_tokens_per_s"] > 0
        and s["peak_mem_train_bytes"] > s["peak_mem_infer_bytes"] > 0
    )
    assert s["flops_train_step"] > s["flops_infer"] > 0
    assert s["generated_tokens"] == 4 * 12  # task.max_target_len tokens for each source, none ended early
    assert s["generate_tokens_per_s"] > 0 and s["generate_uncached_tokens_per_s"] > 0
    assert s["generate_cache_speedup"] == s["generate_tokens_per_s"] / s["generate_uncached_tokens_per_s"]


LANGUAGE_MODEL_TASKS = {
    # a causal language model scored at some positions (the capability map's diagnostics, MQAR) or at all of them
    "capability/in_context_recall": ["task.n_train=64", "task.n_val=8", "task.n_test=8", "task.seq_len=32"],
    "mqar": ["task.n_train=64", "task.n_val=8", "task.n_test=8", "task.seq_len=32", "task.n_pairs=4"],
    "language_model": TINY_TASK["language_model"],
}


@pytest.mark.parametrize("task", sorted(LANGUAGE_MODEL_TASKS))
@pytest.mark.parametrize("model", ["transformer", "gru"])
def test_speed_job_measures_a_language_model_task(task, model, tmp_path, request):
    # These tasks' models take ids alone (no padding mask), so job=speed failed on them with a TypeError until each
    # task said how its model infers (suite.types.Infers): the capability map's step probe measures through it.
    data = [f"data_dir={request.getfixturevalue('subset_data')}"] if task == "language_model" else []
    cfg = shrink(
        compose_config(
            f"task={task}", f"model={model}", "job=speed", *LANGUAGE_MODEL_TASKS[task], *data,
            "job.precision=fp32", "job.min_time_s=0", "job.repeats=2", "job.warmup=1", "job.measure_peak=false",
            "job.batch_size=4",
        )
    )  # fmt: skip
    record = execute(cfg, tmp_path)
    assert record.status == "ok", record.error
    s = record.speed
    assert record.seq_len == 32 and s["batch_size"] == 4 and s["tokens"] == 4 * 32
    assert s["train_step_ms"] > 0 and s["infer_ms"] > 0 and s["flops_train_step"] > s["flops_infer"] > 0


def test_oom_point_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch):
    import suite.jobs.speed

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")

    monkeypatch.setattr(suite.jobs.speed, "measure_model", out_of_memory)
    assert execute(speed_cfg("transformer", 32), tmp_path / "a").status == "oom"
    monkeypatch.undo()
    assert execute(speed_cfg("transformer", 32), tmp_path / "b").status == "ok"


def test_time_budget_and_length_cap_are_recorded(tmp_path):
    slow = execute(speed_cfg("lstm", 64, "job.time_budget_s=1e-6"), tmp_path / "slow")
    assert slow.status == "timeout" and "budget" in slow.error and slow.seq_len == 64  # placed on the length axis
    capped = execute(speed_cfg("lstm", 64, "job.max_len=32"), tmp_path / "capped")
    assert capped.status == "skipped" and "max_len=32" in capped.error
    assert read_result(tmp_path / "capped" / RESULT_FILE).status == "skipped"


def test_full_attention_memory_grows_with_length():
    torch.manual_seed(0)
    layer = Encoder(32, 1, 2, 64, dropout=0.0).train()
    peaks = []
    for length in (128, 256, 512):
        x = torch.randn(2, length, 32, requires_grad=True)
        peaks.append(peak_memory(lambda: layer(x).sum().backward(), torch.device("cpu")))
    assert peaks[0] < peaks[1] < peaks[2]


def test_measuring_peak_memory_writes_nothing_to_the_run_s_output():
    """Kineto (the profiler's engine) logged 'USDT: ... profiler_start' and '... profiler_stop' at every measurement,
    and torch's allocator a note on blocks from before it: the speed job's output held 24 such lines."""
    import subprocess
    import sys

    script = (
        "import suite, torch\n"
        "from suite.measure.memory import peak_memory\n"
        "x = torch.randn(256, 256, requires_grad=True)\n"
        "before = [torch.randn(256, 256) for _ in range(3)]  # each freed inside a measurement\n"
        "for _ in range(3):\n"
        "    print(peak_memory(lambda: (before.pop() @ x).sum().backward(), torch.device('cpu')))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KINETO_", "TORCH_CPP_"))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "" and all(int(line) > 0 for line in done.stdout.split())


def test_encoder_layer_flops_match_the_analytic_count():
    b, l, d, f = 2, 48, 64, 256
    layer = EncoderLayer(d, 4, f, dropout=0.0).eval()
    x = torch.randn(b, l, d)
    projections = 2 * b * l * (4 * d * d)  # q, k, v and output: 4 D x D matmuls
    attention = 2 * 2 * b * l * l * d  # scores q k^T and weights @ v
    feed_forward = 2 * b * l * (2 * d * f)
    with torch.no_grad():
        assert count_flops(lambda: layer(x)) == projections + attention + feed_forward


def test_lstm_flops_match_the_analytic_count_forward_and_backward():
    # The fused oneDNN LSTM kernel is uncounted by FlopCounterMode; suite.measure.flops adds its formula.
    b, t, i, h = 3, 7, 16, 32
    lstm = torch.nn.LSTM(i, h, num_layers=2, batch_first=True)
    x = torch.randn(b, t, i, requires_grad=True)
    forward = 2 * b * t * 4 * h * (i + h) + 2 * b * t * 4 * h * (h + h)  # layer 1, layer 2: x W_ih^T + h W_hh^T
    assert count_flops(lambda: lstm(x)) == forward
    assert count_flops(lambda: lstm(x)[0].sum().backward()) == 3 * forward  # backward: input and weight gradients


def test_cudnn_rnn_formula_counts_every_layer_and_direction():
    # The CUDA path cannot run here; its formula is checked on the shapes cuDNN's op receives:
    # a 2-layer bidirectional LSTM (4 gates), input (T=7, B=3, I=16), hidden 32.
    from suite.measure.flops import flop_mapping

    t, b, i, h = 7, 3, 16, 32
    layer1 = [torch.Size([4 * h, i]), torch.Size([4 * h, h]), torch.Size([4 * h]), torch.Size([4 * h])] * 2
    layer2 = [torch.Size([4 * h, 2 * h]), torch.Size([4 * h, h]), torch.Size([4 * h]), torch.Size([4 * h])] * 2
    formula = flop_mapping()[torch.ops.aten._cudnn_rnn]
    per_direction = 2 * t * b * 4 * h * (i + h) + 2 * t * b * 4 * h * (2 * h + h)
    assert formula(torch.Size([t, b, i]), layer1 + layer2) == 2 * per_direction


def test_resume_skips_finished_points(tmp_path, monkeypatch):
    cfg = shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16"))
    first = execute(cfg, tmp_path)
    assert first.status == "ok"
    import suite.jobs.train

    monkeypatch.setattr(suite.jobs.train, "train_job", lambda **kw: pytest.fail("a finished point ran again"))
    again = execute(cfg, tmp_path)
    assert again.metrics == first.metrics and again.wall_seconds == first.wall_seconds
    changed = shrink(compose_config("task=long_range", "model=lstm", "task.seq_len=16", "seed=1"))
    monkeypatch.undo()
    assert execute(changed, tmp_path).seed == 1  # another config in the same directory runs


def test_gradient_flow_decays_for_rnn_not_for_attention(tmp_path):
    curves = {}
    for model in ("transformer", "rnn"):
        cfg = shrink(
            compose_config(
                "experiment=gradient_flow", f"model={model}", "task.seq_len=64", "job.n_models=2", "job.batch_size=8"
            )
        )
        record = execute(cfg, tmp_path / model)
        assert record.status == "ok", record.error
        curves[model] = record.curves["grad_norm_relative_by_distance"]
    assert len(curves["rnn"]) == 64 and curves["rnn"][0] == 1.0
    assert curves["rnn"][40] < 1e-3 * curves["rnn"][1]  # vanishing with distance
    assert curves["transformer"][40] > 0.1  # attention reaches far positions directly


def test_others_load_counts_cpu_time_that_is_not_ours(tmp_path):
    """Busy jiffies that appear during the block while this process sleeps belong to others."""
    import os
    import time

    from suite.measure.contention import OthersLoad

    tick = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    line = lambda busy: f"cpu  {busy} 0 0 1000 0 0 0 0 0 0\n"  # noqa: E731
    stat.write_text(line(0))
    with OthersLoad(stat, cpus=2) as load:
        time.sleep(0.5)
        stat.write_text(line(int(0.5 * tick)))  # others used half a CPU-second in a 0.5 s block of 2 CPUs
    assert 0.4 < load.share <= 0.5
    with OthersLoad(tmp_path / "absent") as missing:
        pass
    assert missing.share is None


def built_point(model: str, seq_len: int, *extra: str):
    """A speed point's model, task, first batch and update, as job=speed builds them (tiny sizes)."""
    from hydra.utils import instantiate

    from suite.jobs.prepare import prepare
    from suite.measure.harness import first_batch, trainer_update

    cfg = speed_cfg(model, seq_len, *extra)
    task = instantiate(cfg.task)
    model = prepare(cfg, torch.device("cpu"), task).model
    return model, task, first_batch(task, 2, cfg.seed), trainer_update(cfg, model)


@pytest.mark.parametrize("model", ["lstm", "gru", "rnn"])
def test_a_recurrent_count_extended_from_two_short_lengths_equals_the_direct_count(model, monkeypatch):
    """The extension is exact: at 320 positions, counted at 64 and 128 and extended, the same FLOPs as counted."""
    from suite.measure import harness

    net, task, batch, update = built_point(model, 320, "model.backbone.n_layers=2")
    assert batch.inputs.shape[1] == 320 and (batch.pad_mask is None or not batch.pad_mask.any())
    cpu = torch.device("cpu")
    train = count_flops(harness.training_step(net, task, batch, update, "fp32", cpu))
    infer = count_flops(harness.inferring(net, lambda: net(batch.inputs, batch.pad_mask), "fp32", cpu))
    seen = []
    monkeypatch.setattr(harness, "count_flops", lambda fn: seen.append(1) or count_flops(fn))
    assert harness.counted_flops(net, task, batch, update, cpu) == (train, infer) and train > infer > 0
    assert len(seen) == 4  # two lengths, a training step and an inference pass at each: not the 320 positions


@pytest.mark.parametrize("model, seq_len", [("transformer", 320), ("lstm", 96)])
def test_attention_and_short_sequences_are_counted_directly(model, seq_len, monkeypatch):
    """Attention's count is quadratic in the length: never extended; nor a recurrent one of 128 positions or fewer."""
    from suite.measure import harness

    net, task, batch, update = built_point(model, seq_len)
    seen = []
    monkeypatch.setattr(harness, "count_flops", lambda fn: seen.append(1) or count_flops(fn))
    harness.counted_flops(net, task, batch, update, torch.device("cpu"))
    assert len(seen) == 2  # the batch itself, once for training and once for inference
