"""The TensorFlow inference adapter: a Keras 3 model (TF backend) in one of three modes.

Modes (frameworks.MODES["tensorflow"]):
- eager: the Keras model called eagerly, op by op.
- function: tf.function(model call, reduce_retracing=True): a TF graph run by the graph
  executor (grappler-optimized, no XLA).
- xla: tf.function(model call, jit_compile=True): the whole call compiled by XLA.

Precision bfloat16: the model built under Keras's `bfloat16` dtype policy (models.build_model:
weights and activations in bf16) and each input cast to bf16 on the device; outputs come back
as float32 numpy arrays.

The job sets threads.apply_thread_env and the TF env of frameworks.pre_import_env before it
imports this module; `set_threads` then applies TF's own threading API before any op runs.
Nothing here runs a TF op at import time, so the thread pools are still unset on import.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

import numpy as np

from fwbench.frameworks import check_threads
from fwbench.frameworks.base import BaseRunner, check_device
from fwbench.frameworks.kernel_precision import FLOP, KernelPrecision, of_hlo, of_work
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.tensorflow import profiling
from fwbench.frameworks.tensorflow.models import DTYPES, build_model, tf, to_layout
from fwbench.model.weights import Weights

# What the TF profiler counts: matmuls, convolutions and bias adds (not activations).
COUNTER_SCOPE = "matmul"

_PLACEMENTS = {"cpu": "/CPU:0", "cuda": "/GPU:0"}
_PLATFORMS = {"cpu": "CPU", "cuda": "GPU"}  # TF's platform names, for XLA's lowering

# Ops whose arithmetic the TF profiler cannot see: it has no FLOP rule for Einsum, and it does
# not look inside while-loop bodies (of a Keras RNN it counts only the one step Keras traces
# outside the loop to learn the output shapes). A total from a graph holding them is too low.
_PROFILER_BLIND_SPOTS = {
    "Einsum": "Einsum has no FLOP rule in the TF profiler (attention scores and context)",
    "While": "the TF profiler does not count loop iterations (the Keras RNN time loop is a "
    "tf.while_loop)",
    "StatelessWhile": "the TF profiler does not count loop iterations (tf.while_loop)",
}


def set_threads(threads: int) -> dict[str, int]:
    """Apply TF's threading API (intra-op `threads`, inter-op 1); call before any TF op runs.

    Returns the settings as TF reports them back, for the cell's provenance.
    """
    check_threads(threads)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError as err:
        raise RuntimeError(
            f"set_threads({threads}) came after TensorFlow initialized its runtime; call it before "
            f"any op runs ({err})"
        ) from err
    return {
        "intra_op_parallelism_threads": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter_op_parallelism_threads": tf.config.threading.get_inter_op_parallelism_threads(),
    }


def _cuda_available() -> bool:
    return bool(tf.config.list_physical_devices("GPU"))


def _device_name(device: str) -> str:
    """TF's name of `device` ("cpu" or "cuda"), checked."""
    check_device("tensorflow", tf.__version__, device, _cuda_available)
    return _PLACEMENTS[device]


def _op_counts(graph: tf.Graph) -> collections.Counter[str]:
    return collections.Counter(op.type for op in graph.get_operations())


