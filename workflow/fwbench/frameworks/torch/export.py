"""The torch export adapter (frameworks.protocols.ExportAdapter): modes `aoti` and `onnxrt`.

Both trace the eval module with torch.export and a dynamic batch dimension.
- aoti: AOTInductor compiles the exported program into a package (`.pt2`: the generated
  C++/kernels and the weights), which `torch._inductor.aoti_load_package` loads in the cell
  (frameworks.torch.infer). On the CPU inductor's freezing is on, as the AOTInductor docs
  advise there (weights folded into the compiled code as constants).
- onnxrt: torch.onnx.export(..., dynamo=True) (the torch.export-based exporter, onnxscript's
  translation, its graph optimizations on) writes one .onnx file with the weights inside;
  ONNX Runtime runs it (runtimes.onnxrt).
Both export the module in the cell's precision (models.build_module: module.to(dtype)) with an
example input of that dtype, so the artifact takes and computes in it. aoti's int8_static
packages the float32 module quantized by PT2E with the x86 Inductor quantizer, calibrated on the
seeded calibration set (frameworks.torch.quantize); onnxrt's int8 and int8_static are ONNX
Runtime's quantizations of the float32 export, made by the runtime (runtimes.onnxrt).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from fwbench.frameworks import FLOAT32, INT8_STATIC, check_precision
from fwbench.frameworks.protocols import Exported
from fwbench.frameworks.torch.models import DTYPES, build_module
from fwbench.frameworks.torch.quantize import pt2e
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights

SUFFIXES = {"aoti": ".pt2", "onnxrt": ".onnx"}
# torch.export specializes a dimension whose example size is 0 or 1: the example has 2 rows.
EXAMPLE_BATCH = 2


def _freezing(device: str) -> bool:
    return device == "cpu"


def export(
    spec: ArchSpec,
    weights: Weights,
    mode: str,
    device: str,
    stem: str,
    precision: str = FLOAT32,
    calibration: list[np.ndarray] | None = None,
) -> Exported:
    """`calibration`: int8_static's (aoti), quantized by PT2E before packaging."""
    if mode not in SUFFIXES:
        raise ValueError(f"torch has no export mode {mode!r}; its export modes: aoti, onnxrt")
    check_precision("torch", mode, precision)
    module = build_module(spec, weights, precision).to(device).eval()
    shape = spec.input_shape(EXAMPLE_BATCH)
    example = torch.zeros(shape, dtype=DTYPES[precision], device=device)
    batch = torch.export.Dim("batch", min=1)
    quantized: dict[str, Any] = {}
    if precision == INT8_STATIC:  # the converted module is what aoti packages
        module, quantized = pt2e(module, calibration or [])
    if mode == "onnxrt":
        exported = onnx_export(module, example, stem + SUFFIXES[mode])
    else:
        exported = _aoti(module, example, batch, stem + SUFFIXES[mode], device)
    details = exported.details | {"precision": precision}
    if quantized:
        details["quantization"] = quantized
        exported = replace(
            exported, how=exported.how + "; quantized by PT2E (X86InductorQuantizer)"
        )
    return replace(exported, details=details)


def onnx_export(module: torch.nn.Module, example: torch.Tensor, path: str) -> Exported:
    """`module` (in eval mode) as an ONNX file at `path`, by torch's dynamo exporter with a
    dynamic batch: the onnxrt cells' export, and the trained model's (frameworks.torch.train)."""
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad():
        start = time.perf_counter()
        program = torch.onnx.export(
            module,
            (example,),
            path,
            dynamo=True,
            dynamic_shapes=({0: batch},),
            input_names=["x"],
            output_names=["y"],
            external_data=False,
        )
        exported = time.perf_counter()
    return Exported(
        file=path,
        how="torch.onnx.export(module.eval(), dynamo=True, dynamic batch)",
        details={
            "dynamic": "batch (dim 0, min 1)",
            "torch": torch.__version__,
            "example_batch": int(example.shape[0]),
            "opset": _opset(program),
            "export_s": exported - start,
        },
    )


def _opset(program: Any) -> int | None:
    imports = getattr(getattr(program, "model", None), "opset_imports", {}) or {}
    return imports.get("")


def _aoti(
    module: torch.nn.Module, example: torch.Tensor, batch: Any, path: str, device: str
) -> Exported:
    from torch._inductor import aoti_compile_and_package

    configs: dict[str, Any] = {"freezing": _freezing(device)}
    with torch.no_grad():
        start = time.perf_counter()
        program = torch.export.export(module, (example,), dynamic_shapes=({0: batch},))
        traced = time.perf_counter()
        path = aoti_compile_and_package(program, package_path=path, inductor_configs=configs)
        compiled = time.perf_counter()
    return Exported(
        file=str(path),
        how=(
            "torch.export.export(module.eval(), dynamic batch) -> "
            "torch._inductor.aoti_compile_and_package"
        ),
        details={
            "inductor_configs": configs,
            "dynamic": "batch (dim 0, min 1)",
            "torch": torch.__version__,
            "example_batch": int(example.shape[0]),
            "graph_nodes": sum(1 for _ in program.graph.nodes),
            "trace_s": traced - start,
            "compile_s": compiled - traced,
        },
    )
