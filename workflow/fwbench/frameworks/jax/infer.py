"""The JAX inference adapter: `build(spec, weights, mode, device) -> Runner`.

Modes: `eager` calls the forward op by op (no jax.jit in this code, recurrences as a Python loop
over time steps); `jit` is jax.jit of the whole forward, recurrences via lax.scan. jax.numpy and
jax.nn functions are themselves small jitted wrappers, so eager JAX dispatches one cached XLA
executable per library call: that is JAX's eager mode as users run it. `export` deserializes
the artifact its export job wrote (frameworks.jax.export) and calls it under jax.jit.

Precision bfloat16: the params and each input as jnp.bfloat16 (models.DTYPES), in every mode;
export loads a function exported in bf16. Outputs come back as float32 numpy arrays.

The job sets JAX_PLATFORMS, XLA_PYTHON_CLIENT_PREALLOCATE (frameworks.pre_import_env), the
thread environment and the core affinity before importing this module. Nothing here touches a
backend at import time, so XLA's CPU thread pool is sized only when `build` first asks for a
device.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export

from fwbench.frameworks import check_threads
from fwbench.frameworks.base import EXPORTED_COUNTER_NOTE, BaseRunner, check_device
from fwbench.frameworks.jax import models, profiling
from fwbench.frameworks.kernel_precision import KernelPrecision, of_hlo
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.model.specs import CNNSpec, RecurrentSpec
from fwbench.model.weights import Weights

# What XLA's cost_analysis counts: every op, elementwise ones included.
COUNTER_SCOPE = "all"
_LOOP_OF_MODE = {"eager": "python", "jit": "scan"}


def _cuda_available() -> bool:
    try:
        return bool(jax.devices("cuda"))
    except RuntimeError:  # no such backend in this process (JAX_PLATFORMS, no GPU)
        return False


def jax_device(device: str) -> jax.Device:
    """The first JAX device of platform `device` ("cpu" or "cuda"), checked."""
    check_device("jax", jax.__version__, device, _cuda_available)
    return jax.devices(device)[0]


class JaxRunner(BaseRunner):
    """One architecture in one mode on one JAX device (a frameworks.protocols.Runner).

    `forward(params, x)` is what a call runs: the plain function (eager) or its jax.jit.
    """

    FRAMEWORK = "jax"
    TRACE_NOTE = (
        "one dispatch per PjitFunction (an op in eager, the call under jit); XLA's thunks as "
        "kernels (a fusion is one)"
    )

    def _setup(self, weights: Weights | None) -> None:
        spec, mode, device = self.spec, self.mode, self.device
        self._device = jax.devices(device)[0]
        self._dtype = models.DTYPES[self.precision]
        if self.artifact:  # export: the serialized StableHLO holds the weights as constants
            with open(self.artifact, "rb") as handle:
                exported = jax_export.deserialize(bytearray(handle.read()))
            self.params = None
            self.forward = jax.jit(exported.call)
            return
        self.params = models.to_params(spec, weights, self._device, self.precision)
        forward = models.forward_fn(spec, loop=_LOOP_OF_MODE[mode])
        self.forward = jax.jit(forward) if mode == "jit" else forward

    @staticmethod
    def version() -> str:
        return jax.__version__

    @staticmethod
    def cuda_available() -> bool:
        return _cuda_available()

    def to_device(self, x: np.ndarray) -> jax.Array:
        # The device is chosen by where the input is put: no timing_context is needed.
        host = models.to_layout(self.spec, x).astype(self._dtype, copy=False)
        prepared = jax.device_put(host, self._device)
        return prepared.block_until_ready()

    def call_in_context(self, prepared: jax.Array) -> jax.Array:
        if self.params is None:  # export: the artifact holds its weights; called as users do
            return self.forward(prepared)
        return self.forward(self.params, prepared)

    def sync(self, output: jax.Array) -> None:
        # The forward returns one array: its own method, not jax.block_until_ready's walk of a
        # pytree (about 2.5 µs a call on a 2-core Zen 4, as much as passing a None argument).
        output.block_until_ready()

    def compile_info(self) -> CompileInfo:
        if self.artifact:
            executables = _jit_cache_size(self.forward)
            return CompileInfo(
                compiled=executables > 0,
                how="jax.export.deserialize(artifact).call under jax.jit (XLA compiles the "
                "StableHLO at the first call)",
                graph_count=executables,
                details={"platform": self._device.platform, "artifact": self.artifact},
            )
        details: dict[str, Any] = {
            "platform": self._device.platform,
            "matmul_precision": str(models.HIGHEST),
        } | models.describe_loop(self.spec, _LOOP_OF_MODE[self.mode])
        if self.mode == "eager":
            details["note"] = "each jax.numpy/jax.nn call dispatches its own cached executable"
            return CompileInfo(compiled=False, how="op-by-op dispatch, no jit", details=details)
        # jax.jit either traces the whole function or raises: no graph breaks, no fallbacks.
        # Its cache holds one executable per input signature it has compiled.
        executables = _jit_cache_size(self.forward)
        details["jit_cache_size"] = executables
        return CompileInfo(
            compiled=executables > 0,
            how="jax.jit (XLA)",
            graph_count=executables,
            details=details,
        )

    def launch_floor(self) -> NullCall | None:
        """Eager: one jax.numpy add on a 1-element array, as an eager op is dispatched (its
        Python path to the primitive, then the primitive's cached executable); jit and
        export: None, the null call (one launch of a jitted 1-element add)."""
        if self.mode != "eager":
            return None
        x = jax.device_put(jnp.zeros(1, dtype=jnp.float32), self._device)
        return NullCall(lambda: jnp.add(x, 1.0), jax.block_until_ready)

    def cuda_peak_memory_bytes(self) -> int | None:
        """The allocator's peak since the process started (JAX has no reset)."""
        stats = self._device.memory_stats()
        return int(stats["peak_bytes_in_use"]) if stats else None

    def kernel_precision(self, prepared: jax.Array) -> KernelPrecision:
        """The FLOP of the optimized HLO's dots and convolutions by their operands' dtype
        (XLA's CPU backend converts bf16 operands to f32 around its dots: flagged). Eager:
        the same function as XLA compiles it under jit, since each eager op is compiled by
        the same backend alone."""
        arguments = (prepared,) if self.params is None else (self.params, prepared)
        jitted = self.forward if self.mode != "eager" else jax.jit(self.forward)
        text = jitted.lower(*arguments).compile().as_text()
        method = "XLA's optimized HLO (compiled.as_text()): dots and convolutions by operand dtype"
        notes = ("eager: the forward compiled under jit, as each op's own program is",)
        return of_hlo(text, self.precision, method, notes if self.mode == "eager" else ())

    def counter_flops(self, prepared: jax.Array) -> tuple[float | None, str]:
        """XLA's cost analysis of the jitted forward as written (lowered, before XLA's
        optimizations), whatever the mode.

        Before optimization, because fusion duplicates cheap elementwise producers into
        several consumers and the compiled count includes that recomputation (+7% rnn, +15%
        lstm here). A lax.scan body is counted once, not once per step, so recurrences are
        analysed with the time loop unrolled (the Python-loop forward): same function.
        """
        if self.params is None:
            return None, EXPORTED_COUNTER_NOTE
        forward = models.forward_fn(self.spec, loop="python")
        try:
            analysis = jax.jit(forward).lower(self.params, prepared).cost_analysis()
        except Exception as error:  # the counter is a cross-check; its failure is a finding
            return None, f"XLA cost_analysis failed: {type(error).__name__}: {error}"
        if isinstance(analysis, list | tuple):  # older jax: one dict per device program
            analysis = analysis[0] if analysis else None
        flops = (analysis or {}).get("flops")
        if flops is None or flops <= 0:
            return None, f"XLA cost_analysis reported no flops: {analysis!r}"
        # XLA counts exp/tanh (and logistic's exp) apart, as transcendentals; fwbench counts
        # each as 1 FLOP.
        flops += (analysis or {}).get("transcendentals", 0.0)
        how = "XLA cost_analysis of jax.jit(forward), lowered: flops + transcendentals"
        if isinstance(self.spec, RecurrentSpec):
            how += "; time loop unrolled (a lax.scan body would be counted once)"
        if isinstance(self.spec, CNNSpec):
            how += (
                "; XLA counts only kernel taps inside the image, fwbench (and torch's "
                "counter) also the zero-padding taps of a 'same' convolution"
            )
        return float(flops), how


def _jit_cache_size(jitted: Any) -> int:
    """Compiled executables in a jax.jit function's cache. `_cache_size` is the only handle
    jax exposes for this (it is private); without it nothing is claimed compiled."""
    size = getattr(jitted, "_cache_size", None)
    return int(size()) if callable(size) else 0


def null_call(device: str) -> NullCall:
    """JAX's dispatch floor: one jitted add on a 1-element array, blocked on."""
    x = jax.device_put(jnp.zeros(1, dtype=jnp.float32), jax_device(device))
    add_one = jax.jit(lambda v: v + 1.0)
    return NullCall(lambda: add_one(x), jax.block_until_ready)


# The profiler read for the attribution pass (frameworks.protocols.InferenceAdapter.profile).
profile = profiling.profile

# A Runner for `spec` holding `weights` in `mode` and `precision` on `device`; jax modes take no
# compile options.
build = JaxRunner.build


def set_threads(threads: int) -> dict[str, Any]:
    """XLA has no runtime thread-count API: its CPU pool is sized from the affinity mask when
    the backend starts, and XLA_FLAGS picks single- or multi-threaded Eigen. Both are set by
    the job before import; this reports them (and whether they agree with `threads`) for provenance.
    """
    check_threads(threads)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    xla_flags = os.environ.get("XLA_FLAGS", "")
    return {
        "api": "none (XLA has no runtime thread-count API)",
        "requested": threads,
        "affinity_cores": cores,
        "affinity_matches": len(cores) == threads,
        "XLA_FLAGS": xla_flags,
    }
