"""The five architectures as pure JAX functions `forward(params, x) -> logits`.

JAX has no layer library here (no flax), so each forward is written in jax.numpy, jax.nn and
lax over a params pytree: a flat dict of jax arrays keyed by the neutral names of
`fwbench.model.weights`, converted to the layouts JAX uses (NHWC activations, time-major sequences).

Every dot and convolution asks for `Precision.HIGHEST`: on CPU that is what XLA does anyway,
but on NVIDIA GPUs JAX's default for float32 is TF32 (10-bit mantissa), which computes a
different function than the float32 reference (normwise errors around 1e-3).

A precision other than float32 is the params pytree and the input in that dtype (DTYPES), as
JAX's users cast a model: every op then computes in it (XLA decides how, per backend).

Recurrences run through a `Loop` with the signature of `lax.scan`: `lax.scan` itself for the
jit mode, `python_scan` (a Python loop over time steps) for eager, because `lax.scan` outside
jit is compiled as one primitive.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from fwbench.frameworks.info import BFLOAT16, FLOAT32
from fwbench.model.specs import ArchSpec, CNNSpec, MLPSpec, RecurrentSpec, TransformerSpec
from fwbench.model.weights import Weights

Params = dict[str, jax.Array]
Forward = Callable[[Params, jax.Array], jax.Array]
Carry = tuple[jax.Array, ...]
Step = Callable[[Carry, jax.Array], tuple[Carry, jax.Array | None]]
Loop = Callable[[Step, Carry, jax.Array], tuple[Carry, jax.Array | None]]

HIGHEST = lax.Precision.HIGHEST
# The jax dtype of each precision a jax mode runs (frameworks.mode_precisions).
DTYPES = {FLOAT32: jnp.float32, BFLOAT16: jnp.bfloat16}
LOOPS = ("scan", "python")


def python_scan(step: Step, carry: Carry, xs: jax.Array) -> tuple[Carry, jax.Array | None]:
    """`lax.scan` semantics as a Python loop: one op-by-op step per leading index of `xs`."""
    outputs = []
    for t in range(xs.shape[0]):
        carry, out = step(carry, xs[t])
        outputs.append(out)
    if not outputs or outputs[0] is None:
        return carry, None
    return carry, jnp.stack(outputs)


def to_layout(spec: ArchSpec, x: np.ndarray) -> np.ndarray:
    """A neutral-layout input in the layout the forward takes: NHWC images, time-major
    sequences (what `lax.scan` iterates over)."""
    if isinstance(spec, CNNSpec):
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if isinstance(spec, RecurrentSpec):
        return np.ascontiguousarray(x.transpose(1, 0, 2))
    return x


def to_params(
    spec: ArchSpec, weights: Weights, device: jax.Device, precision: str = FLOAT32
) -> Params:
    """The shared numpy weights as jax arrays of `precision`'s dtype (DTYPES; the float32
    weights cast, rounded to nearest) on `device`, in the forward's layouts."""
    arrays = {name: np.asarray(value, dtype=np.float32) for name, value in weights.items()}
    if isinstance(spec, CNNSpec):
        # The neutral flatten is (C, H, W); NHWC activations flatten as (H, W, C): permute the
        # first dense layer's rows once here instead of transposing activations every call.
        channels, height, width = spec.feature_map()
        w0 = arrays["dense0.W"].reshape(channels, height, width, -1)
        arrays["dense0.W"] = w0.transpose(1, 2, 0, 3).reshape(channels * height * width, -1)
    dtype = DTYPES[precision]
    return {
        name: jax.device_put(value.astype(dtype, copy=False), device)
        for name, value in arrays.items()
    }


def forward_fn(spec: ArchSpec, loop: str) -> Forward:
    """`forward(params, x)` for `spec`; `loop` ("scan" or "python") runs the recurrences."""
    if loop not in LOOPS:
        raise ValueError(f"unknown loop {loop!r}; known: {', '.join(LOOPS)}")
    if isinstance(spec, MLPSpec):
        return lambda params, x: _dense_stack(params, x, len(spec.hidden) + 1)
    if isinstance(spec, CNNSpec):
        return lambda params, x: _cnn(spec, params, x)
    if isinstance(spec, RecurrentSpec):
        scan: Loop = lax.scan if loop == "scan" else python_scan
        return lambda params, x: _recurrent(spec, scan, params, x)
    if isinstance(spec, TransformerSpec):
        return lambda params, x: _transformer(spec, params, x)
    raise TypeError(f"no jax forward for spec {spec!r}")


def _matmul(x: jax.Array, w: jax.Array) -> jax.Array:
    return jnp.matmul(x, w, precision=HIGHEST)


def _dense(params: Params, prefix: str, x: jax.Array) -> jax.Array:
    return _matmul(x, params[f"{prefix}.W"]) + params[f"{prefix}.b"]


