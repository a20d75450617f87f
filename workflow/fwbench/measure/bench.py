"""One benchmark cell, start to finish: build, time, describe, write — or record the failure.

Process set-up (threads, pinned cores, framework environment) must happen before the
framework is imported, so `run_cell` does it first and imports the adapter afterwards.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fwbench import frameworks, provenance
from fwbench.host.contention import Thresholds
from fwbench.host.harness import Timing, peak_rss_bytes, time_calls, timing_lock
from fwbench.host.threads import setup_threads
from fwbench.io.artifact_file import artifact_of, read_manifest
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.dims import STATUS_OK
from fwbench.io.variables import V
from fwbench.measure import compile_cache
from fwbench.measure.attribution import attribute, floor_s
from fwbench.measure.job import Watchdog, failure_attrs
from fwbench.measure.speed import (
    CellCanary,
    SpeedReading,
    SpeedThresholds,
    cell_canary,
    read_speed,
    record_speed,
)
from fwbench.plan.request import CellRequest
from fwbench.precisions import FLOAT32

# The null-call baseline: enough calls for a stable median of a few-µs call, in a few ms.
NULL_WARMUP, NULL_REPEATS = 20, 200


class InjectedFailure(RuntimeError):
    """Raised on purpose in cells named by `bench.inject_failure` (tests of failure handling)."""


def build(request: CellRequest, attrs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The adapter, the built runner and its prepared input of the request (a cell's, or a
    variant's in the rounds, fwbench.measure.turns); what the build cost goes to `attrs`.
    Raises whatever the framework raises."""
    from fwbench.model import weights
    from fwbench.model.specs import build_spec

    spec = build_spec(request.arch, request.dims)
    start = time.perf_counter()
    adapter = frameworks.load_inference(request.framework, request.mode)
    attrs["import_s"] = time.perf_counter() - start
    attrs["framework_threads"] = adapter.set_threads(request.threads)
    if request.inject_failure:
        raise InjectedFailure(
            f"bench.inject_failure names {request.framework}/{request.mode}/{request.arch}"
        )
    artifact = _artifact(request)
    attrs["artifact"] = artifact or ""
    if artifact:  # the export's cost, for the start-up table
        attrs["export_s"] = float(read_manifest(request.artifact).get("export_s", np.nan))
    start = time.perf_counter()  # an export mode's build: loading its artifact
    runner = adapter.build(
        spec,
        None if artifact else weights.make_weights(spec, request.seed),
        request.mode,
        request.device,
        request.compile_options or None,
        artifact,
        precision=request.precision,
    )
    prepared = runner.prepare(weights.make_input(spec, request.batch, request.seed))
    attrs["build_s"] = time.perf_counter() - start
    return adapter, runner, prepared


def _measure(request: CellRequest, cell: Cell) -> None:
    """Fill `cell` with the measurement; raises whatever the framework raises."""
    from fwbench.model.specs import build_spec

    spec = build_spec(request.arch, request.dims)
    cell.scalars |= _analytic_cost(spec, request.batch, request.precision)
    adapter, runner, prepared = build(request, cell.attrs)
    rss_before_canary = peak_rss_bytes()
    canary = cell_canary(request, cell)
    timing, attempts, contended, speed = _time_cell(request, runner, prepared, canary)
    cell.latency_s = timing.latency_s
    cell.scalars |= _timing_scalars(timing) | {V.null_call_s: _null_call_s(adapter, request)}
    cell.attrs |= {
        "attempts": attempts,
        "warmup_s": timing.warmup_s,
        "contended": int(contended),
    }
    record_speed(cell, timing, speed)
    canary_bytes = canary.buffer_bytes if canary else 0
    _describe_runner(runner, prepared, cell, request.process, rss_before_canary, canary_bytes)
    if request.precision != FLOAT32 and request.process == 0:
        _kernel_precision(runner, prepared, cell)
    if request.attribution and request.process == 0:
        _attribute(adapter, runner, prepared, cell)


def _kernel_precision(runner: Any, prepared: Any, cell: Cell) -> None:
    """What a low-precision cell computed in (frameworks.kernel_precision), after its timed
    samples, with the pass's own wall time; its failure is recorded and fails nothing the cell
    measured."""
    start = time.perf_counter()
    try:
        found = runner.kernel_precision(prepared)
    except Exception as error:  # evidence about the timing, not the timing
        cell.attrs["kernel_precision"] = f"failed: {type(error).__name__}: {error}"
        traceback.print_exc()
        return
    took = f" (the pass took {time.perf_counter() - start:.2f} s)"
    if found is None:
        cell.attrs["kernel_precision"] = "not examined: the runner shows no dtypes" + took
        return
    cell.scalars["low_precision_share"] = found.share
    cell.attrs["kernel_precision"] = found.note() + took


