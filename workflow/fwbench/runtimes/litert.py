"""LiteRT (TensorFlow Lite's runtime, the `ai-edge-litert` interpreter): tensorflow's `litert`
mode (frameworks.tensorflow.export converts the Keras model). The only module that imports
ai_edge_litert.

An int8 artifact is the converter's dynamic-range quantization, an int8_static one its
full-integer quantization (frameworks.tensorflow.export): what its products compute in is read
from the file itself (each product's operand types, as a FLOP share: LiteRT's Python
interpreter has no profiler) and its bound's quantization steps from a run of the builtin
kernels that keeps every tensor: its int8 weights, and the activations the hybrid kernels
quantize per call (int8) or the int8 tensors its operators write (int8_static)
(products_precision, quantization_roundings).

The interpreter gets exactly the cell's threads (`num_threads`; LiteRT's own default is 1:
never relied on) and its default op resolver, which applies the XNNPACK delegate to the float
ops it supports. The artifact's batch axis is dynamic: each input's batch is set with
resize_tensor_input and allocated once, outside the timed calls. LiteRT has no CUDA path: a
cuda system's litert cell fails, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version as distribution_version
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from fwbench.frameworks.kernel_precision import FLOP, KernelPrecision, of_work
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.trace import Trace
from fwbench.model.precision_bound import Roundings, integer_limits, moves_data, rounding_step
from fwbench.model.weights import Weights
from fwbench.precisions import arithmetic_of
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

    def kernel_precision(self, prepared: np.ndarray) -> KernelPrecision:
        low = arithmetic_of(self.precision)
        return products_precision(self.artifact, prepared, self.threads, low)

    def quantization_roundings(self, prepared: np.ndarray) -> Roundings:
        """Per rounding to an integer in the model, at this input: half its step over the rms
        of what it rounded (fwbench.model.precision_bound.quantization_bound), and the stored
        activations' values at a limit."""
        return quantization_roundings(self.artifact, prepared, self.threads)

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


# ---- what a file's products compute in, and the steps of its quantization -----------------

PRODUCTS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "BATCH_MATMUL")
CASTS = ("QUANTIZE", "DEQUANTIZE")
_OPS = {code: name for name, code in vars(schema.BuiltinOperator).items() if name.isupper()}
PRODUCTS_METHOD = (
    "the .tflite file's matrix products typed by their operands (int8 where a weight is "
    "stored in int8), as a FLOP share at the cell's batch: LiteRT's Python interpreter has no "
    "profiler, so this is not kernel time, and whether XNNPACK or a LiteRT builtin kernel ran "
    "each product is not seen; casts: the file's QUANTIZE and DEQUANTIZE ops"
)


@dataclass(frozen=True)
class Product:
    """A matrix product of the file's main graph: its op and tensors (input, weight, output);
    `asymmetric`: its hybrid kernel quantizes the input by its range, not its largest value;
    `adjoint`: a BATCH_MATMUL that contracts its input's second-last axis."""

    op: str
    input: int
    weight: int
    output: int
    asymmetric: bool = False
    adjoint: bool = False

    def flop(self, shapes: dict[int, tuple[int, ...]]) -> float:
        """2 × multiply-adds: each output element's dot product over the contracted depth."""
        weight = shapes[self.weight]
        depth = {
            "FULLY_CONNECTED": weight[-1],
            "CONV_2D": int(np.prod(weight[1:])),
            "DEPTHWISE_CONV_2D": int(np.prod(weight[1:3])),
        }.get(self.op) or shapes[self.input][-2 if self.adjoint else -1]
        return 2.0 * float(np.prod(shapes[self.output])) * depth

    def rows(self, x: np.ndarray, shapes: dict[int, tuple[int, ...]]) -> np.ndarray:
        """The input as its hybrid kernel quantizes it, one step per row: a row per dot
        product's operand (its contracted depth), per image for a convolution."""
        if self.op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            return x.reshape(x.shape[0], -1)
        depth = shapes[self.input][-2 if self.adjoint else -1]
        return (np.swapaxes(x, -1, -2) if self.adjoint else x).reshape(-1, depth)


def operators_of(path: str) -> list[tuple[str, Any]]:
    """(op name, operator) of each operator of a .tflite file's main graph, in order, read
    from the flatbuffer with LiteRT's own schema."""
    with open(path, "rb") as handle:
        model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(handle.read(), 0))
    found = []
    for operator in model.subgraphs[0].operators:
        code = model.operatorCodes[operator.opcodeIndex]
        found.append((_OPS.get(max(code.builtinCode, code.deprecatedBuiltinCode), ""), operator))
    return found


