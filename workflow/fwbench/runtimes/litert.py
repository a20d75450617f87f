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

import numpy as np
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


def null_call(device: str, threads: int) -> NullCall | None:
    """None: a LiteRT model comes only from a converter (TensorFlow), which a LiteRT cell does
    not import; its floor is not measured (null_call_s is NaN, and the cell says why)."""
    return None


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """Raises, saying why there is no profile: the cell records the reason as its
    attribution."""
    raise NotImplementedError(
        "LiteRT's Python interpreter has no profiler (its op profiler is in the C++ "
        "benchmark_model tool), and a LiteRT cell has no floor to count launches against"
    )


def adapter(framework: str) -> RuntimeAdapter:
    return RuntimeAdapter(framework, LiteRTRunner, thread_settings, null_call, profile)