def _attribute(adapter: Any, runner: Any, prepared: Any, cell: Cell) -> None:
    """The attribution pass (fwbench.measure.attribution), after everything else the cell
    measures (its memory peak included); its failure is recorded in the cell and fails
    nothing the cell measured."""
    median_s = float(np.nanmedian(cell.latency_s))
    try:
        scalars, attrs = attribute(adapter, runner, prepared, median_s, cell.scalars[V.null_call_s])
    except NotImplementedError as error:  # a runtime without a profiler: says which
        cell.attrs["attribution"] = f"not measured: {error}"
        return
    except Exception as error:  # the breakdown explains the timing; it is not the timing
        cell.attrs["attribution"] = f"failed: {type(error).__name__}: {error}"
        traceback.print_exc()
        return
    cell.scalars |= scalars
    cell.attrs |= attrs


def _artifact(request: CellRequest) -> str | None:
    """The artifact an export mode's cell runs (raising with the export's own error where the
    export failed); None for every other mode."""
    if not frameworks.is_export_mode(request.framework, request.mode):
        return None
    if not request.artifact:
        raise ValueError(f"{request.framework}/{request.mode} is an export mode: no manifest given")
    return artifact_of(request.artifact)


def _analytic_cost(spec: Any, batch: int, precision: str) -> dict[str, float]:
    """The cost model's FLOPs and bytes (at the precision's width) of one call."""
    from fwbench.model import cost
    from fwbench.model.specs import RecurrentSpec

    analytic = cost.cost(spec, batch, precision)
    return {
        "flops": analytic.flops,
        "bytes": analytic.bytes,
        "activation_bytes": analytic.activation_bytes,
        "working_set_bytes": analytic.working_set_bytes,
        "recurrent_steps": spec.steps if isinstance(spec, RecurrentSpec) else np.nan,
    }


def _time_cell(
    request: CellRequest, runner: Any, prepared: Any, canary: CellCanary | None
) -> tuple[Timing, int, bool, SpeedReading | None]:
    """The timed samples, measured again up to `retries` times while contended or while the
    canary says the machine is slow (the first call is the first attempt's); returns the
    timing kept, the attempts, its contention and its canary reading."""
    call = functools.partial(runner.call_in_context, prepared)
    thresholds = Thresholds(request.pressure_threshold, request.busy_threshold_cores)
    speed_thresholds = SpeedThresholds(
        request.slow_sample_factor,
        request.slow_machine_factor,
        request.slow_sample_share,
        request.slow_on_cpu,
    )

    def timed() -> tuple[Timing, SpeedReading | None]:
        timing = time_calls(
            call,
            runner.sync,
            request.warmup,
            request.repeats,
            request.min_sample_s,
            context=runner.timing_context,
            between=canary.probe if canary else None,
        )
        if canary is None:
            return timing, None
        # the on-CPU share counts where the cell has one core to itself to lose
        one_core = request.device == "cpu" and request.threads == 1
        on_cpu = timing.on_cpu if one_core else None
        return timing, read_speed(timing.canary_s, canary.baseline, speed_thresholds, on_cpu)

    def disturbed(timing: Timing, speed: SpeedReading | None) -> bool:
        slow = speed is not None and speed.slow_machine
        return slow or thresholds.contended(timing.cpu_pressure, timing.busy_cpu_other)

    timing, speed = timed()
    attempts = 1
    while disturbed(timing, speed) and attempts <= request.retries:
        first_call_s = timing.first_call_s
        timing, speed = timed()
        timing.first_call_s = first_call_s
        attempts += 1
    contended = thresholds.contended(timing.cpu_pressure, timing.busy_cpu_other)
    return timing, attempts, contended, speed


def _timing_scalars(timing: Timing) -> dict[str, float]:
    return {
        V.first_call_s: timing.first_call_s,
        "calls_per_sample": timing.calls_per_sample,
        "load_before": timing.load_before,
        "load_after": timing.load_after,
        "busy_cpu_other": timing.busy_cpu_other,
        "other_cores_probe": timing.other_cores_probe,
        "other_cores_during": timing.other_cores_during,
        "cpu_pressure": timing.cpu_pressure,
    }