class TensorFlowRunner(BaseRunner):
    """One Keras model in one mode on one device (see the module docstring for the modes)."""

    FRAMEWORK = "tensorflow"
    TRACE_NOTE = (
        "one dispatch per TFE_Py_*Execute (an op in eager, the function call otherwise); "
        "kernels: an eager op's kernel run, the graph executor's op kernels, XLA's thunks (a "
        "fusion is one)"
    )

    def _setup(self, weights: Weights | None) -> None:
        spec, mode, device = self.spec, self.mode, self.device
        self._device_name = _PLACEMENTS[device]
        self._platform = _PLATFORMS[device]
        if device == "cuda":
            # TF runs float32 matmuls/convs in TF32 on Ampere and newer by default (10-bit
            # mantissa); the benchmark compares the float32 function across frameworks.
            tf.config.experimental.enable_tensor_float_32_execution(False)
        # Keras' cuDNN LSTM kernel (CudnnRNNV3, used on GPUs) cannot be compiled by XLA.
        self._allow_cudnn = mode != "xla"
        with tf.device(self._device_name):
            self._model = build_model(
                spec, weights, allow_cudnn=self._allow_cudnn, precision=self.precision
            )
        self._call = self._make_call(mode)
        self._last_prepared: tf.Tensor | None = None
        if device == "cuda":
            tf.config.experimental.reset_memory_stats("GPU:0")

    @staticmethod
    def version() -> str:
        return tf.__version__

    @staticmethod
    def cuda_available() -> bool:
        return _cuda_available()

    def _forward(self, x: tf.Tensor) -> tf.Tensor:
        return self._model(x, training=False)

    def _make_call(self, mode: str) -> Callable[[tf.Tensor], tf.Tensor]:
        if mode == "eager":
            return self._forward
        if mode == "function":
            return tf.function(self._forward, reduce_retracing=True)
        return tf.function(self._forward, jit_compile=True)

    def to_device(self, x: np.ndarray) -> tf.Tensor:
        """A tensor of the precision's dtype on the device (NHWC for the CNN)."""
        host = to_layout(self.spec, x)
        with tf.device(self._device_name):
            prepared = tf.identity(tf.cast(tf.constant(host), DTYPES[self.precision]))
        self.sync(prepared)
        self._last_prepared = prepared
        return prepared

    def timing_context(self) -> Any:
        return tf.device(self._device_name)

    def call_in_context(self, prepared: tf.Tensor) -> tf.Tensor:
        return self._call(prepared)

    def sync(self, output: tf.Tensor) -> None:
        # .numpy() copies the whole tensor to the host, which waits for every op producing it;
        # outputs are (batch, classes) logits, so the copy is negligible.
        output.numpy()

    def compile_info(self) -> CompileInfo:
        """Valid after the first call; describes the graph traced for the last prepared input."""
        details: dict[str, Any] = {
            "tf32_enabled": tf.config.experimental.tensor_float_32_execution_enabled(),
            "cudnn_lstm_allowed": self._allow_cudnn,
        }
        if self.mode == "eager":
            details["executing_eagerly"] = tf.executing_eagerly()
            return CompileInfo(
                compiled=False, how="Keras model called eagerly, op by op", details=details
            )
        fn = self._call
        traces = fn.experimental_get_tracing_count()
        runs_eagerly = tf.config.functions_run_eagerly()
        details["functions_run_eagerly"] = runs_eagerly
        if traces and self._last_prepared is not None:
            graph = fn.get_concrete_function(self._last_prepared).graph
            ops = _op_counts(graph)
            details["graph_ops"] = sum(ops.values())
            details["while_loops"] = ops["While"] + ops["StatelessWhile"]
        compiled = traces > 0 and not runs_eagerly
        if self.mode == "function":
            how = "tf.function(reduce_retracing=True): TF graph, graph executor, no XLA"
        else:
            xla_ok, xla_note = self._xla_evidence()
            details["xla"] = xla_note
            compiled = compiled and xla_ok
            how = f"tf.function(jit_compile=True): {xla_note}"
        if runs_eagerly:
            how += " [tf.config.run_functions_eagerly is on: the function ran eagerly]"
        return CompileInfo(compiled=compiled, how=how, graph_count=traces, details=details)

    def _xla_evidence(self) -> tuple[bool, str]:
        """Whether XLA really holds this function: the traced function is marked must-compile
        and XLA lowers it to HLO."""
        if self._last_prepared is None:
            return False, "not called yet"
        concrete = self._call.get_concrete_function(self._last_prepared)
        must_compile_attr = concrete.function_def.attr.get("_XlaMustCompile")
        must_compile = bool(must_compile_attr is not None and must_compile_attr.b)
        try:
            lower = self._call.experimental_get_compiler_ir(self._last_prepared)
            hlo = lower(stage="hlo", platform_name=self._platform)
        except Exception as err:  # any failure means XLA did not accept the function
            return False, f"XLA lowering failed: {type(err).__name__}: {err}"
        instructions = sum(1 for line in hlo.splitlines() if " = " in line)
        return must_compile, (
            f"_XlaMustCompile={must_compile}, XLA lowered it to HLO for {self._platform} "
            f"({instructions} instructions)"
        )

    def cuda_peak_memory_bytes(self) -> int | None:
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])

    def launch_floor(self) -> NullCall | None:
        """Eager: None, TF's null call; function and xla: a 1-element add through tf.function
        (jit_compile as the mode has it), read back as every call is."""
        if self.mode == "eager":
            return None
        add_one = tf.function(lambda v: v + 1.0, jit_compile=self.mode == "xla")
        with tf.device(self._device_name):
            x = tf.zeros([1])
        return NullCall(lambda: add_one(x), self.sync, self.timing_context)

    def kernel_precision(self, prepared: tf.Tensor) -> KernelPrecision:
        """xla: the FLOP of the optimized HLO's dots and convolutions by operand dtype.
        function and eager: the TF profiler's FLOP per op of the traced graph (as
        counter_flops counts them) by the op's floating input dtypes, and its Cast ops; eager
        runs the same ops one by one. Ops inside a while loop's body are not counted."""
        if self.mode == "xla":
            lower = self._call.experimental_get_compiler_ir(prepared)
            text = lower(stage="optimized_hlo", platform_name=self._platform)
            method = "XLA's optimized HLO (experimental_get_compiler_ir): dots and convolutions"
            return of_hlo(text, self.precision, method)
        spec = tf.TensorSpec.from_tensor(prepared)
        with tf.device(self._device_name):
            graph = tf.function(self._forward).get_concrete_function(spec).graph
        work = _graph_work(graph)
        casts = sum(op.type == "Cast" for op in graph.get_operations())
        method = "TF profiler float_operation per op of the traced graph, by input dtype"
        notes = ("ops in while-loop bodies not counted",) if _op_counts(graph)["While"] else ()
        return of_work(work, self.precision, FLOP, method, casts, notes=notes)

    def counter_flops(self, prepared: tf.Tensor) -> tuple[float | None, str]:
        """TF's profiler (float_operation) over the traced graph of one call.

        Traced by a separate tf.function, so the runner's own tracing count stays untouched.
        """
        spec = tf.TensorSpec.from_tensor(prepared)
        with tf.device(self._device_name):
            graph = tf.function(self._forward).get_concrete_function(spec).graph
        blind = sorted(op for op in _op_counts(graph) if op in _PROFILER_BLIND_SPOTS)
        total = float(_float_ops(graph).total_float_ops)
        if blind:
            reasons = "; ".join(_PROFILER_BLIND_SPOTS[op] for op in blind)
            return None, f"graph holds {', '.join(blind)}: {reasons}; partial total {total:.0f}"
        if total <= 0:
            return None, "the TF profiler counted no float ops in the traced graph"
        return total, (
            "tf.compat.v1.profiler float_operation on the traced graph: MatMul/Conv2D as "
            "2 x multiply-adds, plus bias adds, pooling and normalization element ops; "
            "activations not counted"
        )


