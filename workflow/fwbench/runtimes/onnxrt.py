"""ONNX Runtime: the `onnxrt` mode of torch and tensorflow (each framework's own exporter
writes the .onnx file: frameworks.<framework>.export). The only module that imports
onnxruntime and onnx.

A session gets exactly the cell's threads: intra_op_num_threads = threads, inter-op 1,
sequential execution, every graph optimization (ORT_ENABLE_ALL), and the intra-op pool's
spinning set to ORT's default (spin) and recorded (ORT's own default thread count is every
physical core: never relied on). On the CPU the CPUExecutionProvider, on cuda the
CUDAExecutionProvider alone (onnxruntime-gpu), so a model that the CUDA provider cannot place
fails to load instead of running on the CPU unnoticed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort

from fwbench.frameworks.base import check_device
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.model.weights import Weights
from fwbench.runtimes.base import RuntimeAdapter, RuntimeRunner

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
# The intra-op pool's workers spin between runs (ORT's default), set explicitly and recorded.
SPINNING = ("session.intra_op.allow_spinning", "1")


def _cuda_available() -> bool:
    return PROVIDERS["cuda"] in ort.get_available_providers()


def session_options(threads: int) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry(*SPINNING)
    return options


def thread_settings(threads: int) -> dict[str, Any]:
    options = session_options(threads)
    return {
        "onnxruntime.intra_op_num_threads": options.intra_op_num_threads,
        "onnxruntime.inter_op_num_threads": options.inter_op_num_threads,
        "onnxruntime.execution_mode": "sequential",
        "onnxruntime.allow_spinning": options.get_session_config_entry(SPINNING[0]),
    }


def session(model: str | bytes, device: str, threads: int) -> ort.InferenceSession:
    check_device("onnxruntime", ort.__version__, device, _cuda_available)
    return ort.InferenceSession(
        model, sess_options=session_options(threads), providers=[PROVIDERS[device]]
    )


class OrtRunner(RuntimeRunner):
    """An ONNX file in one ONNX Runtime session (frameworks.protocols.Runner)."""

    RUNTIME = "onnxruntime"

    def _setup(self, weights: Weights | None) -> None:
        self.session = session(self.artifact, self.device, self.threads)
        (self._input,) = self.session.get_inputs()
        self._outputs = [self.session.get_outputs()[0].name]

    @staticmethod
    def version() -> str:
        return ort.__version__

    @staticmethod
    def cuda_available() -> bool:
        return _cuda_available()

    def input_shape(self) -> list[int | None]:
        return [d if isinstance(d, int) else None for d in self._input.shape]

    def bind(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {self._input.name: x}

    def call_in_context(self, prepared: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(self._outputs, prepared)[0]

    def compile_info(self) -> CompileInfo:
        return CompileInfo(
            compiled=True,
            how=f"ONNX Runtime InferenceSession ({', '.join(self.session.get_providers())}, "
            "ORT_ENABLE_ALL, sequential) running the framework's ONNX export",
            graph_count=1,
            details={
                "onnxruntime": ort.__version__,
                "providers": self.session.get_providers(),
                "graph_optimization_level": "ORT_ENABLE_ALL",
                "threads": thread_settings(self.threads),
                "artifact": self.artifact,
            },
        )


def _one_add_model() -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "null", [x], [y], [one]
    )
    opset = [helper.make_opsetid("", 17)]
    return helper.make_model(graph, opset_imports=opset, ir_version=8).SerializeToString()


def null_call(device: str, threads: int) -> NullCall:
    """ONNX Runtime's floor: one run of a one-Add model on a 1-element input."""
    runner = session(_one_add_model(), device, threads)
    feed = {"x": np.zeros(1, np.float32)}
    return NullCall(lambda: runner.run(["y"], feed), lambda _: None)


def adapter(framework: str) -> RuntimeAdapter:
    return RuntimeAdapter(framework, OrtRunner, thread_settings, null_call)
