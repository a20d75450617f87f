"""ONNX Runtime: the `onnxrt` mode of torch and tensorflow (each framework's own exporter
writes the .onnx file: frameworks.<framework>.export). With its hardware part
(runtimes.onnxrt_hardware: the int8 GEMM peak), the only module that imports onnxruntime and
onnx.

A session gets exactly the cell's threads: intra_op_num_threads = threads, inter-op 1,
sequential execution, every graph optimization (ORT_ENABLE_ALL), and the intra-op pool's
spinning set to ORT's default (spin) and recorded (ORT's own default thread count is every
physical core: never relied on). On the CPU the CPUExecutionProvider, on cuda the
CUDAExecutionProvider alone (onnxruntime-gpu), so a model that the CUDA provider cannot place
fails to load instead of running on the CPU unnoticed.

ONNX Runtime profiles only a session created with profiling on, so every session is a
`Session`: the attribution pass (`profile`) gives each one a twin made with the same model,
options and threads and profiling on, sends the calls to it over the pass, and reads the
profile it writes; the timed session is never profiled.

A bfloat16 cell loads its framework's bf16 export. ONNX Runtime's Python API feeds and fetches
numpy arrays, and numpy has no bfloat16: the input goes in as an OrtValue of its bits (rounded
to nearest by ml_dtypes) and the session is called with run_with_ort_values, whose bf16 output
to_numpy reads as float32. Where ONNX Runtime has no kernel for a bf16 op (its CPU provider
has none for MatMul, Gemm, Conv...) the session raises at creation: the cell fails with its
message.
"""

from __future__ import annotations

import ctypes
import json
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from fwbench.frameworks import BFLOAT16
from fwbench.frameworks.base import check_device
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.trace import Trace, nested
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


def _inference_session(
    model: str | bytes, device: str, options: ort.SessionOptions
) -> ort.InferenceSession:
    return ort.InferenceSession(model, sess_options=options, providers=[PROVIDERS[device]])


class Session:
    """One model's session on the cell's threads (`timed`). `run` is the timed session's own
    method `call` (`run`, or `run_with_ort_values` for OrtValue inputs), nothing between;
    between `profile_on` and `profile_off` it is a twin's, created with ORT's profiler on at
    the first call (a session that does not run is not copied)."""

    live: weakref.WeakSet[Session] = weakref.WeakSet()  # every session a profile may take

    def __init__(self, model: str | bytes, device: str, threads: int, call: str = "run") -> None:
        check_device("onnxruntime", ort.__version__, device, _cuda_available)
        self._model, self._device, self._threads, self._call = model, device, threads, call
        self.timed = _inference_session(model, device, session_options(threads))
        self.run: Callable[..., list[Any]] = getattr(self.timed, call)
        self._twin: ort.InferenceSession | None = None
        self._directory = ""
        Session.live.add(self)

    def profile_on(self, directory: str) -> None:
        self._directory, self.run = directory, self._first_profiled_run

    def _first_profiled_run(self, outputs: list[str] | None, feed: dict[str, Any]) -> list[Any]:
        options = session_options(self._threads)
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(self._directory) / f"ort-{id(self)}")
        self._twin = _inference_session(self._model, self._device, options)
        self.run = getattr(self._twin, self._call)
        return self.run(outputs, feed)

    def profile_off(self) -> list[dict[str, Any]]:
        """The twin's profile events (none where the session did not run); calls go to the
        timed session again."""
        twin, self._twin, self.run = self._twin, None, getattr(self.timed, self._call)
        return json.loads(Path(twin.end_profiling()).read_text()) if twin is not None else []


def _bfloat16_value(x: np.ndarray) -> ort.OrtValue:
    """A float32 array rounded to bfloat16, as an OrtValue of ONNX's BFLOAT16 over its bits."""
    import ml_dtypes
    from onnx import TensorProto

    bits = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)


# Per precision whose inputs numpy cannot give ONNX Runtime: the cast making one an OrtValue.
ORT_VALUE_INPUTS: dict[str, Callable[[np.ndarray], ort.OrtValue]] = {BFLOAT16: _bfloat16_value}


