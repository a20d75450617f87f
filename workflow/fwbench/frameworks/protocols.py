"""What a framework package provides: the interfaces of `frameworks/<framework>/<part>.py`.

Every framework package has the same modules: `infer.py` (an InferenceAdapter building
Runners), `train.py` (a TrainingAdapter building Trainers), `hardware.py` (a HardwareProbe),
`models.py` (the networks the other two build), `profiling.py` (its profiler's trace read for
the attribution pass; infer.py's `profile`), and `export.py` (an ExportAdapter) where the
framework has export modes. Only those modules import the framework;
the rest of fwbench reaches them through `frameworks.load` and uses nothing but these
interfaces (and each package's FrameworkInfo), so it never branches on the framework's name.
The inference Runners share `frameworks.base.BaseRunner`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from fwbench.frameworks.info import FLOAT32
from fwbench.frameworks.kernel_precision import KernelPrecision
from fwbench.frameworks.trace import Trace
from fwbench.model.resnet import ResNetSpec
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights
from fwbench.precisions import check_training_precision


@dataclass
class CompileInfo:
    """Whether the callable really runs compiled, and how the framework says so."""

    compiled: bool
    how: str
    graph_count: int = 0
    graph_breaks: int = 0
    fallbacks: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    # Ops the compiler left to the framework's own eager kernels inside a compiled graph
    # (beyond the GEMM/convolution libraries both paths call): "" when there are none. A
    # compiled cell with any is `partially_compiled`: its hot path may be the eager one.
    eager_ops: str = ""


# ---- inference -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NullCall:
    """A framework's dispatch floor: `call` runs one elementwise op on a 1-element tensor,
    `sync` waits for it, and `context` (the framework's context, as a Runner's timing_context)
    is entered once around all timed calls, not inside each."""

    call: Callable[[], Any]
    sync: Callable[[Any], None]
    context: Callable[[], AbstractContextManager] = contextlib.nullcontext


@runtime_checkable
class Runner(Protocol):
    """One model in one mode on one device, ready to be timed."""

    def prepare(self, x: np.ndarray) -> Any:
        """Move/convert a neutral-layout input to the device and the framework's layout."""

    def __call__(self, prepared: Any) -> Any:
        """One forward pass; may return before the device is done. Enters timing_context()
        itself: `with runner.timing_context(): runner.call_in_context(prepared)`."""

    def timing_context(self) -> AbstractContextManager:
        """The framework state a call runs in (inference mode, device scope): the harness
        enters it once around all timed calls."""

    def call_in_context(self, prepared: Any) -> Any:
        """One forward pass, inside timing_context(): what the harness times."""

    def sync(self, output: Any) -> None:
        """Block until `output` is computed (CUDA sync, block_until_ready, materialize)."""

    def to_numpy(self, output: Any) -> np.ndarray:
        """The output as a float32 numpy array, whatever precision it was computed in."""

    def compile_info(self) -> CompileInfo:
        """Valid after the first call."""

    def peak_device_memory_bytes(self) -> int | None:
        """The framework allocator's peak on an accelerator; None on CPU."""

    def counter_flops(self, prepared: Any) -> tuple[float | None, str]:
        """The framework's own FLOP count for one call, or None and why not."""

    def launch_floor(self) -> NullCall | None:
        """The mode's own cost of one dispatch or launch, as a call to time: an identity
        through the same compiler for a compiled mode; None where it is the framework's null
        call (fwbench.measure.attribution)."""

    def own_trace(self, trace: Trace) -> Trace:
        """A profile of this runner's calls as the mode must be read (what a launch is, which
        kernels the profiler cannot see), from the adapter's `profile`."""

    def kernel_precision(self, prepared: Any) -> KernelPrecision | None:
        """What a low-precision cell's work computed in, after its timed samples: a profiler's
        kernel dtypes or the compiled program's (fwbench.frameworks.kernel_precision); None
        where the adapter cannot see it."""


@runtime_checkable
class InferenceAdapter(Protocol):
    """The module `frameworks/<framework>/infer.py`."""

    COUNTER_SCOPE: str  # what counter_flops counts: "matmul" (GEMMs, convs) or "all" ops

    def set_threads(self, threads: int) -> dict[str, Any]:
        """Apply the framework's own thread API; returns what it set, for provenance."""

    def build(
        self,
        spec: ArchSpec,
        weights: Weights | None,
        mode: str,
        device: str,
        options: dict[str, Any] | None = None,
        artifact: str | None = None,
        precision: str = FLOAT32,
    ) -> Runner:
        """`options`: the compiler's options for a compiled mode (torch.compile's); an
        adapter whose modes take none raises on any. `artifact`: the file an export mode's
        runner loads (required there, refused elsewhere), exported in `precision`.
        `precision`: what the model computes in (frameworks.mode_precisions; another raises
        naming it, before anything is built): its weights and activations in that dtype, as
        the framework's users cast a model; inputs still arrive as float32 (the runner casts
        them) and to_numpy returns float32."""

    def null_call(self, device: str) -> NullCall:
        """The framework's dispatch floor on `device`, timed beside every cell as its null-call
        baseline."""

    def profile(self, run: Callable[[], Any], calls: int) -> Trace:
        """The framework's own profiler around `run` (which makes `calls` calls), its events
        classified into dispatches and kernels (fwbench.frameworks.trace)."""


