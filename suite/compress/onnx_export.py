"""Export to ONNX and run with ONNX Runtime, in fp32 or with its dynamic int8 quantization: the CPU deployment path.

The export is torch's (``torch.onnx.export``, the ``torch.export``-based exporter), with the
batch and the length left dynamic; ONNX Runtime's ``quantize_dynamic`` turns the fp32 graph's
MatMul weights into int8. ``OnnxModel`` wraps a session behind the classifier's call
``(inputs, pad_mask) -> logits``, so the task scores it and the harness times it as any model.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import torch
from torch import Tensor, nn

from suite.compress.method import Context, Method
from suite.models.rnn import RecurrentEncoder
from suite.models.seq2seq import Seq2Seq
from suite.runtime import numerics
from suite.types import Batch

PRECISIONS = ("fp32", "int8")


class OnnxModel(nn.Module):
    """An ONNX Runtime session behind a classifier's call: (inputs (B, L) | (B, C, H, W), pad_mask (B, L) | None) ->
    logits (B, C).

    Args:
        path: the ``.onnx`` file.
        threads: intra-op threads of the session (torch's count, so both run alike).
    """

    def __init__(self, path: Path, threads: int) -> None:
        super().__init__()
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def forward(self, inputs: Tensor, pad_mask: Tensor | None = None) -> Tensor:
        feeds = {"inputs": inputs.cpu().numpy()}
        if "pad_mask" in self.input_names:  # token models were exported with an explicit mask
            mask = pad_mask if pad_mask is not None else torch.zeros(inputs.shape[:2], dtype=torch.bool)
            feeds["pad_mask"] = mask.cpu().numpy()
        return torch.from_numpy(self.session.run(None, feeds)[0])

    def stored_weights(self) -> Iterator[Tensor]:
        """The graph's initializers (its weights, int8 ones as their codes)."""
        import onnx
        from onnx import numpy_helper

        for init in onnx.load(str(self.path)).graph.initializer:
            yield torch.from_numpy(numpy_helper.to_array(init).copy())


def export(model: nn.Module, example: Batch, path: Path) -> Path:
    """Write ``model`` (a classifier) to ``path`` as ONNX with a dynamic batch (and length, for token inputs)."""
    model = model.eval()
    tokens = not example.inputs.is_floating_point()
    if tokens:  # a mask is always fed, so the graph has one signature whatever the batch's padding
        mask = example.pad_mask if example.pad_mask is not None else torch.zeros(example.inputs.shape, dtype=torch.bool)
        args: tuple[Tensor, ...] = (example.inputs.cpu(), mask.cpu())
        names = ["inputs", "pad_mask"]
        dynamic: dict[str, Any] = {"inputs": {0: "batch", 1: "length"}, "pad_mask": {0: "batch", 1: "length"}}
    else:
        args, names, dynamic = (example.inputs.cpu(),), ["inputs"], {"inputs": {0: "batch"}}
    with quiet("onnx_ir", "onnxscript"):  # their passes log every rewrite at INFO
        # One file, weights inside (external_data=False): its size is the artefact's size.
        torch.onnx.export(
            model.cpu(),
            args,
            str(path),
            input_names=names,
            output_names=["logits"],
            dynamic_shapes=dynamic,
            dynamo=True,
            external_data=False,
            verbose=False,
        )
    return path


@contextmanager
def quiet(*names: str) -> Iterator[None]:
    """Loggers ``names`` (the root logger when none) at WARNING for the block."""
    loggers = [logging.getLogger(name) for name in names] or [logging.getLogger()]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


class OnnxRuntime(Method):
    """Export to ONNX, run with ONNX Runtime in fp32, or int8 through its dynamic quantization.

    Args:
        precision: 'fp32' (the exported graph) or 'int8' (ONNX Runtime's ``quantize_dynamic`` of it, int8 weights).
    """

    name = "onnx"

    def __init__(self, precision: str = "fp32", fine_tune: dict[str, Any] | None = None) -> None:
        super().__init__(fine_tune)
        if precision not in PRECISIONS:
            raise ValueError(f"compress.precision must be one of {PRECISIONS}, got {precision!r}")
        self.precision = precision
        self.reduce_range = not numerics.cpu_int8_dot()

    def check(self, model: nn.Module) -> None:
        if any(isinstance(m, RecurrentEncoder) for m in model.modules()):
            raise ValueError(
                f"compress=onnx (precision {self.precision}): the recurrent backbone runs packed sequences "
                "(pack_padded_sequence), which torch's ONNX export cannot express; export "
                "applies to the attention models"
            )
        if isinstance(model, Seq2Seq):
            raise ValueError(
                f"compress=onnx (precision {self.precision}): a sequence-to-sequence model's output comes from "
                "a search that runs the decoder step by step with a cache; this export covers one-pass models "
                "(classifiers), not an encoder plus a decoder step: use compress=dynamic_int8 for translation"
            )

    def compress(self, model: nn.Module, context: Context) -> nn.Module:
        if context.device.type != "cpu":
            raise ValueError(
                f"compress=onnx runs ONNX Runtime on the CPU only; run with device=cpu (got {context.device})"
            )
        fp32 = context.directory / "model.onnx"
        try:
            export(model, context.example, fp32)
        except Exception as err:  # noqa: BLE001 - the exporter's errors are many and long: name the setting, keep the cause
            raise ValueError(
                f"compress=onnx: torch's ONNX export cannot express this model ({type(err).__name__}: "
                f"{str(err).splitlines()[0][:300]})"
            ) from err
        path = fp32
        if self.precision == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            path = context.directory / "model.int8.onnx"
            with quiet():  # ONNX Runtime's quantizer logs every tensor at INFO on the root logger
                # 7-bit weights where the CPU has no int8 dot product: its u8 x s8 pair sums saturate at 16 bits (an
                # AVX2 EPYC's int8 logits were 0.17 off fp32 on a tiny model with 8 bits, within the test's 5 % with 7),
                # as ONNX Runtime advises.
                quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8, reduce_range=self.reduce_range)
            fp32.unlink()  # the artefact is the int8 graph alone
        return OnnxModel(path, torch.get_num_threads())

    def save(self, model: nn.Module, context: Context) -> Path:
        return model.path  # written by the export

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "precision": self.precision} | (
            {"reduce_range": self.reduce_range} if self.precision == "int8" else {}
        )
