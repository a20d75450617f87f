"""TensorFlow's profiler trace read for the attribution pass (fwbench.measure.attribution): the
infer adapter's `profile`, the reader of its XSpace (TensorFlow's own `xplane_pb2`), and the
rules that name its dispatches and kernels."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from fwbench.frameworks.tensorflow.models import tf
from fwbench.frameworks.trace import KernelRule, Trace, XSpaceRules
from fwbench.frameworks.xspace import Event, Line, Plane, xplane_file

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


def xspace_planes(data: bytes) -> list[Plane]:
    """The planes of a serialized XSpace, parsed by TensorFlow's own `xplane_pb2`: an event
    starts at its line's `timestamp_ns` plus its `offset_ps` and lasts its `duration_ps`, named
    by its plane's `event_metadata` (`<metadata id>` where the plane has no such entry)."""
    # Imported here, after models imported TensorFlow with the packages it must not load blocked.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace.FromString(data)
    out = []
    for plane in space.planes:
        names = {key: metadata.name for key, metadata in plane.event_metadata.items()}
        out.append(Plane(plane.name, [_line(line, names) for line in plane.lines]))
    return out


def _line(line: Any, names: dict[int, str]) -> Line:
    """One XLine's events, their times in (fractional) nanoseconds."""
    start_ns = line.timestamp_ns
    return Line(
        line.name,
        [
            Event(
                names.get(e.metadata_id, f"<metadata {e.metadata_id}>"),
                start_ns + e.offset_ps * 1e-3,
                e.duration_ps * 1e-3,
            )
            for e in line.events
        ],
    )


def read_xspace(directory: str | os.PathLike) -> list[Plane]:
    """The planes of the one XSpace a profiler wrote under `directory`."""
    return xspace_planes(xplane_file(directory).read_bytes())


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
