"""The torch inference adapter: `build(spec, weights, mode, device) -> Runner`.

Modes: `eager` runs the nn.Module in eval under torch.inference_mode(); `compiled` and the
`compiled_<name>` variants run torch.compile(module, **options) (inductor backend; options:
mode, fullgraph, dynamic, and inductor's freezing), also under torch.inference_mode(); `aoti`
loads the AOTInductor package its export job wrote (frameworks.torch.export) and calls it under
torch.inference_mode().

Precision bfloat16: the module cast to torch.bfloat16 (models.build_module) and each input cast
to it in `prepare`; torch.compile compiles the bf16 module, and aoti loads a package exported
from it (frameworks.torch.export). int8_static (aoti): the package of the PT2E-quantized module
(frameworks.torch.quantize), fed float32; compiled's int8_static: the same quantization done in
the cell, compiled by torch.compile with inductor's freezing (torch's x86 Inductor quantization
tutorial); whether its integer kernels ran is read from oneDNN's
verbose log (profiling.onednn_precision). Outputs come back as float32 numpy arrays.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch

from fwbench.frameworks import FLOAT32, INT8_STATIC, check_threads
from fwbench.frameworks.base import EXPORTED_COUNTER_NOTE, BaseRunner, check_device
from fwbench.frameworks.kernel_precision import KERNEL_PRECISION_CALLS, KernelPrecision
from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.torch import profiling, quantize
from fwbench.frameworks.torch.compile_info import (
    EagerOpRecorder,
    Snapshot,
    compile_info_since,
    counter_snapshot,
    install_recorder,
)
from fwbench.frameworks.torch.models import DTYPES, build_module
from fwbench.frameworks.trace import Trace
from fwbench.model.precision_bound import Roundings
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights
from fwbench.precisions import QUANTIZED, arithmetic_of

# What FlopCounterMode counts: matmuls and convolutions, no elementwise ops.
COUNTER_SCOPE = "matmul"


def set_threads(threads: int) -> dict[str, Any]:
    """Apply torch's own thread settings; returns what torch reports, for provenance.

    The inter-op pool size can be set only once per process and only before any inter-op
    parallel work; a second call keeps the first value and says so.
    """
    check_threads(threads)
    torch.set_num_threads(threads)
    interop_note = "set to 1"
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError as error:
        interop_note = f"not set (already fixed): {error}"
    return {
        "torch.num_threads": torch.get_num_threads(),
        "torch.num_interop_threads": torch.get_num_interop_threads(),
        "torch.interop": interop_note,
    }


def _strict_float32_on_cuda() -> dict[str, bool]:
    """TF32 would change the function (about 1e-3 relative error): keep float32 matmuls and
    convolutions in full precision, as on the CPU."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return {"cuda.matmul.allow_tf32": False, "cudnn.allow_tf32": False}


