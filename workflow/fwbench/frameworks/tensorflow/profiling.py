"""TensorFlow's profiler trace read for the attribution pass (fwbench.measure.attribution): the
infer adapter's `profile`, and the rules that name its dispatches and kernels."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

from fwbench.frameworks.tensorflow.models import tf
from fwbench.frameworks.trace import KernelRule, Trace, XSpaceRules
from fwbench.frameworks.xspace import read_xspace

# TensorFlow's XSpace: each op (eager) or function call dispatches through TFE_Py_*Execute on
# the Python thread. Kernels: the graph executor's op kernels ("node:Op", on its threads),
# XLA's thunks inside CpuExecutable::ExecuteAsyncOnStream, and an eager op's kernel run
# (KernelAndDeviceFunc::Run under the EagerLocalExecute of an op, not of a function).
_RULES = XSpaceRules(
    dispatch=r"^TFE_Py_(FastPathExecute_C|ExecuteCancelable|Execute)$",
    kernels=(
        KernelRule(name=r"^(?!__)[^:\s]+:[A-Za-z_]\w*$"),
        KernelRule(inside=r"^CpuExecutable::ExecuteAsyncOnStream$"),
        KernelRule(
            name=r"^KernelAndDeviceFunc::Run$",
            inside=r"^EagerLocalExecute: (?!__inference|__forward)",
        ),
    ),
    not_kernel=r"^(end: |ThreadpoolListener|ExecutorState|ExecutorDoneCallback|BlockUntilReady)",
)


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """TensorFlow's profiler around `run`, without its Python tracer."""
    options = tf.profiler.experimental.ProfilerOptions(
        host_tracer_level=2, python_tracer_level=0, device_tracer_level=1
    )
    with tempfile.TemporaryDirectory(prefix="fwbench-tf-profile-") as directory:
        tf.profiler.experimental.start(directory, options=options)
        try:
            run()
        finally:
            tf.profiler.experimental.stop()
        return _RULES.trace(read_xspace(directory), calls)
