"""jax.profiler's trace read for the attribution pass (fwbench.measure.attribution): the infer
adapter's `profile`, the reader of its XSpace (jax's own `ProfileData`), and the rules that
name its dispatches and kernels."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import jax
from jax.profiler import ProfileData

from fwbench.frameworks.trace import KernelRule, Trace, XSpaceRules
from fwbench.frameworks.xspace import Event, Line, Plane, xplane_file

# jax.profiler's XSpace: each op (eager) or jitted call dispatches through a PjitFunction on
# the Python thread; XLA's thunks (its kernels: fusions, GEMMs) run on its client's threads, or
# inline on the Python thread inside the executable's ExecuteHelper, between markers that are
# not kernels.
_RULES = XSpaceRules(
    dispatch=r"^PjitFunction\(",
    kernels=(
        KernelRule(lines=r"^(?!python$)"),
        KernelRule(lines=r"^python$", inside=r"^CommonPjRtLoadedExecutable::ExecuteHelper"),
    ),
    not_kernel=r"^(end: |ThunkExecutor|ThreadpoolListener|CommonPjRt|Handle input|"
    r"AllocateOutputBuffers|Wait for|PythonRefManager|ParseArguments)",
)


def xspace_planes(data: bytes) -> list[Plane]:
    """The planes of a serialized XSpace, read by jax's own `ProfileData`: its times are whole
    nanoseconds (the line's start plus the event's offset, offset and duration truncated from
    picoseconds), which is what the host tracer records anyway."""
    return [
        Plane(
            plane.name,
            [
                Line(line.name, [Event(e.name, e.start_ns, e.duration_ns) for e in line.events])
                for line in plane.lines
            ],
        )
        for plane in ProfileData.from_serialized_xspace(data).planes
    ]


def read_xspace(directory: str | os.PathLike) -> list[Plane]:
    """The planes of the one XSpace a profiler wrote under `directory`."""
    return xspace_planes(xplane_file(directory).read_bytes())


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """jax.profiler around `run`, without its Python tracer (it records every Python call)."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="fwbench-jax-profile-") as directory:
        with jax.profiler.trace(directory, profiler_options=options):
            run()
        return _RULES.trace(read_xspace(directory), calls)