def _host_array(value: ort.OrtValue) -> np.ndarray:
    """An output OrtValue as a numpy array; a bfloat16 one (OrtValue.numpy has no numpy type
    for it) read from its bits on the host, where ORT puts the outputs it allocates."""
    if value.data_type() != "tensor(bfloat16)":
        return value.numpy()
    import ml_dtypes

    if value.device_name() != "cpu":
        raise RuntimeError(f"a bfloat16 output on {value.device_name()}, not the host")
    bits = (ctypes.c_uint16 * (value.tensor_size_in_bytes() // 2)).from_address(value.data_ptr())
    return np.array(bits, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(value.shape())


class OrtRunner(RuntimeRunner):
    """An ONNX file in one ONNX Runtime session (frameworks.protocols.Runner)."""

    RUNTIME = "onnxruntime"
    TRACE_NOTE = (
        "ONNX Runtime's profiler on a twin of the timed session (same model, options and "
        "threads, created with profiling on): a run is one launch, each graph node's kernel "
        "time a kernel (a fused node, FusedGemm say, is one)"
    )

    def _setup(self, weights: Weights | None) -> None:
        self._cast = ORT_VALUE_INPUTS.get(self.precision)
        call = "run" if self._cast is None else "run_with_ort_values"
        self.session = Session(self.artifact, self.device, self.threads, call)
        (self._input,) = self.session.timed.get_inputs()
        self._outputs = [self.session.timed.get_outputs()[0].name]

    @staticmethod
    def version() -> str:
        return ort.__version__

    @staticmethod
    def cuda_available() -> bool:
        return _cuda_available()

    def input_shape(self) -> list[int | None]:
        return [d if isinstance(d, int) else None for d in self._input.shape]

    def bind(self, x: np.ndarray) -> dict[str, np.ndarray | ort.OrtValue]:
        return {self._input.name: x if self._cast is None else self._cast(x)}

    def call_in_context(self, prepared: dict[str, Any]) -> np.ndarray | ort.OrtValue:
        return self.session.run(self._outputs, prepared)[0]

    def to_numpy(self, output: np.ndarray | ort.OrtValue) -> np.ndarray:
        if isinstance(output, ort.OrtValue):
            output = _host_array(output)
        return super().to_numpy(output)

    def providers(self) -> list[str]:
        return self.session.timed.get_providers()

    def compile_info(self) -> CompileInfo:
        return CompileInfo(
            compiled=True,
            how=f"ONNX Runtime InferenceSession ({', '.join(self.providers())}, "
            "ORT_ENABLE_ALL, sequential) running the framework's ONNX export",
            graph_count=1,
            details={
                "onnxruntime": ort.__version__,
                "providers": self.providers(),
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
    runner = Session(_one_add_model(), device, threads)
    feed = {"x": np.zeros(1, np.float32)}
    return NullCall(lambda: runner.run(["y"], feed), lambda _: None)


RUN, NODE_CATEGORY, KERNEL_SUFFIX = "model_run", "Node", "_kernel_time"


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """ORT's profiler over `run` (which makes `calls` calls of one session): every live
    session's calls go to a profiling twin; `run` runs twice (the twin is made at its first call
    and its first calls allocate) and the last `calls` runs are read (`trace_of`)."""
    sessions = list(Session.live)
    with tempfile.TemporaryDirectory() as directory:
        for session in sessions:
            session.profile_on(directory)
        try:
            run()
            run()
        finally:
            profiles = [session.profile_off() for session in sessions]
    ran = [events for events in profiles if events]
    if len(ran) != 1:
        raise RuntimeError(f"the profiled calls ran {len(ran)} ONNX Runtime sessions, not one")
    return trace_of(ran[0], calls)


def trace_of(events: list[dict[str, Any]], calls: int) -> Trace:
    """The last `calls` runs of one session's profile: a run (`model_run`) is one dispatch, as
    one launch of a compiled mode is; each node's kernel time (`<node>_kernel_time`) is a
    kernel event; every event inside the runs counts toward the profiler's cost."""
    runs = sorted((e for e in events if e["name"] == RUN), key=lambda e: e["ts"])[-calls:]
    if len(runs) < calls:
        raise RuntimeError(f"ONNX Runtime's profile holds {len(runs)} runs, not {calls}")
    first, last = runs[0]["ts"], runs[-1]["ts"] + runs[-1]["dur"]
    inside = [e for e in events if e.get("ph") == "X" and first <= e["ts"] <= last]
    kernels = tuple(
        (e["ts"] * 1e3, (e["ts"] + e["dur"]) * 1e3)
        for e in inside
        if e.get("cat") == NODE_CATEGORY and e["name"].endswith(KERNEL_SUFFIX)
    )
    spans = tuple((e["ts"] * 1e3, (e["ts"] + e["dur"]) * 1e3) for e in inside)
    trace = Trace(calls, len(runs), kernels, len(inside), spans=spans)
    return nested(trace, (e["ts"] * 1e3 for e in inside), (start for start, _ in kernels))


def adapter(framework: str) -> RuntimeAdapter:
    return RuntimeAdapter(framework, OrtRunner, thread_settings, null_call, profile)
