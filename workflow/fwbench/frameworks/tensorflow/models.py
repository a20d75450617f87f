"""Keras 3 models (TensorFlow backend) for every architecture in `fwbench.model.specs`, loaded with
the shared neutral weights of `fwbench.model.weights`.

Standard Keras layers throughout (Dense, Conv2D, MaxPooling2D, SimpleRNN, LSTM,
MultiHeadAttention, LayerNormalization), because those are what users run. Layout conversions
from the neutral weights:
- Dense, Conv2D, SimpleRNN, LSTM: Keras stores the neutral layouts as they are (dense W
  (in, out); conv kernel (kh, kw, cin, cout); recurrent kernel (in, G*H), recurrent_kernel
  (H, G*H), one bias (G*H,); LSTM gates (i, f, c, o) = neutral (i, f, g, o)).
- CNN: the model takes NHWC (TF's CPU convolutions need channels-last), so its flatten runs
  over (H, W, C); the rows of the first dense kernel are permuted from the neutral (C, H, W).
- MultiHeadAttention: einsum kernels; Q/K/V (d, heads, head_dim) and output (heads, head_dim, d)
  are the neutral (d, d) matrices reshaped, head index major as in the reference's split.

A precision other than float32 is Keras's dtype policy of that name (`bfloat16`: variables and
computations in bf16, as Keras's users set it with keras.config.set_dtype_policy) for every
layer, the model's input of that dtype too; the float32 weights are cast as they are loaded.
Keras's own choices stand: LayerNormalization computes in float32 and casts its output back.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType

import numpy as np

from fwbench.frameworks.info import BFLOAT16, FLOAT32
from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.model.weights import Weights

# Packages TF and keras import when installed, for features we never use; each is blocked
# while TF is imported and importable again afterwards.
# - jax: TF imports `jax.jit` (tensorflow/lite/python/util.py, for converting JAX models to
#   TFLite): about +100 MiB peak RSS and +1.5 s import here.
# - sklearn: keras imports it for its scikit-learn estimator wrappers (keras.src.wrappers,
#   which fall back to stubs without it): +0.9 s of the 4.9 s import here. Training loads
#   its digits dataset with sklearn later, which still works.
UNUSED_BY_TF = ("jax", "sklearn")


def _import_tensorflow_without_unused() -> tuple[ModuleType, ModuleType]:
    """Import tensorflow and keras while importing any of UNUSED_BY_TF fails."""
    blocked = [name for name in UNUSED_BY_TF if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` raise
    try:
        import keras
        import tensorflow
    finally:
        for name in blocked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
    return tensorflow, keras


# The package's other modules (infer, train, hardware) take `tf` and `keras` from here, so the
# block above covers the first import of TensorFlow whichever of them is imported first.
tf, keras = _import_tensorflow_without_unused()

# The TensorFlow dtype of each precision a tensorflow mode runs (frameworks.mode_precisions);
# each precision's name is also the Keras dtype policy that builds the model in it.
DTYPES = {FLOAT32: tf.float32, BFLOAT16: tf.bfloat16}
# The layers' initial values are replaced by the loaded weights: the recurrent kernels start at
# zeros, since Keras's default orthogonal initializer runs a QR decomposition, which TF has no
# bfloat16 kernel for (the layer could not be built in bf16).
RECURRENT_INITIALIZER = "zeros"


@contextlib.contextmanager
def _dtype_policy(precision: str) -> Iterator[None]:
    """Keras's global dtype policy is `precision` while the model is built (each layer takes
    the policy when it is made), and what it was afterwards."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _input(shape: tuple[int, ...], name: str) -> keras.KerasTensor:
    """The model's input, of the dtype the layers compute in (so no cast follows it)."""
    return keras.Input(shape=shape, name=name, dtype=keras.config.dtype_policy().compute_dtype)


def _dense_stack(x: keras.KerasTensor, widths: list[int]) -> keras.KerasTensor:
    """Dense layers `dense0..`, ReLU between them, none after the last (as the reference)."""
    for i, width in enumerate(widths):
        activation = "relu" if i < len(widths) - 1 else None
        x = keras.layers.Dense(width, activation=activation, name=f"dense{i}")(x)
    return x