class TorchRunner(BaseRunner):
    """One torch model in one mode on one device (a frameworks.protocols.Runner)."""

    FRAMEWORK = "torch"
    TRACE_NOTE = "aten ops under each top-level op; one dispatch per top-level op"

    def _setup(self, weights: Weights | None) -> None:
        spec, mode, device = self.spec, self.mode, self.device
        self._device = torch.device(device)
        self._dtype = DTYPES[self.precision]
        # Numerics settings that change the function (TF32): recorded in compile_info details.
        self.settings: dict[str, Any] = {
            "float32_matmul_precision": torch.get_float32_matmul_precision()
        }
        if device == "cuda":
            self.settings |= _strict_float32_on_cuda()
            # Reset before the weights move so that the peak includes them.
            torch.cuda.reset_peak_memory_stats(self._device)
        self._counters_at_build: Snapshot = {}
        self._recorder: EagerOpRecorder | None = None
        self._weights = weights  # an int8_static check redoes its quantization from them
        if self.artifact:  # aoti: the package holds the compiled code and the weights
            from torch._inductor import aoti_load_package

            self.module = None
            self._forward = aoti_load_package(self.artifact)
            return
        if self.precision == INT8_STATIC:  # compiled: PT2E here, inductor lowers it
            self.module, self.settings["quantization"] = _pt2e_of(spec, weights, self._device)
        else:
            self.module = build_module(spec, weights, self.precision).to(self._device)
        self._forward = self.module
        if mode != "eager":
            self._forward = self._compile()

    @staticmethod
    def version() -> str:
        return torch.__version__

    @staticmethod
    def cuda_available() -> bool:
        return torch.cuda.is_available()

    def _compile(self) -> Any:
        import torch._dynamo

        # Without allow_rnn dynamo refuses nn.RNN/nn.LSTM and the whole forward silently runs
        # eager (0 graphs); with it, the recurrence is traced into one graph.
        torch._dynamo.config.allow_rnn = True
        # A fresh dynamo state: a second model of the same class could otherwise reuse the
        # previous model's compiled code, and this runner's counters would show no compilation.
        torch._dynamo.reset()
        self._counters_at_build = counter_snapshot()
        self._recorder = install_recorder()
        import torch._inductor.config

        # Freezing is an inductor setting, not a torch.compile argument; each cell is its own
        # process, so setting it process-wide changes only this runner.
        # A PT2E module's quantize/dequantize pairs become oneDNN's integer kernels only with
        # freezing (the x86 Inductor quantization tutorial): on for int8_static, recorded.
        quantized = self.precision == INT8_STATIC
        freezing = quantized or bool(self.options.get("freezing", False))
        torch._inductor.config.freezing = self.settings["inductor_freezing"] = freezing
        return torch.compile(self.module, **self._compile_arguments())

    def to_device(self, x: np.ndarray) -> torch.Tensor:
        prepared = torch.from_numpy(np.ascontiguousarray(x)).to(self._device, self._dtype)
        self.sync(prepared)
        return prepared

    def timing_context(self) -> torch.inference_mode:
        return torch.inference_mode()

    def call_in_context(self, prepared: torch.Tensor) -> torch.Tensor:
        return self._forward(prepared)

    def sync(self, output: torch.Tensor) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize(self._device)
        # On the CPU every torch op has finished when it returns: nothing to wait for.

    def to_numpy(self, output: torch.Tensor) -> np.ndarray:
        return output.detach().to("cpu", torch.float32).numpy()

    def compile_info(self) -> CompileInfo:
        """From dynamo's counters since build (compile_info_since); raises before the first
        compiled call."""
        if self.mode == "eager":
            return CompileInfo(
                compiled=False,
                how="eager nn.Module under torch.inference_mode",
                details={"settings": self.settings, "torch": torch.__version__},
            )
        if self.artifact:
            return CompileInfo(
                compiled=True,
                how="AOTInductor package loaded by torch._inductor.aoti_load_package, called "
                "under torch.inference_mode",
                graph_count=1,
                details={"settings": self.settings, "artifact": self.artifact},
            )
        return compile_info_since(
            self._counters_at_build,
            how=(
                f"torch.compile(module{_arguments(self._compile_arguments() | self.options)}), "
                "backend inductor, "
                "under torch.inference_mode; torch._dynamo.config.allow_rnn=True so "
                "nn.RNN/nn.LSTM are traced, not eager"
            ),
            details={"settings": self.settings},
            recorder=self._recorder,
        )

    def cuda_peak_memory_bytes(self) -> int | None:
        return int(torch.cuda.max_memory_allocated(self._device))

    def launch_floor(self) -> NullCall | None:
        """Eager and aoti: None, torch's null call (an AOTInductor identity would cost an
        export per cell; own_trace says so); compiled: torch.compile of a 1-element add with
        the cell's compile options, one guarded launch of a compiled graph."""
        if self.mode == "eager" or self.artifact:
            return None
        add_one = torch.compile(lambda v: v + 1.0, **self._compile_arguments())
        x = torch.zeros(1, device=self._device)
        return NullCall(lambda: add_one(x), self.sync, torch.inference_mode)

    def _compile_arguments(self) -> dict[str, Any]:
        """torch.compile's arguments: the compile options but freezing, an inductor setting;
        dynamic=False unless they say otherwise: every shape specialized, as a cell's one
        shape is. Without it, a process that calls a second batch (a rounds worker serving
        every batch) gets dynamo's automatic dynamic shapes: a dynamic-shape graph compiled
        cold (70-90 s for the rnn on the 2-core Zen 4 VM) and timed in place of the static
        one the cell timed."""
        return {"dynamic": False} | {k: v for k, v in self.options.items() if k != "freezing"}

    def own_trace(self, trace: Trace) -> Trace:
        if self.artifact:
            return replace(
                trace,
                dispatches=trace.calls,
                kernels=(),
                spans=(),
                kernels_visible=False,
                note="AOTInductor runs its kernels without torch's dispatcher: torch.profiler "
                "records only its allocations, so kernel time is not seen (in the residual); "
                "one launch per call, at torch's eager null call (the floor's stand-in)",
            )
        if self.mode != "eager":
            return replace(
                trace,
                note="inductor's generated C++ kernels do not reach torch.profiler (their time "
                "is in the residual); its extern kernels (GEMMs, convolutions) do; a launch is "
                "one compiled region",
            )
        return super().own_trace(trace)

    def kernel_precision(self, prepared: torch.Tensor) -> KernelPrecision:
        """torch.profiler's kernel dtypes over KERNEL_PRECISION_CALLS calls (profiling.
        kernel_precision); compiled and AOTI: what their extern kernels (GEMMs, convolutions)
        and any eager ops computed in, their generated C++ kernels unseen."""

        def run(calls: int) -> None:
            with self.timing_context():
                for _ in range(calls):
                    self.sync(self.call_in_context(prepared))

        run(1)  # unprofiled: a (re)compilation's tracing is no kernel of the call's
        if self.precision in QUANTIZED:  # oneDNN's integer kernels, in its own log
            return profiling.onednn_precision(
                lambda: run(KERNEL_PRECISION_CALLS), arithmetic_of(self.precision)
            )
        found = profiling.kernel_precision(lambda: run(KERNEL_PRECISION_CALLS), self.precision)
        if self.mode == "eager":
            return found
        unseen = (
            "AOTInductor runs its generated kernels without torch's dispatcher: torch.profiler"
            " sees only the aten ops it calls out to (a GEMM where the CPU has no template of"
            " its own for the dtype), not counted otherwise"
            if self.artifact
            else "inductor's generated C++ kernels carry no dtype in torch.profiler: not counted"
        )
        return replace(found, notes=(*found.notes, unseen))

    def quantization_roundings(self, prepared: torch.Tensor) -> Roundings:
        """Per rounding to an integer at this input (model.precision_bound.quantization_bound,
        and the stored activations' values at a limit),
        from the converted module run (frameworks.torch.quantize): a compiled cell's own; an
        AOTInductor package's constants cannot be read back, so for aoti the PT2E quantization
        is redone from the same weights and calibration set (its ranges equal up to float
        summation order)."""
        if self.precision != INT8_STATIC or self._weights is None:
            raise RuntimeError(
                f"no quantization to bound in a {self.precision} cell built without weights"
            )
        if self.artifact:
            converted, _ = _pt2e_of(self.spec, self._weights, torch.device("cpu"))
        else:  # compiled: the converted module the cell compiled
            converted = self.module
        return quantize.quantization_roundings(converted, prepared.cpu())

    def counter_flops(self, prepared: torch.Tensor) -> tuple[float | None, str]:
        """FlopCounterMode over one eager call (the counter cannot see into compiled kernels).

        The counter knows matmul, convolution and attention formulas only; a fused op without
        one (aten.lstm, the encoder-layer fast path) counts 0. Every module that owns a weight
        matrix does matmuls, so one that counted 0 means the total is short: return None.
        """
        if self.module is None:
            return None, EXPORTED_COUNTER_NOTE
        from torch.utils.flop_counter import FlopCounterMode

        counter = FlopCounterMode(display=False)
        with torch.inference_mode(), counter:
            self.module(prepared)
        counts = counter.get_flop_counts()
        root = type(self.module).__name__
        missed = [
            f"{name} ({type(module).__name__})"
            for name, module in self.module.named_modules()
            if any(p.dim() >= 2 for p in module.parameters(recurse=False))
            and sum(counts.get(f"{root}.{name}" if name else root, {}).values()) == 0
        ]
        if missed:
            shown = ", ".join(missed[:2]) + (
                f" and {len(missed) - 2} more" if len(missed) > 2 else ""
            )
            return None, (
                f"torch FlopCounterMode counted 0 FLOPs in {len(missed)} module(s) with weight "
                f"matrices, run by a fused op without a FLOP formula: {shown}"
            )
        return float(counter.get_total_flops()), "torch FlopCounterMode, one eager call"


