"""LiteRT (TensorFlow Lite's runtime, the `ai-edge-litert` interpreter): tensorflow's `litert`
mode (frameworks.tensorflow.export converts the Keras model). The only module that imports
ai_edge_litert.

The interpreter gets exactly the cell's threads (`num_threads`; LiteRT's own default is 1:
never relied on) and its default op resolver, which applies the XNNPACK delegate to the float
ops it supports. The artifact's batch axis is dynamic: each input's batch is set with
resize_tensor_input and allocated once, outside the timed calls. LiteRT has no CUDA path: a
cuda system's litert cell fails, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version as distribution_version
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter

from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.trace import Trace
from fwbench.model.weights import Weights
from fwbench.runtimes.base import RuntimeAdapter, RuntimeRunner

VERSION = distribution_version("ai-edge-litert")
NO_CUDA = "LiteRT has no CUDA path (not applicable on a cuda system)"


def thread_settings(threads: int) -> dict[str, Any]:
    return {"litert.num_threads": threads, "litert.op_resolver": "default (XNNPACK delegate)"}


class LiteRTRunner(RuntimeRunner):
    """A .tflite file in one LiteRT interpreter (frameworks.protocols.Runner)."""

    RUNTIME = "litert"

    def _setup(self, weights: Weights | None) -> None:
        if self.device != "cpu":
            raise RuntimeError(NO_CUDA)
        self.interpreter = Interpreter(model_path=self.artifact, num_threads=self.threads)
        (self._input,) = self.interpreter.get_input_details()
        self._output = self.interpreter.get_output_details()[0]["index"]

    @staticmethod
    def version() -> str:
        return VERSION

    @staticmethod
    def cuda_available() -> bool:
        return False

    def input_shape(self) -> list[int | None]:
        signature = self._input.get("shape_signature", self._input["shape"])
        return [int(d) if d >= 0 else None for d in signature]

    def bind(self, x: np.ndarray) -> np.ndarray:
        """Size the input to this batch, allocate, and set it: the calls only invoke."""
        index = self._input["index"]
        self.interpreter.resize_tensor_input(index, list(x.shape), strict=True)
        self.interpreter.allocate_tensors()
        self.interpreter.set_tensor(index, x)
        return x

    def call_in_context(self, prepared: np.ndarray) -> np.ndarray:
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self._output)

    def compile_info(self) -> CompileInfo:
        return CompileInfo(
            compiled=True,
            how="LiteRT Interpreter (default op resolver: XNNPACK delegate) invoking the "
            "TFLite converter's flatbuffer",
            graph_count=1,
            details={
                "ai-edge-litert": VERSION,
                "threads": thread_settings(self.threads),
                "artifact": self.artifact,
            },
        )


def _tensor(name: str, buffer: int) -> schema.TensorT:
    tensor = schema.TensorT()
    tensor.shape, tensor.type = [1], schema.TensorType.FLOAT32
    tensor.buffer, tensor.name = buffer, name
    return tensor


def _buffer(data: bytes = b"") -> schema.BufferT:
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(data, np.uint8) if data else None
    return buffer


def one_add_model() -> bytes:
    """A .tflite flatbuffer of one ADD of a constant 1 to a 1-element input, written with
    LiteRT's own schema (no converter, so no TensorFlow in a LiteRT cell)."""
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = schema.BuiltinOperator.ADD
    code.version = 1
    add = schema.OperatorT()
    add.opcodeIndex, add.inputs, add.outputs = 0, [0, 1], [2]
    add.builtinOptionsType = schema.BuiltinOptions.AddOptions
    add.builtinOptions = schema.AddOptionsT()
    graph = schema.SubGraphT()
    graph.tensors = [_tensor("x", 1), _tensor("one", 2), _tensor("y", 3)]
    graph.inputs, graph.outputs, graph.operators = [0], [2], [add]
    model = schema.ModelT()
    model.version, model.operatorCodes, model.subgraphs = 3, [code], [graph]
    model.buffers = [_buffer(), _buffer(), _buffer(np.float32([1.0]).tobytes()), _buffer()]
    builder = flatbuffers.Builder(256)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def null_call(device: str, threads: int) -> NullCall:
    """LiteRT's floor: one invoke of a one-ADD model on a 1-element input and the read of its
    output, as a cell's call invokes and reads, in an interpreter made as the cell's is."""
    if device != "cpu":
        raise RuntimeError(NO_CUDA)
    interpreter = Interpreter(model_content=one_add_model(), num_threads=threads)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.zeros(1, np.float32))
    output = interpreter.get_output_details()[0]["index"]

    def call() -> np.ndarray:
        interpreter.invoke()
        return interpreter.get_tensor(output)

    return NullCall(call, lambda _: None)


NO_PROFILER = (
    "LiteRT's Python interpreter has no profiler (its op profiler is in the C++ "
    "benchmark_model tool): kernel time is not seen (in the residual); one launch per call "
    "(an invoke), at the floor of a one-ADD model's invoke"
)


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """No profiler to run: `run` runs unprofiled, and its trace holds what is known without
    one: each call is one invoke, one launch; its kernels are not seen."""
    run()
    return Trace(calls, calls, (), 0, kernels_visible=False, note=NO_PROFILER)


def adapter(framework: str) -> RuntimeAdapter:
    return RuntimeAdapter(framework, LiteRTRunner, thread_settings, null_call, profile)
