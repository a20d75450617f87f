"""The framework adapter interface and the registry of adapters.

Each framework lives in its own modules (`<framework>_infer.py`, `<framework>_hardware.py`,
`<framework>_train.py`) and only those import it. This module imports no framework: it names
the modules and loads the one a job needs, so a JAX job never imports torch or tensorflow.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from fwbench.specs import ArchSpec
from fwbench.weights import Weights

MODES: dict[str, tuple[str, ...]] = {
    "torch": ("eager", "compiled"),
    "jax": ("eager", "jit"),
    "tensorflow": ("eager", "function", "xla"),
}

# The distribution whose installed version names a framework's results, then the others whose
# versions are recorded with them (and rerun its cells when they change).
DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], ...]] = {
    "torch": (("torch",), ()),
    "jax": (("jax",), ("jaxlib",)),
    "tensorflow": (("tensorflow-cpu", "tensorflow"), ("keras",)),
}


@dataclass
class CompileInfo:
    """Whether the callable really runs compiled, and how the framework says so."""

    compiled: bool
    how: str
    graph_count: int = 0
    graph_breaks: int = 0
    fallbacks: int = 0
    details: dict[str, Any] = field(default_factory=dict)


class Runner(Protocol):
    """One model in one mode on one device, ready to be timed."""

    def prepare(self, x: np.ndarray) -> Any:
        """Move/convert a neutral-layout input to the device and the framework's layout."""

    def __call__(self, prepared: Any) -> Any:
        """One forward pass; may return before the device is done."""

    def sync(self, output: Any) -> None:
        """Block until `output` is computed (CUDA sync, block_until_ready, materialize)."""

    def to_numpy(self, output: Any) -> np.ndarray: ...

    def compile_info(self) -> CompileInfo:
        """Valid after the first call."""

    def peak_device_memory_bytes(self) -> int | None:
        """The framework allocator's peak on an accelerator; None on CPU."""

    def counter_flops(self, prepared: Any) -> tuple[float | None, str]:
        """The framework's own FLOP count for one call, or None and why not."""


class InferenceAdapter(Protocol):
    """The module `frameworks/<framework>_infer.py`."""

    COUNTER_SCOPE: str  # what counter_flops counts: "matmul" (GEMMs, convs) or "all" ops

    def set_threads(self, threads: int) -> dict[str, Any]:
        """Apply the framework's own thread API; returns what it set, for provenance."""

    def build(self, spec: ArchSpec, weights: Weights, mode: str, device: str) -> Runner: ...


def check_framework_mode(framework: str, mode: str) -> None:
    if framework not in MODES:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(MODES)}")
    if mode not in MODES[framework]:
        known = ", ".join(MODES[framework])
        raise ValueError(f"mode {mode!r} does not exist for {framework}; its modes: {known}")


def load(framework: str, part: str = "infer") -> ModuleType:
    """Import `fwbench.frameworks.<framework>_<part>` (this imports the framework itself)."""
    if framework not in MODES:
        raise ValueError(f"unknown framework {framework!r}; known: {', '.join(MODES)}")
    return importlib.import_module(f"fwbench.frameworks.{framework}_{part}")


def pre_import_env(framework: str, device: str) -> dict[str, str]:
    """Environment a framework must see before its import for `device` (set by the job)."""
    env: dict[str, str] = {}
    if framework == "jax":
        env["JAX_PLATFORMS"] = "cuda" if device == "cuda" else "cpu"
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    elif framework == "tensorflow":
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"
        env["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
        if device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = ""
    return env