def products_of(path: str) -> tuple[list[Product], int]:
    """The matrix products of a .tflite file's main graph, and its count of casts (QUANTIZE,
    DEQUANTIZE ops)."""
    products, casts = [], 0
    for op, operator in operators_of(path):
        casts += op in CASTS
        if op in PRODUCTS:
            options = operator.builtinOptions
            products.append(
                Product(
                    op,
                    *(int(i) for i in (operator.inputs[0], operator.inputs[1])),
                    int(operator.outputs[0]),
                    bool(getattr(options, "asymmetricQuantizeInputs", False)),
                    bool(getattr(options, "adjX", False)),
                )
            )
    return products, casts


def _builtin_run(path: str, x: np.ndarray, threads: int) -> Interpreter:
    """The file run once on `x` by LiteRT's builtin kernels, every tensor kept (a delegate's
    own tensors cannot be read: XNNPACK is left out)."""
    interpreter = Interpreter(
        model_path=path,
        num_threads=threads,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        experimental_preserve_all_tensors=True,
    )
    (given,) = interpreter.get_input_details()
    interpreter.resize_tensor_input(given["index"], list(x.shape), strict=True)
    interpreter.allocate_tensors()
    interpreter.set_tensor(given["index"], x)
    interpreter.invoke()
    return interpreter


def _tensors(interpreter: Interpreter) -> dict[int, dict[str, Any]]:
    return {int(d["index"]): d for d in interpreter.get_tensor_details()}


def products_precision(path: str, x: np.ndarray, threads: int, low: str) -> KernelPrecision:
    """The FLOP of the file's products at `x`'s batch by what each computes in: int8 where
    an operand is stored in int8, else its input's dtype."""
    products, casts = products_of(path)
    tensors = _tensors(_builtin_run(path, x, threads))
    shapes = {index: tuple(d["shape"]) for index, d in tensors.items()}
    dtypes = {index: np.dtype(d["dtype"]).name for index, d in tensors.items()}
    work = [
        (
            "int8" if "int8" in (dtypes[p.input], dtypes[p.weight]) else dtypes[p.input],
            p.flop(shapes),
        )
        for p in products
    ]
    return of_work(work, low, FLOP, PRODUCTS_METHOD, casts)


def quantization_roundings(path: str, x: np.ndarray, threads: int) -> Roundings:
    """For each rounding to int8 in the file at `x` (a run of the builtin kernels that keeps
    every tensor): its largest rounding error relative to its rms, (step/2) / rms(what it
    rounded) = 1 / (2·rms(q − zero point)). Rounded are each product's int8 weight (q read
    from the file); in a dynamic-range file each such product's float32 input, which the hybrid
    kernel quantizes per call, divided by the step the kernel takes for each row
    (Product.rows): its range / 255 where the op quantizes asymmetrically, else its largest
    magnitude / 127 (the coarser step); in a full-integer file each int8 tensor an operator
    writes (q read from the run, its values at a limit of int8 counted: `Roundings.saturated`),
    but a data move's output on its input's grid, which rounds nothing
    (model.precision_bound.moves_data)."""
    products, _ = products_of(path)
    interpreter = _builtin_run(path, x, threads)
    tensors = _tensors(interpreter)
    shapes = {index: tuple(d["shape"]) for index, d in tensors.items()}

    def int8(index: int) -> bool:
        return np.dtype(tensors[index]["dtype"]) == np.int8

    def parameters(index: int) -> dict[str, Any]:
        return tensors[index]["quantization_parameters"]

    found = Roundings()
    for product in (p for p in products if int8(p.weight)):
        weight = parameters(product.weight)
        axis = int(weight["quantized_dimension"])
        found.weight(interpreter.get_tensor(product.weight), weight["zero_points"], axis)
        if not int8(product.input):  # a hybrid kernel rounds its float input per call
            rows = product.rows(interpreter.get_tensor(product.input), shapes)
            found.steps.append(_dynamic_step(rows, product.asymmetric))
    for op, operator in operators_of(path):
        for output in (int(i) for i in operator.outputs if int8(int(i))):
            if not (moves_data(op) and _same_grid(tensors, int(operator.inputs[0]), output)):
                zero = parameters(output)["zero_points"]
                found.activation(interpreter.get_tensor(output), zero, *integer_limits(np.int8))
    if not found.steps:
        raise RuntimeError(f"{path} rounds no value to int8: nothing to bound")
    return found


def _same_grid(tensors: dict[int, dict[str, Any]], a: int, b: int) -> bool:
    """Whether two tensors hold values on one grid: the same scales and zero points."""
    first, second = (tensors[i]["quantization_parameters"] for i in (a, b))
    return all(np.array_equal(first[key], second[key]) for key in ("scales", "zero_points"))


def _dynamic_step(rows: np.ndarray, asymmetric: bool) -> float:
    rows = rows.astype(np.float64)
    if asymmetric:
        step = (np.maximum(rows.max(1), 0) - np.minimum(rows.min(1), 0)) / 255.0
    else:
        step = np.abs(rows).max(1) / 127.0
    kept = step > 0  # an all-zero row is quantized exactly
    scaled = rows[kept] / step[kept, None]
    return rounding_step(scaled)


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
