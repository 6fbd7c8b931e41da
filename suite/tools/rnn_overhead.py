"""What the suite's recurrent baselines cost beyond torch's own cells: raw ``torch.nn`` against ours, same sizes.

    python -m suite.tools.rnn_overhead                     # batch 32, L 256, width 128, 2 layers, LSTM, GRU and RNN
    python -m suite.tools.rnn_overhead --precision fp32 bf16 --length 64

Per cell, timed interleaved in one process (forward + backward; median of the repeats):

- ``torch.nn``: the raw cell (``nn.LSTM``/``nn.GRU``/``nn.RNN``, batch first) on the embedded batch, through
  ``suite.models.rnn.run_cell`` (which runs an LSTM in fp32 under bf16 autocast on a CPU where torch has no bf16
  LSTM kernel: torch's own call fails there);
- ``encoder``: ``suite.models.rnn.RecurrentEncoder`` with the same weights on the same batch, right-padded
  (lengths 60-100 % of L, as the collators make them: the padding check and the zeroed outputs);
- ``classifier``: the composed ``model=<cell>`` classifier (embedding, dropout, encoder, pooling, head) and the
  task's loss on token ids of the same shape;
- ``training step``: that, plus gradient clipping, AdamW and the schedule (``suite.training.step``).

Each is printed with its ratio to the raw cell; the wrapper's own share is ``encoder`` over ``torch.nn``. Precision:
fp32, and bf16 autocast when asked (``--precision``), as a training run would run it.
"""

from __future__ import annotations

import argparse
from typing import Callable

import torch
from hydra.utils import instantiate

from suite.jobs.prepare import prepare
from suite.measure.harness import first_batch, trainer_update, training_step
from suite.measure.timing import Timing, time_calls
from suite.models.rnn import CELLS, RecurrentEncoder, run_cell
from suite.runtime import numerics
from suite.runtime.compose import composed
from suite.tools import measured_on, recurrent_sizes


def calls(cell: str, layers: int, batch: int, length: int, width: int, precision: str) -> dict[str, Callable[[], None]]:
    """The four forward + backward calls of one cell, built on the same weights and shapes."""
    cpu = torch.device("cpu")
    generator = torch.Generator().manual_seed(0)
    encoder = RecurrentEncoder(width, cell, n_layers=layers)
    raw = CELLS[cell](width, width, num_layers=layers, batch_first=True)
    raw.load_state_dict(encoder.rnn.state_dict())
    x = torch.randn(batch, length, width, generator=generator, requires_grad=True)
    lengths = torch.randint(length * 6 // 10, length + 1, (batch,), generator=generator)
    pad_mask = torch.arange(length)[None] >= lengths[:, None]  # (B, L), True at padding, after the real positions

    cfg = composed(
        [
            "task=long_range",
            f"task.seq_len={length}",
            "task.n_train=64",
            "task.n_val=8",
            "task.n_test=8",
            f"model={cell}",
            f"model.d_model={width}",
            f"model.backbone.n_layers={layers}",
        ]
    )
    task = instantiate(cfg.task)
    model = prepare(cfg, cpu, task).model
    tokens = first_batch(task, batch, cfg.seed)

    def autocast(fn: Callable[[], torch.Tensor]) -> Callable[[], None]:
        def run() -> None:
            with numerics.autocast(precision, cpu):
                out = fn()
            out.float().sum().backward()

        return run

    def classifier() -> torch.Tensor:
        model.train()
        return task.loss(model, tokens)

    return {
        "torch.nn": autocast(lambda: run_cell(raw, x)[0]),
        "encoder": autocast(lambda: encoder(x, pad_mask)),
        "classifier": autocast(classifier),
        "training step": training_step(model, task, tokens, trainer_update(cfg, model), precision, cpu),
    }


def main(argv: list[str] | None = None) -> dict[tuple[str, str], dict[str, Timing]]:
    parser = recurrent_sizes(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--cells", nargs="+", default=["lstm", "gru", "rnn"], choices=sorted(CELLS))
    parser.add_argument("--precision", nargs="+", default=["fp32"], choices=["fp32", "bf16"])
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite
    print(
        measured_on(
            torch.device("cpu"),
            f"forward + backward, batch {args.batch}, L {args.length}, width {args.width}, {args.layers} layers; "
            "median ms, and the ratio to the raw cell",
        )
    )
    print()
    print("| cell | precision | torch.nn | encoder | classifier | training step |")
    print("|---|---|---|---|---|---|")
    out = {}
    for cell in args.cells:
        for precision in args.precision:
            built = calls(cell, args.layers, args.batch, args.length, args.width, precision)
            times = time_calls(built, torch.device("cpu"), args.warmup, args.repeats)
            raw = times["torch.nn"].median
            cells = [f"{t.median * 1e3:.1f} ({t.median / raw:.2f}x)" for t in times.values()]
            print(f"| {cell} | {precision} | " + " | ".join(cells) + " |")
            out[(cell, precision)] = times
    return out


if __name__ == "__main__":
    main()
