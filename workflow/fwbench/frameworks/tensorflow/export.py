"""The tensorflow export adapter (frameworks.protocols.ExportAdapter): modes `litert` and
`onnxrt`.

Both start from the same Keras model (frameworks.tensorflow.models) wrapped in a tf.function
with an explicit input signature, its batch axis None (Keras 3 models have no signature of
their own for the converters to find):
- litert: the TFLite converter (tf.lite.TFLiteConverter.from_concrete_functions), builtin
  ops only, so a model that needs Flex (TF) ops fails here with the converter's message;
  LiteRT's interpreter runs it (runtimes.litert). In float32 no optimizations; in int8 the
  converter's dynamic-range quantization (Optimize.DEFAULT, no representative dataset: the
  first thing LiteRT's post-training guide has its users try), which stores the products'
  weights in int8 (per output channel) and leaves activations float32, quantized per call by
  the hybrid kernels; a weight below the converter's size threshold stays float32; in
  int8_static its full-integer quantization with float fallback (Optimize.DEFAULT and a
  representative dataset, the seeded calibration set: the guide's next step, for integer
  kernels end to end), activations int8 at scales the calibration fixed, input and output
  float32.
- onnxrt: tf2onnx.convert.from_function at ONNX opset OPSET; ONNX Runtime runs it
  (runtimes.onnxrt).
The model is built in the cell's precision (models.build_model: Keras's dtype policy) and the
signature takes that dtype; int8 and int8_static start from the float32 model. litert runs
float32, int8 and int8_static (frameworks.check_precision refuses others before anything is
built); onnxrt's are ONNX Runtime's quantizations of the float32 export
(runtimes.onnxrt.quantize), not made here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fwbench.frameworks import FLOAT32, INT8, INT8_STATIC, check_precision
from fwbench.frameworks.protocols import Exported
from fwbench.frameworks.tensorflow.models import DTYPES, build_model, tf, to_layout
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights
from fwbench.precisions import QUANTIZED

SUFFIXES = {"litert": ".tflite", "onnxrt": ".onnx"}
QUANTIZED_HOW = {
    INT8: ", dynamic-range quantization (Optimize.DEFAULT)",
    INT8_STATIC: ", full-integer quantization (Optimize.DEFAULT, representative dataset)",
}
OPSET = 17


def _signature(spec: ArchSpec, precision: str) -> tf.TensorSpec:
    """The model's input in TF's layout and `precision`'s dtype, the batch axis None (a dynamic
    batch)."""
    shape = to_layout(spec, np.zeros(spec.input_shape(1), np.float32)).shape
    return tf.TensorSpec((None, *shape[1:]), DTYPES[precision], name="x")


def _function(spec: ArchSpec, weights: Weights, precision: str) -> tuple[Any, tf.TensorSpec]:
    model = build_model(spec, weights, allow_cudnn=False, precision=precision)
    signature = _signature(spec, precision)
    forward = tf.function(lambda x: model(x, training=False), input_signature=[signature])
    return forward, signature


LITERT_OPTIMIZATIONS = {
    FLOAT32: "none (float32)",
    INT8: "Optimize.DEFAULT without a representative dataset: dynamic-range quantization "
    "(int8 weights per output channel, float32 activations quantized per call by the hybrid "
    "kernels; done while converting, so export_s includes it)",
    INT8_STATIC: "Optimize.DEFAULT with a representative dataset (the calibration set): "
    "full-integer quantization with float fallback (int8 weights per output channel, int8 "
    "activations at the scales the calibration set's ranges fix, float32 input and output; "
    "an op without an int8 kernel stays float32; done while converting, so export_s "
    "includes it)",
}


def _litert(
    spec: ArchSpec,
    weights: Weights,
    path: str,
    precision: str,
    calibration: list[np.ndarray] | None = None,
) -> dict[str, Any]:
    forward, signature = _function(spec, weights, FLOAT32 if precision in QUANTIZED else precision)
    in_layout = [to_layout(spec, b) for b in calibration or []]
    with open(path, "wb") as handle:
        handle.write(litert_model(forward, precision, in_layout))
    return {
        "converter": "tf.lite.TFLiteConverter.from_concrete_functions",
        "supported_ops": "TFLITE_BUILTINS (no Flex ops)",
        "optimizations": LITERT_OPTIMIZATIONS[precision],
        "input_signature": str(signature.shape),
    }


def litert_model(forward: Any, precision: str, calibration: list[np.ndarray]) -> bytes:
    """The .tflite of a tf.function `forward` (its input signature fixed) in `precision`:
    builtin ops only, quantized as LITERT_OPTIMIZATIONS says, int8_static calibrated on
    `calibration` (batches as `forward` takes them)."""
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [forward.get_concrete_function()], forward
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if precision in QUANTIZED:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if precision == INT8_STATIC:
        if not calibration:
            raise ValueError("LiteRT's full-integer quantization needs a calibration set")
        converter.representative_dataset = lambda: ([batch] for batch in calibration)
    return converter.convert()


def _onnxrt(spec: ArchSpec, weights: Weights, path: str, precision: str) -> dict[str, Any]:
    forward, signature = _function(spec, weights, precision)
    return onnx_file(forward, signature, path)


def onnx_file(forward: Any, signature: tf.TensorSpec, path: str) -> dict[str, Any]:
    """A tf.function `forward` of input `signature` as an ONNX file at `path` (tf2onnx): the
    onnxrt cells' export, and the trained model's (frameworks.tensorflow.train)."""
    import tf2onnx

    tf2onnx.convert.from_function(
        forward, input_signature=[signature], opset=OPSET, output_path=path
    )
    return {
        "converter": "tf2onnx.convert.from_function",
        "tf2onnx": tf2onnx.__version__,
        "opset": OPSET,
        "input_signature": str(signature.shape),
    }


def export(
    spec: ArchSpec,
    weights: Weights,
    mode: str,
    device: str,
    stem: str,
    precision: str = FLOAT32,
    calibration: list[np.ndarray] | None = None,
) -> Exported:
    if mode not in SUFFIXES:
        raise ValueError(
            f"tensorflow has no export mode {mode!r}; its export modes: litert, onnxrt"
        )
    check_precision("tensorflow", mode, precision)
    path = stem + SUFFIXES[mode]
    with tf.device("/GPU:0" if device == "cuda" else "/CPU:0"):
        if mode == "litert":
            details = _litert(spec, weights, path, precision, calibration)
        else:
            details = _onnxrt(spec, weights, path, precision)
    return Exported(
        file=path,
        how=f"{details['converter']}(tf.function(Keras model), batch None)"
        + QUANTIZED_HOW.get(precision, ""),
        details=details
        | {"tensorflow": tf.__version__, "dynamic": "batch (dim 0)", "precision": precision},
    )