def _dense_stack(params: Params, x: jax.Array, count: int) -> jax.Array:
    """dense0..dense{count-1}, ReLU between them, none after the last."""
    for i in range(count):
        x = _dense(params, f"dense{i}", x)
        if i < count - 1:
            x = jax.nn.relu(x)
    return x


def _conv_same(x: jax.Array, kernel: jax.Array, bias: jax.Array) -> jax.Array:
    """Stride-1 'same' cross-correlation, NHWC input, HWIO kernel; odd padding goes after."""
    kh, kw = kernel.shape[:2]
    pad_h, pad_w = (kh - 1) // 2, (kw - 1) // 2
    out = lax.conv_general_dilated(
        x,
        kernel,
        window_strides=(1, 1),
        padding=((pad_h, kh - 1 - pad_h), (pad_w, kw - 1 - pad_w)),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision=HIGHEST,
    )
    return out + bias


def _max_pool2(x: jax.Array) -> jax.Array:
    return lax.reduce_window(x, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _cnn(spec: CNNSpec, params: Params, x: jax.Array) -> jax.Array:
    for i in range(len(spec.conv_channels)):
        x = _conv_same(x, params[f"conv{i}.kernel"], params[f"conv{i}.b"])
        x = _max_pool2(jax.nn.relu(x))
    return _dense_stack(params, x.reshape(x.shape[0], -1), len(spec.dense) + 1)


def _rnn_cell(carry: Carry, z: jax.Array) -> Carry:
    return (jnp.tanh(z),)


def _lstm_cell(carry: Carry, z: jax.Array) -> Carry:
    _, c = carry
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c


def _recurrent(spec: RecurrentSpec, scan: Loop, params: Params, xs: jax.Array) -> jax.Array:
    """Stacked layers over time-major `xs` (seq, batch, input); logits from the last step.

    Each layer projects all time steps' inputs in one matmul, then only h @ W_hh is sequential.
    """
    cell = _lstm_cell if spec.cell == "lstm" else _rnn_cell
    zeros = jnp.zeros((xs.shape[1], spec.hidden), xs.dtype)
    initial: Carry = (zeros, zeros) if spec.cell == "lstm" else (zeros,)
    carry = initial
    for layer in range(spec.layers):
        p = f"layer{layer}"
        w_hh = params[f"{p}.W_hh"]
        projected = _matmul(xs, params[f"{p}.W_ih"]) + params[f"{p}.b"]
        keep_outputs = layer < spec.layers - 1  # the last layer feeds only its final h

        def step(
            state: Carry, z_in: jax.Array, w_hh: jax.Array = w_hh, keep: bool = keep_outputs
        ) -> tuple[Carry, jax.Array | None]:
            state = cell(state, z_in + _matmul(state[0], w_hh))
            return state, state[0] if keep else None

        carry, outputs = scan(step, initial, projected)
        if outputs is not None:
            xs = outputs
    return _dense(params, "head", carry[0])


def _layer_norm(params: Params, prefix: str, x: jax.Array, eps: float) -> jax.Array:
    normed = jax.nn.standardize(x, axis=-1, epsilon=eps, algorithm="stable")
    return normed * params[f"{prefix}.gamma"] + params[f"{prefix}.beta"]


def _attention(params: Params, prefix: str, x: jax.Array, heads: int) -> jax.Array:
    batch, seq, d = x.shape
    head_dim = d // heads

    def project(name: str) -> jax.Array:
        out = _matmul(x, params[f"{prefix}.W{name}"]) + params[f"{prefix}.b{name}"]
        return out.reshape(batch, seq, heads, head_dim)

    q, k, v = project("q"), project("k"), project("v")
    scores = jnp.einsum("btnh,bsnh->bnts", q, k, precision=HIGHEST) / math.sqrt(head_dim)
    probs = jax.nn.softmax(scores, axis=-1)
    context = jnp.einsum("bnts,bsnh->btnh", probs, v, precision=HIGHEST)
    return _matmul(context.reshape(batch, seq, d), params[f"{prefix}.Wo"]) + params[f"{prefix}.bo"]


def _transformer(spec: TransformerSpec, params: Params, x: jax.Array) -> jax.Array:
    eps = spec.layer_norm_eps
    for layer in range(spec.layers):
        p = f"layer{layer}"
        x = _layer_norm(
            params, f"{p}.norm1", x + _attention(params, f"{p}.attn", x, spec.heads), eps
        )
        ff = _dense(params, f"{p}.ff2", jax.nn.relu(_dense(params, f"{p}.ff1", x)))
        x = _layer_norm(params, f"{p}.norm2", x + ff, eps)
    return _dense(params, "head", x.mean(axis=1))


def describe_loop(spec: ArchSpec, loop: str) -> dict[str, Any]:
    """How `forward_fn(spec, loop)` runs its recurrence, for compile_info details."""
    if not isinstance(spec, RecurrentSpec):
        return {}
    how = "lax.scan" if loop == "scan" else "Python loop over time steps"
    return {"recurrence": how}
