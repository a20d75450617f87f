"""TensorFlow training: tf.Variables in the neutral layouts (NHWC inputs, HWIO kernels),
tf.nn ops walked from the ResNet spec, GradientTape, and torch.optim.SGD's update written out.

Why not Keras layers: keras.layers.BatchNormalization updates its moving variance with the
biased batch variance (torch and the spec use the unbiased one) and its momentum means the
opposite; Keras' SGD `weight_decay` is decoupled. Explicit ops make all three identical. Strided
convs and the stem pool pad explicitly and symmetrically: TF's 'SAME' pads stride-2 windows
asymmetrically, which would shift every feature map against torch and JAX.

Modes: `eager`; `function` = tf.function of the whole train step (and of the eval forward);
`xla` = the same with jit_compile=True.

Precision `bfloat16`: what Keras's `mixed_bfloat16` policy does (float32 variables cast to the
bfloat16 compute dtype where a layer reads them, bfloat16 activations, batch norm computed in
float32), written out (BFLOAT16_POLICY), for the reasons Keras layers are not used above.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from fwbench.frameworks import check_framework_mode
from fwbench.frameworks.protocols import CompileInfo, Exported, Predictor, TrainOptions
from fwbench.frameworks.tensorflow.models import tf
from fwbench.model.optimizer import SGDConfig
from fwbench.model.resnet import Conv, ResNetSpec, is_trainable
from fwbench.model.weights import Weights
from fwbench.precisions import BFLOAT16, INT8, INT8_STATIC

INPUT_LAYOUT = "NHWC"
BFLOAT16_POLICY = (
    "Keras mixed_bfloat16's policy written out: each tf.nn.conv2d and the head's tf.matmul "
    "take operands tf.cast to bfloat16 (the float32 variables cast where read) and return "
    "bfloat16; batch norm casts to float32 for its moments and normalization and returns "
    "bfloat16; the logits are float32 from the bias add on"
)


class ResNet(tf.Module):
    def __init__(self, spec: ResNetSpec, weights: Weights, compute: Any = tf.float32) -> None:
        super().__init__(name="resnet")
        self.spec, self.compute = spec, compute
        self.blocks = spec.blocks()
        self.weights = {
            name: tf.Variable(value, trainable=is_trainable(name), name=name.replace(".", "_"))
            for name, value in weights.items()
        }

    def _conv_bn(self, x: tf.Tensor, conv: Conv, training: bool) -> tf.Tensor:
        pad = conv.padding
        w = self.weights
        product = self._product(
            tf.nn.conv2d,
            x,
            w[f"{conv.name}.kernel"],
            conv.stride,
            [[0, 0], [pad, pad], [pad, pad], [0, 0]],
        )
        h = tf.cast(product, tf.float32)  # batch norm in float32 (no cast in float32)
        mean_var, var_var = w[f"{conv.bn}.running_mean"], w[f"{conv.bn}.running_var"]
        if training:
            mean, var = tf.nn.moments(h, axes=[0, 1, 2])  # biased variance, for normalizing
            count = tf.cast(tf.size(h) // tf.shape(h)[-1], h.dtype)
            m = self.spec.bn_momentum
            mean_var.assign((1 - m) * mean_var + m * mean)
            var_var.assign((1 - m) * var_var + m * var * count / (count - 1))
        else:
            mean, var = tf.cast(mean_var, tf.float32), tf.cast(var_var, tf.float32)
        beta, gamma = (tf.cast(w[f"{conv.bn}.{k}"], tf.float32) for k in ("beta", "gamma"))
        normalized = tf.nn.batch_normalization(h, mean, var, beta, gamma, self.spec.bn_eps)
        return tf.cast(normalized, self.compute)

    def __call__(self, x: tf.Tensor, training: bool) -> tf.Tensor:
        h = tf.nn.relu(self._conv_bn(x, self.spec.stem_conv, training))
        if self.spec.stem_pool:
            h = tf.pad(h, [[0, 0], [1, 1], [1, 1], [0, 0]], constant_values=-np.inf)
            h = tf.nn.max_pool2d(h, ksize=3, strides=2, padding="VALID")
        for block in self.blocks:
            out = h
            for i, conv in enumerate(block.convs):
                out = self._conv_bn(out, conv, training)
                if i < len(block.convs) - 1:
                    out = tf.nn.relu(out)
            shortcut = h if block.shortcut is None else self._conv_bn(h, block.shortcut, training)
            h = tf.nn.relu(out + shortcut)
        pooled = tf.reduce_mean(h, axis=[1, 2])
        bias = self.weights["head.b"]
        logits = self._product(tf.matmul, pooled, self.weights["head.W"])
        return tf.cast(logits, bias.dtype) + bias

    def _product(self, op: Callable, x: tf.Tensor, weight: tf.Variable, *args: Any) -> tf.Tensor:
        """`op(x, weight, *args)` on operands in the compute dtype (no cast where they are
        in it already)."""
        return op(tf.cast(x, self.compute), tf.cast(weight, self.compute), *args)


class TensorFlowTrainer:
    def __init__(
        self,
        spec: ResNetSpec,
        weights: Weights,
        optimizer: SGDConfig,
        mode: str,
        device: str,
        compute: Any = tf.float32,
    ) -> None:
        self.mode, self.optimizer = mode, optimizer
        self.device_name = "/GPU:0" if device == "cuda" else "/CPU:0"
        self.epoch = 0
        with tf.device(self.device_name):
            self.model = ResNet(spec, weights, compute)
            self.trainable = [v for n, v in self.model.weights.items() if is_trainable(n)]
            self.momentum_buffers = [tf.Variable(tf.zeros_like(v)) for v in self.trainable]
            self.lr = tf.Variable(optimizer.schedule.lr_at_epoch(0), dtype=tf.float32)
        self._train_step = self._wrap(self._step)
        self._predict = self._wrap(self._logits)

    def _wrap(self, fn: Callable) -> Callable:
        if self.mode == "eager":
            return fn
        return tf.function(fn, jit_compile=self.mode == "xla")

    def _step(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, self.trainable)
        mu, decay = self.optimizer.momentum, self.optimizer.weight_decay
        for weight, grad, buf in zip(self.trainable, grads, self.momentum_buffers, strict=True):
            grad = grad + decay * weight
            # buf starts at zero, so the first step's buf is the gradient, as in torch.
            buf.assign(mu * buf + grad)
            weight.assign_sub(self.lr * buf)
        return loss

    def _logits(self, x: tf.Tensor) -> tf.Tensor:
        return self.model(x, training=False)

    def train_epoch(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        losses = []
        with tf.device(self.device_name):
            for images, labels in batches:
                x, y = tf.convert_to_tensor(images), tf.convert_to_tensor(labels)
                losses.append(self._train_step(x, y))
            if self.device_name != "/CPU:0":
                tf.test.experimental.sync_devices()
            return tf.stack(losses).numpy().astype(np.float64)

    def end_epoch(self) -> None:
        self.epoch += 1
        self.lr.assign(self.optimizer.schedule.lr_at_epoch(self.epoch))

    def learning_rate(self) -> float:
        return float(self.lr.numpy())

    def predict(self, images: np.ndarray) -> np.ndarray:
        with tf.device(self.device_name):
            return self._predict(tf.convert_to_tensor(images)).numpy()

    def state(self) -> Weights:
        return {name: variable.numpy() for name, variable in self.model.weights.items()}

    def predict_in(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        """The trained model in `precision` as TensorFlow's cells run it: bfloat16 as Keras's
        `bfloat16` policy (variables and compute in bfloat16), in this trainer's mode;
        int8 and int8_static as the litert cells, LiteRT's dynamic-range and full-integer
        quantization (the latter calibrated on `calibration`), run by TensorFlow's own TFLite
        interpreter on one thread."""
        if precision in (INT8, INT8_STATIC):
            return self._litert_int8(precision, calibration)
        if precision != BFLOAT16:
            raise NotImplementedError(f"tensorflow runs no trained model in {precision}")
        weights = {
            name: value.astype(tf.bfloat16.as_numpy_dtype) for name, value in self.state().items()
        }
        with tf.device(self.device_name):
            model = ResNet(self.model.spec, weights, tf.bfloat16)
        run = self._wrap(lambda x: model(x, training=False))

        def logits(images: np.ndarray) -> np.ndarray:
            with tf.device(self.device_name):
                return run(tf.convert_to_tensor(images)).numpy().astype(np.float32)

        return logits, {}

    def _litert_int8(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        from fwbench.frameworks.tensorflow.export import LITERT_OPTIMIZATIONS, litert_model

        forward, _ = self._inference_function(calibration[0])
        start = time.perf_counter()
        content = litert_model(forward, precision, calibration)
        details = {
            "converter": "tf.lite.TFLiteConverter.from_concrete_functions",
            "optimizations": LITERT_OPTIMIZATIONS[precision],
            "quantize_s": time.perf_counter() - start,
            "runtime": "tf.lite.Interpreter, 1 thread",
        }
        return _tflite_logits(content), details

    def _inference_function(self, example: np.ndarray) -> tuple[Any, Any]:
        """The trained model's float32 forward in inference mode as a tf.function over a
        dynamic batch of `example`'s shape (INPUT_LAYOUT), and its input signature."""
        signature = tf.TensorSpec((None, *example.shape[1:]), tf.float32, name="x")
        forward = tf.function(lambda x: self.model(x, training=False), input_signature=[signature])
        return forward, signature

    def onnx_export(self, path: str, example: np.ndarray) -> Exported:
        """The trained model, float32, as the onnxrt cells export theirs (tf2onnx:
        frameworks.tensorflow.export.onnx_file)."""
        from fwbench.frameworks.tensorflow.export import onnx_file

        forward, signature = self._inference_function(example)
        start = time.perf_counter()
        details = onnx_file(forward, signature, path)
        how = "tf2onnx.convert.from_function(the trained model, inference mode, dynamic batch)"
        return Exported(path, how, details | {"export_s": time.perf_counter() - start})

    def compile_info(self) -> CompileInfo:
        if self.mode == "eager":
            return CompileInfo(compiled=False, how="eager: op by op")
        traces = self._train_step.experimental_get_tracing_count()
        predict_traces = self._predict.experimental_get_tracing_count()
        details = {"train_step_traces": traces, "predict_traces": predict_traces}
        how = "tf.function(train step incl. optimizer) + tf.function(eval forward)"
        if self.mode == "xla":
            how += ", jit_compile=True"
        return CompileInfo(
            compiled=traces > 0, how=how, graph_count=traces + predict_traces, details=details
        )

    def peak_device_memory_bytes(self) -> int | None:
        if self.device_name == "/CPU:0":
            return None
        return int(tf.config.experimental.get_memory_info("GPU:0")["peak"])