# ---- export -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the artifact file, and how it was made (exporter, its settings,
    what is dynamic), for the artifact's manifest."""

    file: str
    how: str
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ExportAdapter(Protocol):
    """The module `frameworks/<framework>/export.py`, in the packages with export modes. The
    artifact holds the weights and takes any batch size (a dynamic batch dimension, as models
    are shipped); the cell of an export mode loads it through the framework's `build(...,
    artifact=)`."""

    def export(
        self,
        spec: ArchSpec,
        weights: Weights,
        mode: str,
        device: str,
        stem: str,
        precision: str = FLOAT32,
        calibration: list[np.ndarray] | None = None,
    ) -> Exported:
        """Export the model for `mode` on `device` to `stem` + the format's suffix, made from
        the model in `precision` (frameworks.mode_precisions; another raises naming it): the
        artifact takes and computes in that dtype. `details` records the precision.
        `calibration`: a static quantization's calibration batches (model.weights.
        make_calibration, neutral layout), given where the mode's converter quantizes
        statically (LiteRT's full-integer int8_static); no other exporter reads it."""


# ---- training ------------------------------------------------------------------------------


# A trained model's logits function in some precision and what making it recorded.
Predictor = tuple[Callable[[np.ndarray], np.ndarray], dict[str, Any]]


@runtime_checkable
class Trainer(Protocol):
    """One model, its optimizer and schedule, in one mode on one device."""

    def train_epoch(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """One training step per (images, labels) batch (images in INPUT_LAYOUT); returns each
        step's loss after waiting for the device to finish the epoch."""

    def end_epoch(self) -> None:
        """Advance the learning-rate schedule by one epoch where the framework does it so."""

    def learning_rate(self) -> float:
        """The rate the next step uses, read from the framework's own state."""

    def predict(self, images: np.ndarray) -> np.ndarray:
        """Logits for one batch with batch norm in eval mode (running statistics)."""

    def state(self) -> Weights:
        """Every weight and running statistic, in the neutral names and layouts."""

    def predict_in(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        """The trained model in `precision` as the framework's cells run it (bfloat16: weights
        and activations cast; int8_static: its static quantization, calibrated on
        `calibration`, batches in INPUT_LAYOUT): its logits function and what was done to
        make it (a quantization's settings and time); raises NotImplementedError naming what
        the framework does not run."""

    def onnx_export(self, path: str, example: np.ndarray) -> Exported:
        """The trained model, float32 in inference mode, as an ONNX file at `path` the way the
        framework's onnxrt cells export theirs (`example`: a batch in INPUT_LAYOUT, the batch
        dynamic); raises NotImplementedError where the framework has no onnxrt mode."""

    def compile_info(self) -> CompileInfo:
        """Valid after the first epoch."""

    def peak_device_memory_bytes(self) -> int | None:
        """The framework allocator's peak on an accelerator; None on CPU."""


@dataclass(frozen=True)
class TrainOptions:
    """The keyword arguments of every TrainingAdapter.build: how one run trains, apart from
    the model, its weights and the optimizer. A missing or unknown one raises TypeError."""

    steps_per_epoch: int  # optimizer steps per epoch, for schedules that count steps
    mode: str
    device: str
    threads: int | None = None  # intra-op threads, for frameworks that set them at build
    allow_tf32: bool = False  # float32 matmuls and convolutions may run in TF32 on a GPU
    # "bfloat16": mixed precision (fwbench.training.config.MIXED_BFLOAT16): the convolutions
    # and the head's matmul take bfloat16 operands; weights, statistics and updates stay float32
    precision: str = "float32"

    def __post_init__(self) -> None:
        check_training_precision(self.precision)


@runtime_checkable
class TrainingAdapter(Protocol):
    """The module `frameworks/<framework>/train.py`."""

    INPUT_LAYOUT: str  # "NCHW" or "NHWC": the image layout train_epoch and predict take
    BFLOAT16_POLICY: str  # how a "bfloat16" run computes, in the framework's terms (recorded)

    def build(self, spec: ResNetSpec, weights: Weights, optimizer: Any, **options: Any) -> Trainer:
        """A Trainer from the neutral `weights`; `optimizer` is a model.optimizer.SGDConfig and
        `options` are the fields of TrainOptions."""


# ---- hardware ------------------------------------------------------------------------------


@runtime_checkable
class HardwareProbe(Protocol):
    """The module `frameworks/<framework>/hardware.py` (or a runtime's
    `runtimes/<runtime>_hardware.py`, frameworks.load_hardware), imported by a hardware worker
    process after it applied the thread environment (fwbench.hardware.workers)."""

    def setup(self, threads: int) -> dict[str, Any]:
        """Apply the framework's thread count and full float32 precision (no TF32); returns
        the settings and the framework's version, for provenance."""

    def gemm(self, n: int, trials: int, dtype: str, device: str) -> dict[str, Any]:
        """`trials` timed n×n @ n×n products in `dtype` on `device`, after an untimed first
        call: `Timing.gemm_record` (fwbench.host.harness)."""


@runtime_checkable
class StreamProbe(HardwareProbe, Protocol):
    """A HardwareProbe that also runs the STREAM kernels and the working-set sweep on CUDA,
    and names the GPU (the frameworks whose FrameworkInfo says `stream_probe`)."""

    def stream_kernels(
        self, elements: int, trials: int, device: str, dtype: str = "float64"
    ) -> dict[str, Any]:
        """STREAM copy/scale/add/triad over `elements`-long arrays (fwbench.memory.stream)."""

    def cuda_identity(self) -> dict[str, Any]:
        """The GPU the job runs on, as the framework reports it."""

    def cache_sweep(
        self, sizes: list[int], min_seconds: float, trials: int, device: str
    ) -> dict[str, Any]:
        """The working-set sweep on `device` over `sizes` bytes (fwbench.memory.levels)."""