def _mlp(spec: MLPSpec) -> keras.Model:
    inputs = _input((spec.input,), "x")
    widths = [*spec.hidden, spec.classes]
    return keras.Model(inputs, _dense_stack(inputs, widths), name="mlp")


def _cnn(spec: CNNSpec) -> keras.Model:
    inputs = _input((spec.height, spec.width, spec.channels), "x_nhwc")
    x = inputs
    for i, channels in enumerate(spec.conv_channels):
        x = keras.layers.Conv2D(
            channels, spec.kernel, padding="same", activation="relu", name=f"conv{i}"
        )(x)
        x = keras.layers.MaxPooling2D(pool_size=2, name=f"pool{i}")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    widths = [*spec.dense, spec.classes]
    return keras.Model(inputs, _dense_stack(x, widths), name="cnn")


def _recurrent(spec: RecurrentSpec, allow_cudnn: bool) -> keras.Model:
    inputs = _input((spec.seq_len, spec.input), "x")
    x = inputs
    for i in range(spec.layers):
        last = i == spec.layers - 1
        if spec.cell == "lstm":
            layer = keras.layers.LSTM(
                spec.hidden,
                return_sequences=not last,
                use_cudnn="auto" if allow_cudnn else False,
                recurrent_initializer=RECURRENT_INITIALIZER,
                name=f"layer{i}",
            )
        elif spec.cell == "rnn":
            layer = keras.layers.SimpleRNN(
                spec.hidden,
                activation="tanh",
                return_sequences=not last,
                recurrent_initializer=RECURRENT_INITIALIZER,
                name=f"layer{i}",
            )
        else:
            raise ValueError(f"unknown recurrent cell {spec.cell!r}; known: rnn, lstm")
        x = layer(x)
    outputs = keras.layers.Dense(spec.classes, name="head")(x)
    return keras.Model(inputs, outputs, name=spec.cell)


def _encoder_layer(x: keras.KerasTensor, spec: TransformerSpec, p: str) -> keras.KerasTensor:
    """Post-norm: x = LN(x + MHA(x)); x = LN(x + FF(x)), FF = Dense(ff, relu) → Dense(d)."""
    eps = spec.layer_norm_eps
    attention = keras.layers.MultiHeadAttention(
        num_heads=spec.heads, key_dim=spec.head_dim, flash_attention=False, name=f"{p}.attn"
    )(x, x)
    x = keras.layers.Add(name=f"{p}.add1")([x, attention])
    x = keras.layers.LayerNormalization(epsilon=eps, name=f"{p}.norm1")(x)
    ff = keras.layers.Dense(spec.ff, activation="relu", name=f"{p}.ff1")(x)
    ff = keras.layers.Dense(spec.d_model, name=f"{p}.ff2")(ff)
    x = keras.layers.Add(name=f"{p}.add2")([x, ff])
    return keras.layers.LayerNormalization(epsilon=eps, name=f"{p}.norm2")(x)


def _transformer(spec: TransformerSpec) -> keras.Model:
    inputs = _input((spec.seq_len, spec.d_model), "x")
    x = inputs
    for i in range(spec.layers):
        x = _encoder_layer(x, spec, f"layer{i}")
    x = keras.layers.GlobalAveragePooling1D(name="mean_pool")(x)
    outputs = keras.layers.Dense(spec.classes, name="head")(x)
    return keras.Model(inputs, outputs, name="transformer")


def _assign(layer: keras.layers.Layer, arrays: list[np.ndarray]) -> None:
    """Set a layer's weights, refusing any shape mismatch (set_weights checks shapes too, but
    this names the layer and both shapes)."""
    current = layer.get_weights()
    if len(current) != len(arrays):
        raise ValueError(f"{layer.name}: expects {len(current)} arrays, got {len(arrays)}")
    for have, new in zip(current, arrays, strict=True):
        if have.shape != new.shape:
            raise ValueError(f"{layer.name}: weight shape {have.shape} != loaded {new.shape}")
    layer.set_weights([np.asarray(a, dtype=np.float32) for a in arrays])


def _dense_weights(weights: Weights, prefix: str) -> list[np.ndarray]:
    return [weights[f"{prefix}.W"], weights[f"{prefix}.b"]]


