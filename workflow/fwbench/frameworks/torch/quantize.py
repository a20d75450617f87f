"""torch's static int8 (fwbench.precisions.INT8_STATIC): the PT2E flow with the x86 Inductor
quantizer, as torch's own tutorial ("PyTorch 2 Export Quantization with X86 Backend through
Inductor") has its users quantize for the CPU, from torchao (torch.ao's PT2E quantization moved
there).

The float32 module is captured by torch.export, annotated by X86InductorQuantizer's default
static config (activations uint8 per tensor, HistogramObserver; weights int8 per output
channel, symmetric, PerChannelMinMaxObserver), calibrated on the seeded calibration set
(fwbench.model.weights.make_calibration), and converted: quantize and dequantize nodes around
each product, which inductor (with freezing) lowers to oneDNN's integer kernels
(qlinear_pointwise, qconv_pointwise). The aoti export packages the converted program
(frameworks.torch.export).

`quantization_roundings` reads every rounding of a converted module at an input (what
model.precision_bound.quantization_bound needs, and the stored activations at a limit): the
AOTInductor package's constants cannot be read back, so the checks job redoes the
quantization from the same weights and calibration set (its observers' ranges equal up to
float summation order).
"""

from __future__ import annotations

import time
from importlib.metadata import version as distribution_version
from typing import Any

import numpy as np
import torch

from fwbench.host.identity import int8_widens
from fwbench.model.precision_bound import Roundings, moves_data

SETTINGS = {
    "method": "torchao PT2E: prepare_pt2e, calibration, convert_pt2e",
    "quantizer": "X86InductorQuantizer, get_default_x86_inductor_quantization_config(reduce_range)"
    " with reduce_range where the CPU has no VNNI/AMX-INT8 (host.identity.int8_widens)",
    "activations": "uint8 per tensor, affine (HistogramObserver), scales fixed by calibration",
    "weights": "int8 per output channel, symmetric (PerChannelMinMaxObserver)",
    "lowered_by": "inductor with freezing: oneDNN's qlinear/qconv kernels",
}


def pt2e(
    module: torch.nn.Module, calibration: list[np.ndarray]
) -> tuple[torch.fx.GraphModule, dict[str, Any]]:
    """The converted module of a float32 `module` calibrated on `calibration` (batches in the
    module's own layout; the first is the example torch.export captures it with, its batch
    axis dynamic), and what a manifest records of it."""
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as x86
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if not calibration:
        raise ValueError("torch's PT2E static quantization needs a calibration set")
    device = next(module.parameters()).device
    if device.type != "cpu":
        raise ValueError(f"the x86 Inductor quantizer lowers to oneDNN's CPU kernels, not {device}")
    example = torch.from_numpy(np.ascontiguousarray(calibration[0], dtype=np.float32))
    batch = torch.export.Dim("batch", min=1)
    reduce_range = int8_widens()
    start = time.perf_counter()
    with torch.no_grad():
        captured = torch.export.export(module, (example,), dynamic_shapes=({0: batch},))
        quantizer = x86.X86InductorQuantizer()
        config = x86.get_default_x86_inductor_quantization_config(reduce_range=reduce_range)
        quantizer.set_global(config)
        prepared = prepare_pt2e(explicit_same_padding(captured.module()), quantizer)
        for rows in calibration:
            prepared(torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)))
        converted = convert_pt2e(prepared)
    details = SETTINGS | {
        "reduce_range": reduce_range,
        "torchao": distribution_version("torchao"),
        "quantize_s": time.perf_counter() - start,
    }
    return converted, details


def explicit_same_padding(module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`module` with each padding="same" convolution (aten.conv2d.padding) written as
    aten.conv2d.default with the symmetric padding it stands for, dilation·(k − 1)/2 per axis
    (an odd kernel; an even one is left, and the quantizer's refusal is the cell's failure).
    WORKAROUND: torchao 0.18's X86InductorQuantizer annotates aten.conv2d.default alone and
    raises "is not an aten conv2d operator" on the padding overload, which torch.export writes
    for nn.Conv2d(padding="same"). tests/test_quantize.py fails when the quantizer takes it."""
    for node in module.graph.nodes:
        if node.target is not torch.ops.aten.conv2d.padding:
            continue
        defaults = (None, None, None, 1, "valid", 1, 1)  # the overload's, by position
        x, weight, bias, stride, padding, dilation, groups = (
            *node.args,
            *defaults[len(node.args) :],
        )
        kernel = weight.meta["val"].shape[2:]
        dilations = [dilation] * len(kernel) if isinstance(dilation, int) else list(dilation)
        if padding == "same" and any(k % 2 == 0 for k in kernel):
            continue
        pairs = zip(kernel, dilations, strict=True)
        pads = [d * (k - 1) // 2 if padding == "same" else 0 for k, d in pairs]
        node.target = torch.ops.aten.conv2d.default
        strides = [stride] * len(kernel) if isinstance(stride, int) else list(stride)
        node.args = (x, weight, bias, strides, pads, dilations, groups)
    module.recompile()
    return module


_QUANTIZE = "quantized_decomposed.quantize_per_tensor.default"
_DEQUANTIZE_WEIGHT = (
    "quantized_decomposed.dequantize_per_channel.default",
    "quantized_decomposed.dequantize_per_tensor.default",
)


def quantization_roundings(converted: torch.fx.GraphModule, x: torch.Tensor) -> Roundings:
    """c of each rounding of a converted module at `x`: each activation's quantize_per_tensor
    (its output less its zero point; its values at quant_min or quant_max counted) but a
    requantization after a data move (`_requantizes`), and each weight's stored int8 (a
    dequantize of a constant, per channel along its axis)."""
    values = _run_keeping_values(converted, x)
    found = Roundings()
    for node in converted.graph.nodes:
        if str(node.target) == _QUANTIZE and not _requantizes(node):
            _, _, zero, low, high = node.args[:5]  # (x, scale, zero point, quant_min, quant_max)
            found.activation(values[node.name], zero, low, high)
        elif str(node.target) in _DEQUANTIZE_WEIGHT and node.args[0].op == "get_attr":
            q, zero = values[node.args[0].name], values.get(getattr(node.args[2], "name", ""))
            zero = node.args[2] if zero is None else zero
            axis = node.args[3] if str(node.target) == _DEQUANTIZE_WEIGHT[0] else None
            found.weight(q, zero, axis)
    if not found.steps:
        raise RuntimeError("the converted module rounds no value to integers: nothing to bound")
    return found


def _requantizes(node: torch.fx.Node) -> bool:
    """Whether a quantize_per_tensor rounds values already on its grid: a data move's output
    (model.precision_bound.moves_data) whose input a dequantize_per_tensor of the same scale and
    zero point made."""
    move = node.args[0]
    if not isinstance(move, torch.fx.Node) or move.op != "call_function" or not move.args:
        return False
    if not moves_data(str(move.target).split(".")[1 if "." in str(move.target) else 0]):
        return False
    source = move.args[0]
    return (
        isinstance(source, torch.fx.Node)
        and str(source.target) == "quantized_decomposed.dequantize_per_tensor.default"
        and tuple(source.args[1:3]) == tuple(node.args[1:3])
    )


def _run_keeping_values(module: torch.fx.GraphModule, x: torch.Tensor) -> dict[str, Any]:
    """Every node's value when `module` runs on `x` (a torch.fx.Interpreter that keeps them)."""
    kept: dict[str, Any] = {}

    class Keeping(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            kept[node.name] = result = super().run_node(node)
            return result

    with torch.no_grad():
        Keeping(module).run(x)
    return kept
