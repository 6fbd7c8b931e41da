"""python -m suite.tools.rnn_overhead: the suite's recurrent baselines against raw torch.nn cells, timed together."""

import pytest
import torch

from suite.tools.rnn_overhead import calls, main


@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_the_raw_cell_and_the_encoder_compute_the_same_real_outputs(cell):
    """The comparison is fair: the encoder runs the raw cell's weights, and its real outputs are the raw cell's."""
    from suite.models.rnn import CELLS, RecurrentEncoder

    torch.manual_seed(0)
    encoder = RecurrentEncoder(8, cell, n_layers=2)
    raw = CELLS[cell](8, 8, num_layers=2, batch_first=True)
    raw.load_state_dict(encoder.rnn.state_dict())
    x = torch.randn(3, 10, 8)
    pad = torch.arange(10)[None] >= torch.tensor([10, 7, 6])[:, None]
    ours, theirs = encoder(x, pad), raw(x)[0]
    assert torch.allclose(ours[~pad], theirs[~pad], atol=1e-6) and (ours[pad] == 0).all()


def test_every_call_runs_forward_and_backward_in_both_precisions():
    for precision in ("fp32", "bf16"):
        built = calls("gru", layers=1, batch=2, length=12, width=8, precision=precision)
        assert list(built) == ["torch.nn", "encoder", "classifier", "training step"]
        for fn in built.values():
            fn()


def test_the_command_line_prints_a_row_per_cell_and_precision(capsys):
    out = main(
        [
            "--batch",
            "2",
            "--length",
            "12",
            "--width",
            "8",
            "--layers",
            "1",
            "--repeats",
            "2",
            "--warmup",
            "0",
            "--cells",
            "lstm",
            "rnn",
            "--precision",
            "fp32",
            "bf16",
        ]
    )
    assert set(out) == {("lstm", "fp32"), ("lstm", "bf16"), ("rnn", "fp32"), ("rnn", "bf16")}
    rows = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| lstm") or line.startswith("| rnn")
    ]
    assert len(rows) == 4 and all(row.count("x)") == 4 for row in rows)  # four timings, each with its ratio
