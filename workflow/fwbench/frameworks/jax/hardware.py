"""JAX's part of the hardware stage: the GEMM peak.

Run inside `python -m fwbench.hardware.workers ...`, which sets the thread settings and
JAX_PLATFORMS before this module (and jax) is imported.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from fwbench.host.harness import time_calls

DTYPES = {
    "float32": jnp.float32,
    "bfloat16": jnp.bfloat16,
    "float16": jnp.float16,
    "float64": jnp.float64,
    "int8": jnp.int8,
}


def setup(threads: int) -> dict[str, Any]:
    """XLA's CPU pool follows the affinity mask, which the worker has pinned to `threads`."""
    return {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(device) for device in jax.devices()],
        "precision": "HIGHEST (fp32 means fp32, no TF32/bf16 passes)",
    }


def gemm(n: int, trials: int, dtype: str, device: str) -> dict[str, Any]:
    """Best of `trials` jitted n×n @ n×n products (the first call compiles, untimed). int8:
    int8 operands (the full range) into int32 (`preferred_element_type`)."""
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    backend = jax.default_backend()
    if (device == "cuda") != (backend == "gpu"):
        raise RuntimeError(f"device {device!r} requested but jax's backend is {backend!r}")
    rng = np.random.default_rng(0)
    if dtype == "int8":
        a, b = (jnp.asarray(rng.integers(-128, 128, (n, n)), dtype=jnp.int8) for _ in "ab")
        matmul = jax.jit(lambda x, y: jax.lax.dot(x, y, preferred_element_type=jnp.int32))
        call = "jax.jit(jax.lax.dot(x, y, preferred_element_type=int32))"
    else:
        a, b = (jnp.asarray(rng.standard_normal((n, n)), dtype=DTYPES[dtype]) for _ in "ab")
        matmul = jax.jit(lambda x, y: jnp.matmul(x, y, precision=jax.lax.Precision.HIGHEST))
        call = "jax.jit(jnp.matmul(x, y, precision=HIGHEST))"
    a, b = jax.device_put(a), jax.device_put(b)
    timing = time_calls(lambda: matmul(a, b), lambda out: out.block_until_ready(), 0, trials)
    return timing.gemm_record(call)
