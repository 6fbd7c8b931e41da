"""Our encoder against ``torch.nn.TransformerEncoder`` at the same size, timed in one run.

    python -m suite.tools.perf            # batch 32, length 256, d_model 256, 4 layers, 4 heads, d_ff 1024
    python -m suite.tools.perf --batch 8 --length 1024 --dropout 0 0.1

Prints training-step time (forward + backward) and inference time (eval, no grad) for both,
and the ratio ours / torch (below 1.0: ours is faster), in fp32 and in the precision a run of
the encoder uses here (``--precision auto``: bf16 autocast on an AMX CPU; ``--precision bf16`` forces it),
at dropout 0 and at the model config's dropout (0.1 after the embedding, each sublayer and the
feed-forward activation: what every training run pays). Neither drops attention weights, as the
configs do not (``conf/model/attention/full.yaml``: on a CPU, attention dropout would take SDPA off
its fused kernel, onto the math path that materialises the weights). A third column times ours with
``torch.nn.Dropout`` swapped in for the suite's (``suite.nn.dropout``), so what the cheaper masks
buy is measured in the same run.
"""

from __future__ import annotations

import argparse
import copy

import torch
from torch import nn

from suite.measure.timing import time_calls
from suite.models.transformer import Encoder
from suite.nn.dropout import with_torch_dropout
from suite.runtime import numerics
from suite.tools import measured_on, titled


def build_pair(
    d_model: int, layers: int, heads: int, d_ff: int, device: torch.device, dropout: float = 0.0
) -> tuple[nn.Module, nn.Module]:
    """Ours and torch's post-norm ReLU encoder: the same sizes, ``dropout`` on sublayers and feed-forward, none on
    the attention weights (as the configs)."""
    ours = Encoder(d_model, layers, heads, d_ff, dropout=dropout, activation="relu", norm_first=False)
    layer = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=dropout, activation="relu", batch_first=True)
    layer.self_attn.dropout = 0.0  # torch's layer gives its attention the sublayer dropout; the configs give it none
    theirs = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return ours.to(device), theirs.to(device)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--precision",
        default="auto",
        choices=numerics.PRECISIONS,
        help="timed beside fp32: auto (what a run of the encoder uses on this device), or bf16 to force it",
    )
    parser.add_argument(
        "--dropout", type=float, nargs="+", default=[0.0, 0.1], help="dropouts timed (default: 0 and the config's 0.1)"
    )
    args = parser.parse_args(argv)
    numerics.set_flush_denormals(True)  # as every run of the suite: subnormals would time the data, not the model
    device = torch.device(args.device)
    x = torch.randn(args.batch, args.length, args.d_model, device=device)
    tokens = args.batch * args.length

    def train_step(model: nn.Module):
        def step() -> None:
            model.train()
            model.zero_grad(set_to_none=True)
            model(x).float().pow(2).mean().backward()

        return step

    def infer(model: nn.Module):
        def run() -> None:
            model.eval()
            with torch.inference_mode():
                model(x)

        return run

    probe = build_pair(args.d_model, args.layers, args.heads, args.d_ff, device)[0]
    precisions = list(dict.fromkeys(["fp32", numerics.resolve_precision(args.precision, device, probe)]))
    print(
        measured_on(
            device,
            f"batch {args.batch}, length {args.length}, d_model {args.d_model}, {args.layers} layers, "
            f"{args.heads} heads, d_ff {args.d_ff}; median of {args.repeats} after {args.warmup} warm-up; "
            f"precision {args.precision} -> {precisions[-1]} ({numerics.choose(args.precision, device, probe).reason})",
        )
    )
    for p in args.dropout:
        torch.manual_seed(0)
        ours, theirs = build_pair(args.d_model, args.layers, args.heads, args.d_ff, device, p)
        models = {"ours": ours, "torch": theirs}
        if p > 0:  # the same weights, torch's dropout: what the suite's masks buy
            models["ours, nn.Dropout"] = with_torch_dropout(copy.deepcopy(ours))
        rows = []
        for precision in precisions:
            with numerics.autocast(precision, device):
                train = time_calls({k: train_step(m) for k, m in models.items()}, device, args.warmup, args.repeats)
                inference = time_calls({"ours": infer(ours), "torch": infer(theirs)}, device, args.warmup, args.repeats)
            for label, t in ((f"training step, {precision}", train), (f"inference, {precision}", inference)):
                rows.append(
                    {
                        "": label,
                        "ours": str(t["ours"]),
                        "torch.nn": str(t["torch"]),
                        "ours, nn.Dropout": str(t["ours, nn.Dropout"]) if "ours, nn.Dropout" in t else "-",
                        "ours / torch": f"{t['ours'].median / t['torch'].median:.3f}",
                        "tokens/s ours": f"{tokens / t['ours'].median:,.0f}",
                        "tokens/s torch": f"{tokens / t['torch'].median:,.0f}",
                    }
                )
        print(titled(f"dropout {p}", rows))


if __name__ == "__main__":
    main()