def _pt2e_of(
    spec: ArchSpec, weights: Weights | None, device: torch.device
) -> tuple[torch.fx.GraphModule, dict[str, Any]]:
    """The PT2E-quantized module (frameworks.torch.quantize.pt2e) of the float32 model from
    `weights`, calibrated on model.weights.make_calibration's set, as aoti's export job
    quantizes it: what a compiled int8_static cell compiles, and what a check redoes."""
    from fwbench.model.weights import calibration_settings, make_calibration

    module = build_module(spec, weights, FLOAT32).to(device)
    converted, details = quantize.pt2e(module, make_calibration(spec))
    return converted, details | {"calibration": calibration_settings()}


def _arguments(options: dict[str, Any]) -> str:
    return "".join(f", {key}={value!r}" for key, value in sorted(options.items()))


def null_call(device: str) -> NullCall:
    """torch's dispatch floor: one add on a 1-element tensor under inference mode, synced."""
    check_device("torch", torch.__version__, device, torch.cuda.is_available)
    x = torch.zeros(1, device=device)
    sync = (lambda _: torch.cuda.synchronize()) if device == "cuda" else (lambda _: None)
    return NullCall(lambda: torch.add(x, 1.0), sync, torch.inference_mode)


# torch.profiler read for the attribution pass (frameworks.protocols.InferenceAdapter.profile).
profile = profiling.profile

# A Runner for `spec` holding `weights` in `mode` ('eager', 'compiled', 'compiled_<name>', 'aoti')
# and `precision` on `device`, compiled with torch.compile `options`
# (frameworks.compile_option_names("torch")).
build = TorchRunner.build
