"""What every framework's Runner does alike, once: the checks of mode, precision, compile
options, device and input, with one message each, and the call protocol around the timed call.

An adapter's Runner subclasses `BaseRunner` and supplies only what differs: its framework's
name and version, whether it sees a CUDA device, how an input reaches the device, the call,
the sync and what it reports (frameworks.protocols.Runner).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from fwbench.frameworks import (
    FLOAT32,
    check_compile_options,
    check_framework_mode,
    check_precision,
    is_export_mode,
)
from fwbench.frameworks.kernel_precision import KernelPrecision
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.trace import Trace
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights

DEVICES = ("cpu", "cuda")


def check_device(framework: str, version: str, device: str, cuda_available: Callable[[], bool]):
    """Raise ValueError for a device no adapter knows, RuntimeError for 'cuda' where the
    framework sees no CUDA device; both name the device."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}; known: {', '.join(DEVICES)}")
    if device == "cuda" and not cuda_available():
        raise RuntimeError(f"device 'cuda' requested but {framework} {version} sees no CUDA device")


# What an export mode's runner says of the framework's FLOP counter.
EXPORTED_COUNTER_NOTE = (
    "an exported artifact has no counter of its own: the framework's other modes count the "
    "same function"
)


def check_artifact(framework: str, mode: str, artifact: str | None) -> str | None:
    """An export mode runs an existing artifact file; every other mode refuses one."""
    if not is_export_mode(framework, mode):
        if artifact:
            raise ValueError(f"{framework}/{mode} is no export mode and takes no artifact")
        return None
    if not artifact or not Path(artifact).is_file():
        raise FileNotFoundError(f"{framework}/{mode} needs its exported artifact, got {artifact!r}")
    return str(artifact)


class BaseRunner(ABC):
    """One model in one mode and precision on one device. `build` checks the mode, the
    precision, the compile options and the device before the subclass builds anything;
    `prepare` checks the input (float32, whatever the precision: to_device casts it)."""

    FRAMEWORK: ClassVar[str]

    def __init__(
        self,
        spec: ArchSpec,
        weights: Weights | None,
        mode: str,
        device: str,
        options: dict[str, Any] | None = None,
        artifact: str | None = None,
        precision: str = FLOAT32,
    ) -> None:
        check_framework_mode(self.FRAMEWORK, mode)
        self.precision = check_precision(self.FRAMEWORK, mode, precision)
        self.options = check_compile_options(self.FRAMEWORK, mode, options)
        check_device(self.FRAMEWORK, self.version(), device, self.cuda_available)
        self.artifact = check_artifact(self.FRAMEWORK, mode, artifact)
        if weights is None and not self.artifact:
            raise ValueError(f"{self.FRAMEWORK}/{mode} builds its model from weights: none given")
        self.spec, self.mode, self.device = spec, mode, device
        self._setup(weights)

    @classmethod
    def build(
        cls,
        spec: ArchSpec,
        weights: Weights | None,
        mode: str,
        device: str,
        options: dict[str, Any] | None = None,
        artifact: str | None = None,
        precision: str = FLOAT32,
    ) -> BaseRunner:
        """A Runner for `spec` holding `weights` in `mode` on `device`; `options`: the compile
        options of a compiled mode (frameworks.compile_option_names), refused elsewhere;
        `artifact`: the exported file an export mode runs (its weights are the artifact's, an
        export in the same precision); `precision`: what the model computes in, one of
        frameworks.mode_precisions."""
        return cls(spec, weights, mode, device, options, artifact, precision)

    # ---- what every adapter supplies ---------------------------------------------------------

    @abstractmethod
    def _setup(self, weights: Weights | None) -> None:
        """Build the model from `weights` for self.spec, self.mode, self.precision and
        self.device, after the checks passed; an export mode loads self.artifact instead (its
        weights: None)."""

    @staticmethod
    @abstractmethod
    def version() -> str:
        """The framework's version, for messages."""

    @staticmethod
    @abstractmethod
    def cuda_available() -> bool:
        """Whether the framework sees a CUDA device in this process."""

    @abstractmethod
    def to_device(self, x: np.ndarray) -> Any:
        """A checked float32 neutral-layout input in the framework's layout on the device, in
        self.precision, synced."""

    @abstractmethod
    def call_in_context(self, prepared: Any) -> Any:
        """One forward pass, inside timing_context(): what the harness times."""

    @abstractmethod
    def sync(self, output: Any) -> None:
        """Block until `output` is computed."""

    @abstractmethod
    def compile_info(self) -> CompileInfo:
        """Valid after the first call."""

    @abstractmethod
    def cuda_peak_memory_bytes(self) -> int | None:
        """The framework allocator's peak on the CUDA device."""

    @abstractmethod
    def counter_flops(self, prepared: Any) -> tuple[float | None, str]:
        """The framework's own FLOP count for one call, or None and why not."""

    # ---- alike for every adapter -------------------------------------------------------------

    def prepare(self, x: np.ndarray) -> Any:
        """Check a neutral-layout input (float32, the spec's shape) and move it to the device."""
        x = np.asarray(x)
        expected = self.spec.input_shape(x.shape[0] if x.ndim else 0)
        if x.shape != expected or x.dtype != np.float32:
            raise ValueError(
                f"{self.spec.name} input must be float32 of shape {expected}, "
                f"got {x.dtype} of shape {x.shape}"
            )
        return self.to_device(x)

    def __call__(self, prepared: Any) -> Any:
        with self.timing_context():
            return self.call_in_context(prepared)

    def timing_context(self) -> AbstractContextManager:
        """The framework state a call runs in; none unless the adapter needs one."""
        return contextlib.nullcontext()

    def to_numpy(self, output: Any) -> np.ndarray:
        """The output as a float32 numpy array, whatever the precision it was computed in."""
        return np.asarray(output, dtype=np.float32)

    def peak_device_memory_bytes(self) -> int | None:
        """The framework allocator's peak on an accelerator; None on CPU."""
        return self.cuda_peak_memory_bytes() if self.device == "cuda" else None

    # What the adapter's profile classification counts, for the cell's `attribution` text.
    TRACE_NOTE: ClassVar[str] = ""

    def launch_floor(self) -> NullCall | None:
        """The mode's own cost of one dispatch or launch (frameworks.protocols.Runner); None:
        the framework's null call, already timed beside every cell."""
        return None

    def own_trace(self, trace: Trace) -> Trace:
        """The profile as the adapter's classification read it, with TRACE_NOTE; a mode that
        needs more overrides this."""
        return replace(trace, note=self.TRACE_NOTE) if self.TRACE_NOTE else trace

    def kernel_precision(self, prepared: Any) -> KernelPrecision | None:
        """In a cell of a precision other than float32, after its timed samples: what the work
        computed in (fwbench.frameworks.kernel_precision); None where the adapter has no way
        to see it."""
        return None
