"""ONNX Runtime's part of the hardware stage: its int8 GEMM peak (MatMulInteger, uint8
activations × int8 weights into int32, as onnxruntime.quantization writes a dynamically
quantized MatMul), on the CPU provider with the cells' session options (runtimes.onnxrt).

Run inside `python -m fwbench.hardware.workers ...` (the worker applies the thread settings
first); with runtimes.onnxrt, the only modules that import onnxruntime and onnx.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from fwbench.frameworks import RUNTIME_GEMMS
from fwbench.host.harness import time_calls
from fwbench.runtimes.onnxrt import PROVIDERS, session_options, thread_settings

GEMM_DTYPES = RUNTIME_GEMMS["onnxrt"]  # the registry's: what the hardware stage asks of it
# MatMulInteger since opset 10; the IR version ONNX Runtime reads (onnx writes a newer one).
OPSET, IR_VERSION = 13, 10


_THREADS: list[int] = []  # the worker's thread count, given to setup before any gemm


def setup(threads: int) -> dict[str, Any]:
    _THREADS[:] = [threads]
    return {"onnxruntime": ort.__version__, "onnx": onnx.__version__} | thread_settings(threads)


def _matmul_integer(n: int) -> bytes:
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.UINT8, [n, n]),
        helper.make_tensor_value_info("b", TensorProto.INT8, [n, n]),
    ]
    output = helper.make_tensor_value_info("y", TensorProto.INT32, [n, n])
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "gemm", inputs, [output]
    )
    opsets = [helper.make_opsetid("", OPSET)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION).SerializeToString()


def gemm(n: int, trials: int, dtype: str, device: str) -> dict[str, Any]:
    """Best of `trials` n×n @ n×n MatMulInteger runs (after one untimed run), uint8 activations
    and 7-bit int8 weights, the int32 output bound once (IOBinding: no copy or allocation per
    run); 2n³ operations."""
    if dtype not in GEMM_DTYPES or device != "cpu":
        raise ValueError(
            f"ONNX Runtime's hardware GEMM is int8 on the CPU, not {dtype} on {device}"
        )
    if not _THREADS:
        raise RuntimeError("setup(threads) was not called before gemm")
    options = session_options(_THREADS[0])
    session = ort.InferenceSession(_matmul_integer(n), options, providers=[PROVIDERS[device]])
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n), dtype=np.uint8)
    # weights in 7 bits, as quantize_dynamic's reduce_range writes them for CPUs without a
    # dot-product instruction: there the kernel's VPMADDUBSW adds two u8×s8 products in
    # int16, and full-range weights (2 × 255 × 127) saturate it (a Zen 3 left wrong values);
    # the instructions and so the pace are the same
    b = rng.integers(-64, 64, (n, n), dtype=np.int8)
    out = np.empty((n, n), dtype=np.int32)
    binding = session.io_binding()
    binding.bind_cpu_input("a", a)
    binding.bind_cpu_input("b", b)
    binding.bind_output("y", "cpu", 0, np.int32, out.shape, out.ctypes.data)
    timing = time_calls(lambda: session.run_with_iobinding(binding), lambda _: None, 0, trials)
    if not np.array_equal(out[:2], a[:2].astype(np.int64) @ b.astype(np.int64)):
        raise ArithmeticError(f"MatMulInteger at n={n} left wrong values in its first rows")
    return timing.gemm_record("onnxruntime MatMulInteger(uint8 a, int8 b) -> int32, IOBinding")
