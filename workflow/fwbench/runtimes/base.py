"""What every deployment runtime does alike: an adapter bound to one framework's artifacts,
the thread count it was given, and a runner around a session that takes and returns numpy
arrays on the host.

A runtime module supplies a RuntimeRunner subclass (load the artifact, the call, what the
runtime says of it), its null call and its profiler; `RuntimeAdapter` makes them a
frameworks.protocols.InferenceAdapter for the framework whose export wrote the artifact.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from fwbench.frameworks import FLOAT32, check_threads
from fwbench.frameworks.base import EXPORTED_COUNTER_NOTE, BaseRunner
from fwbench.frameworks.protocols import NullCall
from fwbench.frameworks.trace import Trace
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights
from fwbench.runtimes.layout import permutation


class RuntimeRunner(BaseRunner):
    """One artifact loaded in a runtime, on the cell's threads. `FRAMEWORK` is the framework
    whose export wrote it (so the mode checks are that framework's)."""

    RUNTIME: str

    def __init__(self, framework: str, threads: int, *args: Any) -> None:
        self.FRAMEWORK = framework  # type: ignore[misc]  # per instance: the artifact's
        self.threads = threads
        super().__init__(*args)

    @abstractmethod
    def input_shape(self) -> list[int | None]:
        """The artifact's input shape, None where a dimension is dynamic."""

    @abstractmethod
    def bind(self, x: np.ndarray) -> Any:
        """Whatever the runtime needs once per input (shapes, buffers, its cast from float32
        to self.precision): the prepared input."""

    def to_device(self, x: np.ndarray) -> Any:
        order = permutation(x.shape, self.input_shape())
        return self.bind(np.ascontiguousarray(x.transpose(order), dtype=np.float32))

    def sync(self, output: Any) -> None:
        """A runtime's call returns host arrays once it has finished: nothing to wait for."""

    def cuda_peak_memory_bytes(self) -> int | None:
        return None  # the runtimes report no allocator peak: the process's RSS stands

    def counter_flops(self, prepared: Any) -> tuple[float | None, str]:
        return None, EXPORTED_COUNTER_NOTE


class RuntimeAdapter:
    """A runtime's frameworks.protocols.InferenceAdapter for one framework's artifacts."""

    COUNTER_SCOPE = "matmul"  # unused: an artifact has no counter (EXPORTED_COUNTER_NOTE)

    def __init__(
        self,
        framework: str,
        runner: type[RuntimeRunner],
        thread_settings: Callable[[int], dict[str, Any]],
        null_call: Callable[[str, int], NullCall | None],
        profile: Callable[[Callable[[], Any], int], Trace],
    ) -> None:
        self.framework, self._runner = framework, runner
        self._thread_settings, self._null_call = thread_settings, null_call
        self.profile = profile  # the runtime's profiler (InferenceAdapter.profile)
        self.threads: int | None = None

    def set_threads(self, threads: int) -> dict[str, Any]:
        """Keep the cell's thread count for the sessions this adapter builds; returns the
        runtime's settings for them, for provenance."""
        check_threads(threads)
        self.threads = threads
        return self._thread_settings(threads)

    def _threads(self) -> int:
        if self.threads is None:
            raise RuntimeError(
                f"{self._runner.RUNTIME}: set_threads before build (never its default)"
            )
        return self.threads

    def build(
        self,
        spec: ArchSpec,
        weights: Weights | None,
        mode: str,
        device: str,
        options: dict[str, Any] | None = None,
        artifact: str | None = None,
        precision: str = FLOAT32,
    ) -> RuntimeRunner:
        return self._runner(
            self.framework,
            self._threads(),
            spec,
            weights,
            mode,
            device,
            options,
            artifact,
            precision,
        )

    def null_call(self, device: str) -> NullCall | None:
        """The runtime's floor: one run of a one-op model; None where it cannot build one."""
        return self._null_call(device, self._threads())
