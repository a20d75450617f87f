"""JAX training: a pure forward function over the neutral weight dict (NHWC, HWIO kernels),
optax.chain(add_decayed_weights, sgd(schedule, momentum)) — torch.optim.SGD's coupled decay —
with the step schedule as an optax piecewise-constant schedule over the step count.

Modes: `jit` = the whole train step (forward, backward, BN updates, optimizer) in one jax.jit,
and the eval forward in another; `eager` = the same functions op by op (slow).
Precision `bfloat16`: BFLOAT16_POLICY.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from fwbench.frameworks import check_framework_mode
from fwbench.frameworks.protocols import CompileInfo, Exported, Predictor, TrainOptions
from fwbench.model.optimizer import SGDConfig
from fwbench.model.resnet import Conv, ResNetSpec, is_trainable
from fwbench.model.weights import Weights
from fwbench.precisions import BFLOAT16

INPUT_LAYOUT = "NHWC"
BFLOAT16_POLICY = (
    "bfloat16 compute over float32 parameters, as flax's dtype=bfloat16, "
    "param_dtype=float32 layers do: each convolution and the head's matmul take operands "
    "cast to bfloat16 and return bfloat16; batch norm upcasts to float32 for its statistics "
    "and normalization and returns bfloat16; the logits are float32 from the bias add on; "
    "the gradients flow back through the casts into the float32 parameters"
)
Params = dict[str, jax.Array]


def _conv(x: jax.Array, kernel: jax.Array, conv: Conv, compute: Any) -> jax.Array:
    pad = conv.padding
    return lax.conv_general_dilated(
        x.astype(compute),
        kernel.astype(compute),
        window_strides=(conv.stride, conv.stride),
        padding=((pad, pad), (pad, pad)),
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )


def forward(
    spec: ResNetSpec,
    params: Params,
    stats: Params,
    x: jax.Array,
    training: bool,
    compute: Any = jnp.float32,
) -> tuple[jax.Array, Params]:
    """Logits and the running statistics after this pass (unchanged unless training); the
    activations are `compute`'s (bfloat16: BFLOAT16_POLICY), batch norm runs in float32, the
    logits are the bias's dtype."""
    new_stats = dict(stats)

    def conv_bn(h: jax.Array, conv: Conv) -> jax.Array:
        h = _conv(h, params[f"{conv.name}.kernel"], conv, compute).astype(jnp.float32)
        mean_key, var_key = f"{conv.bn}.running_mean", f"{conv.bn}.running_var"
        if training:
            mean, var = jnp.mean(h, axis=(0, 1, 2)), jnp.var(h, axis=(0, 1, 2))
            count = h.size // h.shape[-1]
            m = spec.bn_momentum
            new_stats[mean_key] = (1 - m) * stats[mean_key] + m * lax.stop_gradient(mean)
            unbiased = lax.stop_gradient(var) * (count / (count - 1))
            new_stats[var_key] = (1 - m) * stats[var_key] + m * unbiased
        else:
            mean, var = stats[mean_key], stats[var_key]
        scale = params[f"{conv.bn}.gamma"] * lax.rsqrt(var + spec.bn_eps)
        return ((h - mean) * scale + params[f"{conv.bn}.beta"]).astype(compute)

    h = jax.nn.relu(conv_bn(x, spec.stem_conv))
    if spec.stem_pool:
        h = lax.reduce_window(
            h, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0))
        )
    for block in spec.blocks():
        out = h
        for i, conv in enumerate(block.convs):
            out = conv_bn(out, conv)
            if i < len(block.convs) - 1:
                out = jax.nn.relu(out)
        shortcut = h if block.shortcut is None else conv_bn(h, block.shortcut)
        h = jax.nn.relu(out + shortcut)
    pooled, head, bias = jnp.mean(h, axis=(1, 2)), params["head.W"], params["head.b"]
    logits = jnp.matmul(pooled.astype(compute), head.astype(compute)).astype(bias.dtype)
    return logits + bias, new_stats


def _schedule(optimizer: SGDConfig, steps_per_epoch: int) -> optax.Schedule:
    """The per-epoch step schedule over the optimizer's step count: epoch = count // steps."""
    schedule = optimizer.schedule
    scales: dict[int, float] = {}
    for milestone in schedule.milestones:  # a repeated milestone multiplies repeatedly
        boundary = milestone * steps_per_epoch
        scales[boundary] = scales.get(boundary, 1.0) * schedule.gamma
    return optax.piecewise_constant_schedule(schedule.base_lr, scales)