def _tflite_logits(content: bytes) -> Callable[[np.ndarray], np.ndarray]:
    """A .tflite model's logits function, not timed: TensorFlow's own interpreter on one thread
    (the cells' LiteRT interpreter lives in fwbench.runtimes, which the frameworks do not
    import); each call sizes the input to its batch where it changed."""
    interpreter = tf.lite.Interpreter(model_content=content, num_threads=1)
    (given,) = interpreter.get_input_details()
    output = interpreter.get_output_details()[0]["index"]
    sized: list[tuple[int, ...]] = []

    def logits(x: np.ndarray) -> np.ndarray:
        if sized[-1:] != [x.shape]:
            interpreter.resize_tensor_input(given["index"], list(x.shape), strict=True)
            interpreter.allocate_tensors()
            sized.append(x.shape)
        interpreter.set_tensor(given["index"], np.ascontiguousarray(x, dtype=np.float32))
        interpreter.invoke()
        return interpreter.get_tensor(output).copy()

    return logits


def _configure(device: str, threads: int | None, allow_tf32: bool) -> None:
    """Runtime settings TF accepts only before its first op."""
    if threads is not None:
        with contextlib.suppress(RuntimeError):  # the runtime already started in this process
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(1)
    gpus = tf.config.list_physical_devices("GPU")
    if device == "cuda":
        if not gpus:
            raise RuntimeError("device 'cuda' requested but TensorFlow sees no GPU")
        for gpu in gpus:
            with contextlib.suppress(RuntimeError):  # already set in this process
                tf.config.experimental.set_memory_growth(gpu, True)
        tf.config.experimental.reset_memory_stats("GPU:0")
    tf.config.experimental.enable_tensor_float_32_execution(allow_tf32)


def build(
    spec: ResNetSpec, weights: Weights, optimizer: SGDConfig, **options: Any
) -> TensorFlowTrainer:
    """A trainer for `spec` from the neutral `weights`; `options` as in TrainOptions. The
    learning rate is a variable set per epoch, so steps_per_epoch is not needed here."""
    run = TrainOptions(**options)
    check_framework_mode("tensorflow", run.mode)
    _configure(run.device, run.threads, run.allow_tf32)
    compute = tf.bfloat16 if run.precision == "bfloat16" else tf.float32
    return TensorFlowTrainer(spec, weights, optimizer, run.mode, run.device, compute)