def _nchw_rows_to_nhwc(kernel: np.ndarray, feature_map: tuple[int, int, int]) -> np.ndarray:
    """Reorder a dense kernel's rows from a (C, H, W) flatten to an (H, W, C) flatten."""
    channels, height, width = feature_map
    n_out = kernel.shape[1]
    return kernel.reshape(channels, height, width, n_out).transpose(1, 2, 0, 3).reshape(-1, n_out)


def _load_cnn(model: keras.Model, spec: CNNSpec, weights: Weights) -> None:
    for i in range(len(spec.conv_channels)):
        _assign(model.get_layer(f"conv{i}"), [weights[f"conv{i}.kernel"], weights[f"conv{i}.b"]])
    for i in range(len(spec.dense) + 1):
        kernel, bias = _dense_weights(weights, f"dense{i}")
        if i == 0:
            kernel = _nchw_rows_to_nhwc(kernel, spec.feature_map())
        _assign(model.get_layer(f"dense{i}"), [kernel, bias])


def _load_transformer(model: keras.Model, spec: TransformerSpec, weights: Weights) -> None:
    d, heads, head_dim = spec.d_model, spec.heads, spec.head_dim
    for i in range(spec.layers):
        p = f"layer{i}"
        projections = []
        for proj in ("q", "k", "v"):
            projections += [
                weights[f"{p}.attn.W{proj}"].reshape(d, heads, head_dim),
                weights[f"{p}.attn.b{proj}"].reshape(heads, head_dim),
            ]
        projections += [
            weights[f"{p}.attn.Wo"].reshape(heads, head_dim, d),
            weights[f"{p}.attn.bo"],
        ]
        # MultiHeadAttention.weights order: query, key, value, attention_output (kernel, bias).
        _assign(model.get_layer(f"{p}.attn"), projections)
        for name in ("ff1", "ff2"):
            _assign(model.get_layer(f"{p}.{name}"), _dense_weights(weights, f"{p}.{name}"))
        for norm in ("norm1", "norm2"):
            _assign(
                model.get_layer(f"{p}.{norm}"),
                [weights[f"{p}.{norm}.gamma"], weights[f"{p}.{norm}.beta"]],
            )
    _assign(model.get_layer("head"), _dense_weights(weights, "head"))


def to_layout(spec: ArchSpec, x: np.ndarray) -> np.ndarray:
    """A neutral-layout input in the layout the Keras model takes: NHWC images."""
    if isinstance(spec, CNNSpec):
        x = x.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(x, dtype=np.float32)


def build_model(
    spec: ArchSpec, weights: Weights, allow_cudnn: bool = True, precision: str = FLOAT32
) -> keras.Model:
    """The Keras model of `spec` holding `weights`, built under the dtype policy `precision`
    (its input of that dtype); CNN inputs are NHWC, all others neutral.

    allow_cudnn=False keeps Keras' LSTM off its cuDNN kernel on a GPU (CudnnRNNV3 has no XLA
    kernel, so jit_compile=True fails with it); it changes nothing on a CPU.
    """
    with _dtype_policy(precision):
        return _loaded_model(spec, weights, allow_cudnn)


def _loaded_model(spec: ArchSpec, weights: Weights, allow_cudnn: bool) -> keras.Model:
    if isinstance(spec, MLPSpec):
        model = _mlp(spec)
        for i in range(len(spec.hidden) + 1):
            _assign(model.get_layer(f"dense{i}"), _dense_weights(weights, f"dense{i}"))
    elif isinstance(spec, CNNSpec):
        model = _cnn(spec)
        _load_cnn(model, spec, weights)
    elif isinstance(spec, RecurrentSpec):
        model = _recurrent(spec, allow_cudnn)
        for i in range(spec.layers):
            _assign(
                model.get_layer(f"layer{i}"),
                [weights[f"layer{i}.{key}"] for key in ("W_ih", "W_hh", "b")],
            )
        _assign(model.get_layer("head"), _dense_weights(weights, "head"))
    elif isinstance(spec, TransformerSpec):
        model = _transformer(spec)
        _load_transformer(model, spec, weights)
    else:
        raise TypeError(f"no Keras model for spec {spec!r}")
    return model
