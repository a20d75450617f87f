"""ONNX Runtime: the `onnxrt` mode of torch and tensorflow (each framework's own exporter
writes the .onnx file: frameworks.<framework>.export). With its hardware part
(runtimes.onnxrt_hardware: the int8 GEMM peak), the only module that imports onnxruntime and
onnx.

A session gets exactly the cell's threads: intra_op_num_threads = threads, inter-op 1,
sequential execution, every graph optimization (ORT_ENABLE_ALL), and the intra-op pool's
spinning set to ORT's default (spin) and recorded (ORT's own default thread count is every
physical core: never relied on). On the CPU the CPUExecutionProvider, on cuda the
CUDAExecutionProvider alone (onnxruntime-gpu) with TF32 off (`use_tf32` 0, as torch, jax and
TensorFlow are set), so a model that the CUDA provider cannot place fails to load instead of
running on the CPU unnoticed; each session's provider options, as ORT reports them, are
recorded with its compile details.

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

An int8 or int8_static cell loads ONNX Runtime's own quantization of the framework's float32
export (`quantize`, in the export job). int8 is dynamic quantization, the method ONNX Runtime's
documentation advises for RNN and transformer models and the one needing no calibration data:
weights rounded to int8 (symmetric, one scale per tensor), each call's activations to uint8 by
a scale taken from that call's range (DynamicQuantizeLinear), products in int32
(MatMulInteger, ConvInteger; ORT's optimizer fuses them to DynamicQuantizeMatMul). int8_static
is static QDQ quantization (quantize_static), which it advises for CNNs: every activation's
uint8 scale fixed by the seeded calibration set's ranges, QuantizeLinear/DequantizeLinear pairs
that the optimizer fuses into integer kernels (QLinearConv, QLinearMatMul). Operators they
cannot quantize stay float32 (an LSTM whose weights the exporter computes, say): the
kernel-precision pass says how much. Inputs and outputs stay float32.
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

from fwbench.frameworks import BFLOAT16, INT8, INT8_STATIC
from fwbench.frameworks.base import check_device
from fwbench.frameworks.kernel_precision import (
    KERNEL_PRECISION_CALLS,
    KERNEL_TIME,
    KernelPrecision,
    of_work,
)
from fwbench.frameworks.protocols import CompileInfo, Exported, NullCall
from fwbench.frameworks.trace import Trace, nested
from fwbench.host.identity import int8_widens
from fwbench.model.precision_bound import Roundings, integer_limits, moves_data
from fwbench.model.weights import Weights
from fwbench.precisions import arithmetic_of
from fwbench.runtimes.base import RuntimeAdapter, RuntimeRunner
from fwbench.runtimes.layout import permutation

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}
# Per device, the provider's options: float32 means float32 on the CUDA provider too (its
# default computes float32 MatMul and Conv in TF32 on Ampere and newer), as torch, jax and TF
# are set; each session's options as ORT reports them are recorded (compile_info).
PROVIDER_OPTIONS: dict[str, dict[str, str]] = {"cpu": {}, "cuda": {"use_tf32": "0"}}
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
    provider = (PROVIDERS[device], PROVIDER_OPTIONS[device])
    return ort.InferenceSession(model, sess_options=options, providers=[provider])


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

    def kernel_precision(self, prepared: dict[str, Any]) -> KernelPrecision:
        """The kernel time of the model's products by what they computed in, from ORT's own
        profile of a twin session (each node's op and input types)."""
        with tempfile.TemporaryDirectory() as directory:
            self.session.profile_on(directory)
            try:
                for _ in range(KERNEL_PRECISION_CALLS + 1):  # the twin's first call allocates
                    self.session.run(self._outputs, prepared)
            finally:
                events = self.session.profile_off()
        low = arithmetic_of(self.precision)
        return kernel_precision_of(events, low, KERNEL_PRECISION_CALLS)

    def quantization_roundings(self, prepared: dict[str, Any]) -> Roundings:
        """Per rounding to an integer in the model, at this input: half its step over the rms
        of what it rounded (fwbench.model.precision_bound.quantization_bound), and the stored
        activations' values at a limit."""
        return quantization_roundings(self.artifact, prepared, self.threads)

    def compile_info(self) -> CompileInfo:
        return CompileInfo(
            compiled=True,
            how=f"ONNX Runtime InferenceSession ({', '.join(self.providers())}, "
            "ORT_ENABLE_ALL, sequential) running the framework's ONNX export",
            graph_count=1,
            details={
                "onnxruntime": ort.__version__,
                "providers": self.providers(),
                "provider_options": self.session.timed.get_provider_options(),
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


# ---- int8: ONNX Runtime's dynamic and static quantization ---------------------------------

# Each quantization's settings, recorded in the artifact's manifest. Weights QInt8 and, as ORT's
# quantize_static advises for x86, activations QUInt8; one scale per tensor in both (the two
# differ only in where the activations' scales come from). reduce_range (7-bit weights) is on
# only where the CPU has no VNNI or AMX-INT8 (host.identity.int8_widens): there ORT's kernels
# multiply in VPMADDUBSW pairs whose int16 sums saturate with full-range weights (ORT's advice;
# on a Zen 3 the mlp's int8 error was 1.8× its bound without it, within it with it); the
# manifest records the choice.
QUANTIZATION = {
    INT8: {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": "QInt8",
        "activations": "QUInt8, each call's range (DynamicQuantizeLinear)",
        "per_channel": False,
        "reduce_range": "where the CPU has no VNNI/AMX-INT8 (host.identity.int8_widens)",
    },
    INT8_STATIC: {
        "method": "onnxruntime.quantization.quantize_static",
        "quant_format": "QDQ",
        "weight_type": "QInt8",
        "activation_type": "QUInt8",
        "activations": "QUInt8, scales fixed by the calibration set's ranges (MinMax)",
        "calibrate_method": "MinMax",
        "per_channel": False,
        "reduce_range": "where the CPU has no VNNI/AMX-INT8 (host.identity.int8_widens)",
        "calibration_threads": "ONNX Runtime's default (the calibration session's own)",
    },
}
# The ops that compute a product of integers, as ORT's quantizer and optimizer write them, and
# the float ones; every other node's time is not a product.
INTEGER_PRODUCTS = frozenset(
    {
        "MatMulInteger",
        "ConvInteger",
        "MatMulIntegerToFloat",
        "DynamicQuantizeMatMul",
        "DynamicQuantizeLSTM",
        "QLinearMatMul",
        "QLinearConv",
        "QGemm",
        "QAttention",
    }
)
FLOAT_PRODUCTS = frozenset(
    {"MatMul", "Gemm", "Conv", "FusedConv", "FusedGemm", "FusedMatMul", "LSTM", "GRU", "RNN"}
    | {"Attention", "MultiHeadAttention", "NhwcConv"}
)
QUANTIZERS = frozenset({"DynamicQuantizeLinear", "QuantizeLinear", "DequantizeLinear"})
ORT_TYPES = {"float": "float32", "double": "float64", "float16": "float16", "bfloat16": "bfloat16"}


def quantize(
    exported: Exported, precision: str, path: str, calibration: list[np.ndarray] | None = None
) -> Exported:
    """`precision`'s artifact from the float32 ONNX export: ORT's dynamic quantization (int8)
    or its static QDQ quantization calibrated on `calibration`'s batches (int8_static, batches
    in the model's neutral layout)."""
    import onnx

    if precision not in QUANTIZATION:
        raise ValueError(f"ONNX Runtime quantizes to {', '.join(QUANTIZATION)}, not {precision!r}")
    model = without_shape_annotations(onnx.load(exported.file))
    target = f"{path}-{precision}.onnx"
    reduce_range = int8_widens()  # the CPU's flags, read once
    if precision == INT8:
        _quantize_dynamic(model, target, reduce_range)
    else:
        _quantize_static(model, target, calibration, reduce_range)
    written = onnx.load(target)
    integer, left = quantized_products(written)
    method = QUANTIZATION[precision]["method"].rsplit(".", 1)[-1]
    how = f"{exported.how}; quantized to {precision} by ONNX Runtime's {method}"
    settings = QUANTIZATION[precision] | {
        "reduce_range": reduce_range,
        "integer_products": integer,
        "float_products_left": left,
    }
    details = exported.details | {"precision": precision, "quantization": settings}
    return Exported(target, how, details)


def logits_of(path: str, threads: int) -> Callable[[np.ndarray], np.ndarray]:
    """A model file's first output for a float32 batch, on the CPU on `threads` (untimed: a
    trained model's evaluation in fwbench.training.run)."""
    session = _inference_session(path, "cpu", session_options(threads))
    (given,) = [i.name for i in session.get_inputs()]
    return lambda x: session.run(None, {given: np.asarray(x, np.float32)})[0]


def _quantize_dynamic(model: Any, target: str, reduce_range: bool) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        model, target, weight_type=QuantType.QInt8, per_channel=False, reduce_range=reduce_range
    )


def _quantize_static(
    model: Any, target: str, calibration: list[np.ndarray] | None, reduce_range: bool
) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    if not calibration:
        raise ValueError("static quantization needs a calibration set; none was given")
    (given,) = _graph_inputs(model)
    shape = [d.dim_value or None for d in given.type.tensor_type.shape.dim]
    order = permutation(calibration[0].shape, shape)

    class Batches(CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = iter({given.name: np.transpose(b, order)} for b in calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    quantize_static(
        model,
        target,
        Batches(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=False,
        reduce_range=reduce_range,
        calibrate_method=CalibrationMethod.MinMax,
    )


def _graph_inputs(model: Any) -> list[Any]:
    """The graph's inputs that are fed (not initializers, which old opsets list as inputs)."""
    constants = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in constants]


def quantized_products(model: Any) -> tuple[list[str], list[str]]:
    """The op types of a quantized model's integer products (as the quantizer writes them, or
    float products whose two operands are both dequantized: ORT's optimizer fuses those QDQ
    groups into integer ones) and of the float products left."""
    made = {o: node.op_type for node in model.graph.node for o in node.output}
    integer, left = set(), set()
    for node in model.graph.node:
        if node.op_type in INTEGER_PRODUCTS:
            integer.add(node.op_type)
        elif node.op_type in FLOAT_PRODUCTS:
            dequantized = all(made.get(i) == "DequantizeLinear" for i in node.input[:2])
            (integer if dequantized else left).add(node.op_type)
    return sorted(integer), sorted(left)


def without_shape_annotations(model: Any) -> Any:
    """The model without its exporter's value_info: torch's dynamo exporter annotates some
    intermediate values with shapes ONNX's strict shape inference, which quantize_dynamic
    runs, refuses ("Inferred shape and existing shape differ"); inference derives them again.
    tests/test_quantize.py fails when the exporter's annotations pass."""
    del model.graph.value_info[:]
    return model


def kernel_precision_of(events: list[dict[str, Any]], low: str, calls: int) -> KernelPrecision:
    """The last `calls` runs of a profile (trace_of's window): each product node's kernel time
    by what it computed in (an integer product: int8; a float one: its first input's type);
    the quantizers' runs counted as casts."""
    runs = sorted((e for e in events if e["name"] == RUN), key=lambda e: e["ts"])[-calls:]
    if len(runs) < calls:
        raise RuntimeError(f"ONNX Runtime's profile holds {len(runs)} runs, not {calls}")
    first, last = runs[0]["ts"], runs[-1]["ts"] + runs[-1]["dur"]
    work, casts = [], 0
    for event in events:
        if event.get("cat") != NODE_CATEGORY or not event["name"].endswith(KERNEL_SUFFIX):
            continue
        if not first <= event["ts"] <= last:
            continue
        op = event.get("args", {}).get("op_name", "")
        casts += op in QUANTIZERS
        if op in INTEGER_PRODUCTS:
            work.append((INT8, float(event["dur"])))
        elif op in FLOAT_PRODUCTS:
            work.append((_first_input_type(event), float(event["dur"])))
    method = (
        "ONNX Runtime's profile of a twin session: each node's op and input types, over "
        f"{calls} calls; casts are quantizer runs per call, fused ones (DynamicQuantizeMatMul) "
        "not counted"
    )
    return of_work(work, low, KERNEL_TIME, method, casts // calls)


def _first_input_type(event: dict[str, Any]) -> str:
    inputs = event.get("args", {}).get("input_type_shape") or [{"unknown": []}]
    name = next(iter(inputs[0]))
    return ORT_TYPES.get(name, name)


def quantization_roundings(model_path: str, feed: dict[str, Any], threads: int) -> Roundings:
    """For each value a quantized ONNX model rounds to integers (`_roundings`), at `feed`: the
    largest rounding error relative to the value's rms, (step/2) / rms(step·(q − zero
    point)) = 1 / (2·rms(q − zero point)). Weights are read from the model; activations are
    fetched by running it, unoptimized, with them as outputs (the same quantization). A static
    quantization's activation clipped at its calibrated range errs by more than half a step:
    the check's error, not this bound, shows it, and each QuantizeLinear output's values at a
    limit of its integer type are counted (`Roundings.saturated`)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(model_path)
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    pairs = _roundings(list(model.graph.node), constants)
    if not pairs:
        raise RuntimeError(f"{model_path} rounds no value to integers: nothing to bound")
    named = {name for value, zero, _, _ in pairs for name in (value, zero) if name}
    fetch = sorted(named - set(constants))
    values = constants | _fetched(model, fetch, feed, threads)
    found = Roundings()
    for value, zero, axis, stored in pairs:
        point = values[zero] if zero else 0.0
        if stored:
            found.activation(values[value], point, *integer_limits(values[value].dtype))
        else:
            found.weight(values[value], point, axis)
    return found


def _roundings(nodes: list[Any], constants: dict[str, np.ndarray]) -> list[tuple]:
    """Each value a quantized model rounds to integers: (the rounded value, its zero point or
    '', the axis a per-channel zero point runs along, whether it is an activation stored at a
    calibrated range). A dynamic quantization's integer product rounds its two operands (A, B,
    a_zero_point, b_zero_point); a static QDQ model rounds each weight (a DequantizeLinear of a
    constant) and each activation (a QuantizeLinear's output, `axis` default 1, stored), less
    the requantizations that round nothing (`_requantizes`)."""
    made = {output: node for node in nodes for output in node.output}
    found = []
    for node in nodes:
        inputs = list(node.input) + [""] * (4 - len(node.input))
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            conv = node.op_type == "ConvInteger"
            operands = [(inputs[0], inputs[2], None), (inputs[1], inputs[3], 0 if conv else -1)]
            found += [(value, zero, axis_of, False) for value, zero, axis_of in operands]
        elif node.op_type == "DequantizeLinear" and inputs[0] in constants:
            found.append((inputs[0], inputs[2], axis, False))
        elif node.op_type == "QuantizeLinear" and not _requantizes(node, made, constants):
            found.append((node.output[0], inputs[2], axis, True))
    return found


def _requantizes(node: Any, made: dict[str, Any], constants: dict[str, np.ndarray]) -> bool:
    """Whether a QuantizeLinear rounds values already on its grid: a data move's output
    whose input a DequantizeLinear of the same scale and zero point made."""
    move = made.get(node.input[0])
    if move is None or not moves_data(move.op_type):
        return False
    source = made.get(move.input[0])
    if source is None or source.op_type != "DequantizeLinear":
        return False
    pairs = zip(source.input[1:3], node.input[1:3], strict=False)
    return all(
        a in constants and b in constants and np.array_equal(constants[a], constants[b])
        for a, b in pairs
    )


def _fetched(model: Any, names: list[str], feed: dict[str, Any], threads: int) -> dict:
    """The named intermediate values of `model` at `feed`: each made a graph output, the model
    run once without graph optimizations (which would fuse them away)."""
    from onnx import helper

    known = {o.name for o in model.graph.output}
    model.graph.output.extend(
        helper.make_empty_tensor_value_info(n) for n in names if n not in known
    )
    options = session_options(threads)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = _inference_session(model.SerializeToString(), "cpu", options)
    return dict(zip(names, session.run(names, feed), strict=True))


def adapter(framework: str) -> RuntimeAdapter:
    return RuntimeAdapter(framework, OrtRunner, thread_settings, null_call, profile)
