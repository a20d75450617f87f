"""TensorFlow's part of the hardware stage: the GEMM peak.

Run inside `python -m fwbench.hardware.workers ...`, which sets the thread settings and the
pre-import environment before this module (and tensorflow) is imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fwbench.frameworks.tensorflow.models import tf
from fwbench.host.harness import time_calls

DTYPES = {
    "float32": tf.float32,
    "bfloat16": tf.bfloat16,
    "float16": tf.float16,
    "float64": tf.float64,
}


def setup(threads: int) -> dict[str, Any]:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    # fp32 means fp32: no TF32 on tensor cores.
    tf.config.experimental.enable_tensor_float_32_execution(False)
    return {
        "tensorflow": tf.__version__,
        "intra_op_threads": threads,
        "devices": [device.name for device in tf.config.list_logical_devices()],
        "tensor_float_32": False,
    }


def _sync(output: tf.Tensor) -> None:
    # Reading one element waits for the product (and copies 1 element, not n² of them).
    output[0, 0].numpy()


def gemm(n: int, trials: int, dtype: str, device: str) -> dict[str, Any]:
    """Best of `trials` n×n @ n×n products in a tf.function (the first call traces, untimed)."""
    if dtype not in DTYPES:  # MatMul's kernels: no 8-bit integer type
        raise ValueError(f"TensorFlow has no {dtype} GEMM (tf.linalg.matmul has no kernel for it)")
    placement = "/GPU:0" if device == "cuda" else "/CPU:0"
    if device == "cuda" and not tf.config.list_logical_devices("GPU"):
        raise RuntimeError("device 'cuda' requested but TensorFlow sees no GPU")
    rng = np.random.default_rng(0)
    with tf.device(placement):
        a = tf.constant(rng.standard_normal((n, n)), dtype=DTYPES[dtype])
        b = tf.constant(rng.standard_normal((n, n)), dtype=DTYPES[dtype])
        matmul = tf.function(tf.linalg.matmul)
        timing = time_calls(lambda: matmul(a, b), _sync, 0, trials)
    return timing.gemm_record(f"tf.function(tf.linalg.matmul) on {placement}")