class JaxTrainer:
    def __init__(
        self,
        spec: ResNetSpec,
        weights: Weights,
        optimizer: SGDConfig,
        steps_per_epoch: int,
        mode: str,
        device: str,
        compute: Any = jnp.float32,
    ) -> None:
        self.mode, self.spec = mode, spec
        self.device = jax.devices("gpu" if device == "cuda" else "cpu")[0]
        put = jax.device_put
        self.params = {k: put(v, self.device) for k, v in weights.items() if is_trainable(k)}
        self.stats = {k: put(v, self.device) for k, v in weights.items() if not is_trainable(k)}
        self.schedule = _schedule(optimizer, steps_per_epoch)
        self.tx = optax.chain(
            optax.add_decayed_weights(optimizer.weight_decay),
            optax.sgd(self.schedule, momentum=optimizer.momentum),
        )
        # Committed to the device like the step's outputs, or the second step compiles again.
        self.opt_state = jax.device_put(self.tx.init(self.params), self.device)

        def train_step(
            params: Params, stats: Params, opt_state: Any, x: jax.Array, y: jax.Array
        ) -> tuple[Params, Params, Any, jax.Array]:
            def loss_fn(params: Params) -> tuple[jax.Array, Params]:
                logits, new_stats = forward(spec, params, stats, x, True, compute)
                loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
                return loss, new_stats

            (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), new_stats, opt_state, loss

        def predict(params: Params, stats: Params, x: jax.Array) -> jax.Array:
            return forward(spec, params, stats, x, False, compute)[0]

        if mode == "jit":
            # Donated buffers are reused in place on accelerators; the CPU client cannot.
            donate = (0, 1, 2) if self.device.platform == "gpu" else ()
            self._train_step = jax.jit(train_step, donate_argnums=donate)
            self._predict = jax.jit(predict)
        else:
            self._train_step, self._predict = train_step, predict

    def train_epoch(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        losses = []
        for images, labels in batches:
            x, y = jax.device_put((images, labels), self.device)
            self.params, self.stats, self.opt_state, loss = self._train_step(
                self.params, self.stats, self.opt_state, x, y
            )
            losses.append(loss)
        jax.block_until_ready((self.params, self.stats, losses))
        return np.array([float(loss) for loss in losses], dtype=np.float64)

    def end_epoch(self) -> None:
        """Nothing to do: the schedule follows the optimizer's own step count."""

    def learning_rate(self) -> float:
        return float(self.schedule(optax.tree_utils.tree_get(self.opt_state, "count")))

    def predict(self, images: np.ndarray) -> np.ndarray:
        logits = self._predict(self.params, self.stats, jax.device_put(images, self.device))
        return np.asarray(logits)

    def state(self) -> Weights:
        return {name: np.asarray(value) for name, value in (self.params | self.stats).items()}

    def predict_in(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        """The trained model in bfloat16 as jax's cells run it (parameters, statistics and
        input cast: the whole forward in bfloat16); jax has no int8 path."""
        if precision != BFLOAT16:
            raise NotImplementedError(f"jax runs no {precision} model (its cells: bfloat16)")
        cast = jax.tree_util.tree_map(lambda v: v.astype(jnp.bfloat16), (self.params, self.stats))

        def predict(params: Params, stats: Params, x: jax.Array) -> jax.Array:
            return forward(self.spec, params, stats, x, False, jnp.bfloat16)[0]

        run = jax.jit(predict) if self.mode == "jit" else predict

        def logits(images: np.ndarray) -> np.ndarray:
            x = jax.device_put(images.astype(jnp.bfloat16), self.device)
            return np.asarray(run(*cast, x)).astype(np.float32)

        return logits, {}

    def onnx_export(self, path: str, example: np.ndarray) -> Exported:
        raise NotImplementedError("jax exports no ONNX model (its cells run no onnxrt mode)")

    def compile_info(self) -> CompileInfo:
        if self.mode != "jit":
            return CompileInfo(compiled=False, how="eager: op-by-op dispatch, no jit")
        step_entries = self._train_step._cache_size()
        predict_entries = self._predict._cache_size()
        return CompileInfo(
            compiled=step_entries > 0,
            how="jax.jit(train step incl. optimizer) + jax.jit(eval forward)",
            graph_count=step_entries + predict_entries,
            details={"train_step_cache": step_entries, "predict_cache": predict_entries},
        )

    def peak_device_memory_bytes(self) -> int | None:
        if self.device.platform == "cpu":
            return None
        stats = self.device.memory_stats() or {}
        peak = stats.get("peak_bytes_in_use")
        return None if peak is None else int(peak)


def build(spec: ResNetSpec, weights: Weights, optimizer: SGDConfig, **options: Any) -> JaxTrainer:
    """A trainer for `spec` from the neutral `weights`; `options` as in TrainOptions. XLA's CPU
    threads follow the environment and affinity the job set before importing jax, so
    `threads` is not used."""
    run = TrainOptions(**options)
    check_framework_mode("jax", run.mode)
    if run.device == "cuda" and jax.default_backend() != "gpu":
        raise RuntimeError(
            f"device 'cuda' requested but jax's backend is {jax.default_backend()!r}"
        )
    precision = "tensorfloat32" if run.allow_tf32 else "highest"
    jax.config.update("jax_default_matmul_precision", precision)
    compute = jnp.bfloat16 if run.precision == "bfloat16" else jnp.float32
    return JaxTrainer(spec, weights, optimizer, run.steps_per_epoch, run.mode, run.device, compute)
