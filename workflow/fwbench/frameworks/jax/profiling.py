"""jax.profiler's trace read for the attribution pass (fwbench.measure.attribution): the infer
adapter's `profile`, and the rules that name its dispatches and kernels."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any

import jax

from fwbench.frameworks.trace import KernelRule, Trace, XSpaceRules
from fwbench.frameworks.xspace import read_xspace

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


def profile(run: Callable[[], Any], calls: int) -> Trace:
    """jax.profiler around `run`, without its Python tracer (it records every Python call)."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with tempfile.TemporaryDirectory(prefix="fwbench-jax-profile-") as directory:
        with jax.profiler.trace(directory, profiler_options=options):
            run()
        return _RULES.trace(read_xspace(directory), calls)