def _null_call_s(adapter: Any, request: CellRequest) -> float:
    """The framework's (or runtime's) dispatch floor, timed after the cell's samples; NaN
    where the runtime has no one-op model to run (runtimes.litert says why)."""
    return floor_s(adapter.null_call(request.device), NULL_WARMUP, NULL_REPEATS)


def _describe_runner(
    runner: Any, prepared: Any, cell: Cell, process: int, rss_before_canary: int, canary_bytes: int
) -> None:
    """What the framework says of the measured callable: compilation, counter (process 0's:
    the same function in every process), memory (the process's peak RSS less the canary's
    buffer, which stays resident from its allocation)."""
    info = runner.compile_info()
    counter, counter_note = (
        runner.counter_flops(prepared) if process == 0 else (None, "counted by process 0")
    )
    device_peak = runner.peak_device_memory_bytes()
    rss_peak = max(rss_before_canary, peak_rss_bytes() - canary_bytes)
    cell.scalars |= {
        "counter_flops": np.nan if counter is None else counter,
        "peak_mem_bytes": device_peak if device_peak is not None else rss_peak,
        "compiled": float(info.compiled),
        "graph_count": info.graph_count,
        "graph_breaks": info.graph_breaks,
        "fallbacks": info.fallbacks,
    }
    cell.attrs |= {
        "compile_how": info.how,
        "eager_ops": info.eager_ops,
        "compile_details": info.details,
        "counter_note": counter_note,
        "peak_mem_kind": (
            "device allocator peak"
            if device_peak is not None
            else f"process RSS (less the canary's {canary_bytes} B buffer)"
        ),
    }


def _new_cell(request: CellRequest, threads_info: dict[str, Any], cache_note: str) -> Cell:
    cell = Cell(
        request.framework,
        request.mode,
        request.arch,
        request.batch,
        request.repeats,
        precision=request.precision,
    )
    cell.attrs |= {
        "framework_version": next(iter(request.versions.values()), "unknown"),
        "versions": request.versions | provenance.runtime(),
        "device": request.device,
        "system": request.system,
        **provenance.node_identity(request.device),
        "threads": threads_info,
        "dims": dict(request.dims),
        "warmup": request.warmup,
        "process": request.process,
        "python": sys.executable,  # the rounds start this variant's worker with it
        "config_hash": request.settings_hash(),
        "git_commit": provenance.git_commit(Path(__file__).parent),
        "compile_cache": cache_note,
    }
    return cell


def _timeout_writer(cell: Cell, output: Path) -> Callable[[BaseException], None]:
    """What the watchdog writes of a cell that outlived its timeout: a failed cell."""

    def record(error: BaseException) -> None:
        cell.attrs |= failure_attrs(error) | {"end_ns": time.time_ns()}
        write_cell(cell, output)

    return record


def run_cell(request: CellRequest, output: str | os.PathLike) -> Cell:
    """Measure one cell and write it to `output`; a failure is written as a `failed` cell."""
    frameworks.check_framework_mode(request.framework, request.mode)
    os.environ.update(frameworks.pre_import_env(request.framework, request.device))
    threads_info = setup_threads(request.threads)
    output = Path(output)
    with compile_cache.private_dirs(request) as (scratch, cache_note):
        cell = _new_cell(request, threads_info, cache_note)
        with timing_lock(request.lock) as waited_s:
            cell.attrs["lock_wait_s"] = waited_s
            cell.attrs["start_ns"] = time.time_ns()
            with Watchdog(_timeout_writer(cell, output), request.timeout_s, scratch) as watchdog:
                try:
                    _measure(request, cell)
                except Exception as error:  # a failed cell is data, not a crashed sweep
                    cell.attrs |= failure_attrs(error)
                    traceback.print_exc()
                cell.attrs["end_ns"] = time.time_ns()
                if watchdog.claim():
                    cell.attrs["start_utc"] = provenance.utc(cell.attrs["start_ns"])
                    cell.attrs["end_utc"] = provenance.utc(cell.attrs["end_ns"])
                    write_cell(cell, output)
        if cell.attrs.get("status", STATUS_OK) == STATUS_OK:
            compile_cache.keep(request, scratch)
    return cell