def null_call(device: str) -> NullCall:
    """TensorFlow's dispatch floor: one eager add on a 1-element tensor, read back."""
    placement = _device_name(device)
    with tf.device(placement):
        x = tf.zeros([1])
    return NullCall(
        lambda: tf.add(x, 1.0), lambda output: output.numpy(), lambda: tf.device(placement)
    )


# The profiler read for the attribution pass (frameworks.protocols.InferenceAdapter.profile).
profile = profiling.profile

# A Runner for `spec` holding `weights` in `mode` and `precision` on `device`; tensorflow modes
# take no compile options.
build = TensorFlowRunner.build


def _float_ops(graph: tf.Graph) -> Any:
    """The TF v1 profiler's float_operation view of a graph (a tree of nodes per op)."""
    options = (
        tf.compat.v1.profiler.ProfileOptionBuilder(
            tf.compat.v1.profiler.ProfileOptionBuilder.float_operation()
        )
        .with_empty_output()
        .build()
    )
    return tf.compat.v1.profiler.profile(graph=graph, options=options)


def _graph_work(graph: tf.Graph) -> list[tuple[str, float]]:
    """(the op's floating input dtypes, its FLOP) for every op the TF profiler counts."""
    nodes, work = [_float_ops(graph)], []
    while nodes:
        node = nodes.pop()
        nodes.extend(node.children)
        if node.float_ops <= 0:
            continue
        try:
            op = graph.get_operation_by_name(node.name)
        except (KeyError, ValueError):
            continue
        floats = sorted({t.dtype.name for t in op.inputs if t.dtype.is_floating})
        work.append(("×".join(floats), float(node.float_ops)))
    return work
