"""The hardware file, results/hardware/<system>.json: its version, its writer, and its one reading.

`fwbench.hardware.characterize` writes it; `read_hardware_record` reads it into the
`HardwareRecord` every reader takes: the roofline (`fwbench.analysis.roofline`), a cell's speed
canary (`fwbench.measure.speed`), the figures and the report (`fwbench.present`).
`read_hardware` (the raw document) is for self-measurement scripts that check the measurements.
A figure the file lacks (missing or null) is None, never invented, and `missing` says why by its
key path; one that is present but not a positive number raises, naming it.

The memory levels, one rule for every reader, the one a roofline needs: a roof must never be
slower than the hardware (a correct cell would look faster than the hardware allows).
- A cache level the working-set sweep resolved: its plateau's bandwidth (fastest kernel there).
- A cache level the sweep did not resolve: the bandwidth of the nearest resolved level below it
  (smaller and at least as fast, so still a true bound for data that fits), named in
  `filled_from`; the level above would be too slow a roof. The smallest level has none below:
  it is left out (its data falls to the next level's roof), as `levels_note` says.
- DRAM: the faster of the sweep's DRAM plateau and STREAM's triad, two measurements of one
  figure (the slower undershot it); `kernel` names the one taken. Without the sweep's DRAM
  plateau, STREAM's triad alone.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fwbench.io.atomic import write_json
from fwbench.io.common import SCHEMA_KEY, read_json_document
from fwbench.memory.canary import CanaryWork, works_from_baseline
from fwbench.memory.levels import DRAM

# 2 adds `memory` (the working-set bandwidth sweep and its per-level plateaus), the measured
# clock, and per-size GEMM sweeps; version 1 files read, with DRAM as their only memory level.
# 3 adds `system` (the config's name of the kind of node) and `node` (host, CPU and GPU model,
# what a cell's node is matched against). 4 adds `canary` (the speed canary's fixed work and
# quiet baseline per memory level); older files read, their cells without a canary.
SCHEMA_VERSION = 4
READABLE = (1, 2, 3, 4)
WHAT = "hardware file"
STREAM_KERNELS = ("copy", "scale", "add", "triad")
STREAM_TRIAD = "STREAM triad"
FILLED = "no plateau of its own"
# The dtypes whose GEMM peak a job of its own measures (fwbench.hardware.peaks), in a file
# beside the hardware file (PEAK_FILE in a directory named as the system): adding one reruns
# no cell (cells read the hardware file for their canary's baseline). Its document holds the
# hardware file's compute, theoretical and ridge sections for that dtype alone, and the
# record reads them as the hardware file's own.
OWN_JOB_DTYPES = ("int8",)
PEAK_FILE = "gemm-{dtype}.json"
PEAK_SECTIONS = (("compute", "dtypes"), ("compute", "instructions"), ("theoretical", "flops_per_s"))
PEAK_SECTIONS += (("theoretical", "flops_source"), ("ridge", "per_dtype"))


def peak_file(hardware: str | os.PathLike, dtype: str) -> Path:
    """The file of `dtype`'s own peak job beside the hardware file at `hardware`."""
    return Path(hardware).with_suffix("") / PEAK_FILE.format(dtype=dtype)


def write_hardware(document: dict[str, Any], path: str | os.PathLike) -> None:
    write_json({SCHEMA_KEY: SCHEMA_VERSION} | document, path)


def read_hardware(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed document; raises naming the file when it is not JSON, not an object, or of
    another schema version."""
    return read_json_document(path, READABLE, WHAT)


def lookup(document: Any, *keys: str) -> Any:
    """The value at a key path, None where any key is missing."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def peak_path(dtype: str) -> tuple[str, ...]:  # a dtype's measured GEMM peak
    return ("compute", "dtypes", dtype, "best_flops_per_s")


def stream_path(kernel: str) -> tuple[str, ...]:  # a STREAM kernel's best bandwidth
    return ("bandwidth", "kernels", kernel, "best_bandwidth_Bps")


@dataclass(frozen=True)
class MemoryLevel:
    """One roof: data that fits in `capacity_bytes` streams at `bandwidth_Bps`, measured by
    `kernel` (the module's rule); `filled_from`: the level whose bandwidth a level without a
    plateau took ("" where measured); `working_set_bytes`: the plateau's smallest and largest."""

    name: str
    capacity_bytes: float  # math.inf for DRAM
    bandwidth_Bps: float
    kernel: str
    filled_from: str = ""
    working_set_bytes: tuple[float, float] | None = None


@dataclass(frozen=True)
class Peak:
    """One dtype's compute: the best GEMM rate measured, the framework that reached it, every
    framework's best, why it was skipped, the theoretical peak and its source, the ridges."""

    measured_flops_per_s: float | None = None
    measured_by: str = ""
    gemm_flops_per_s: dict[str, float] = field(default_factory=dict)  # framework → best rate
    skipped: str = ""
    theoretical_flops_per_s: float | None = None
    theoretical_source: str = ""
    measured_ridge: float | None = None
    theoretical_ridge: float | None = None
    # The instructions that computed the best GEMM and the evidence (oneDNN's kernel names, or
    # the rate against each instruction's ceiling); () where undetermined or not recorded.
    served_by: tuple[str, ...] = ()
    served_by_evidence: str = ""


@dataclass(frozen=True)
class CanaryLevel:
    """The speed canary's fixed work for one memory level and its quiet medians (seconds)."""

    work: CanaryWork
    chain_median_s: float
    read_median_s: float


@dataclass(frozen=True)
class HardwareRecord:
    """The hardware file, read once: peaks in FLOP/s, bandwidths in B/s, clock in Hz."""

    source: str  # the file
    system: str = ""  # the config's name of the system measured; "" before version 3
    host: str = ""
    device: str = ""
    device_name: str = ""
    node: dict[str, str] = field(default_factory=dict)  # host, cpu_model, gpu_model (v3)
    threads: int | None = None
    peaks: dict[str, Peak] = field(default_factory=dict)  # dtype → its compute
    stream_Bps: dict[str, float] = field(default_factory=dict)  # kernel → best, measured only
    stream_runner: str = ""
    theoretical_bandwidth_Bps: float | None = None
    theoretical_bandwidth_source: str = ""
    levels: tuple[MemoryLevel, ...] = ()  # smallest first, DRAM last
    levels_note: str = ""  # levels without a plateau, and why; or why DRAM alone
    clock_hz: float | None = None
    clock_source: str = ""
    canary: tuple[CanaryLevel, ...] = ()  # smallest level first; () before version 4
    notes: tuple[str, ...] = ()  # STREAM and sweep errors, peaks above the theory
    missing: Mapping[tuple[str, ...], str] = field(default_factory=dict)  # key path → why

    @property
    def measured_flops_per_s(self) -> dict[str, float | None]:
        return {dtype: peak.measured_flops_per_s for dtype, peak in self.peaks.items()}

    @property
    def theoretical_flops_per_s(self) -> dict[str, float | None]:
        return {dtype: peak.theoretical_flops_per_s for dtype, peak in self.peaks.items()}


class _Reader:
    """Positive numbers at key paths of one document; None where absent (why, in `missing`)."""

    def __init__(self, document: dict[str, Any], source: str):
        self.document, self.source, self.missing = document, source, {}

    def number(self, *keys: str) -> float | None:
        value: Any = self.document
        name = ".".join(keys)
        for depth, key in enumerate(keys):
            if not isinstance(value, dict) or key not in value:
                self.missing[keys] = f"{'.'.join(keys[: depth + 1])} is missing in {self.source}"
                return None
            value = value[key]
        if value is None:
            self.missing[keys] = f"{name} is null in {self.source}"
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(
                f"{name} in {self.source} must be a positive number or null, got {value!r}"
            )
        return float(value)

    def text(self, *keys: str) -> str:
        value = lookup(self.document, *keys)
        return "" if value is None else str(value)


def read_hardware_record(path: str | os.PathLike | None) -> HardwareRecord | None:
    """The record of the hardware file at `path` with the peak files beside it (those of
    OWN_JOB_DTYPES that exist); None when no path is given."""
    if path is None:
        return None
    document = read_hardware(path)
    for dtype in OWN_JOB_DTYPES:
        if peak_file(path, dtype).exists():
            document = with_peak(document, read_hardware(peak_file(path, dtype)))
    return record_from_document(document, str(path))


def with_peak(document: dict[str, Any], peak: dict[str, Any]) -> dict[str, Any]:
    """The hardware document with a peak file's sections (PEAK_SECTIONS) merged in."""
    merged = copy.deepcopy(document)
    for section, part in PEAK_SECTIONS:
        found = lookup(peak, section, part) or {}
        merged.setdefault(section, {}).setdefault(part, {}).update(found)
    return merged


def record_from_document(document: dict[str, Any], source: str) -> HardwareRecord:
    """The record of a parsed hardware document (`source` names it in every message)."""
    read = _Reader(document, source)
    stream = {kernel: read.number(*stream_path(kernel)) for kernel in STREAM_KERNELS}
    stream_Bps = {kernel: rate for kernel, rate in stream.items() if rate is not None}
    levels, levels_note = _memory_levels(read, stream_Bps.get("triad"))
    threads = lookup(document, "provenance", "threads", "threads")
    return HardwareRecord(
        source=source,
        system=read.text("system"),
        host=read.text("host"),
        device=read.text("device"),
        device_name=(
            read.text("theoretical", "device_name")
            or read.text("identity", "gpu", "name")
            or read.text("identity", "cpu", "model")
        ),
        node={key: str(value) for key, value in (document.get("node") or {}).items()},
        threads=threads if isinstance(threads, int) and not isinstance(threads, bool) else None,
        peaks=_peaks(read),
        stream_Bps=stream_Bps,
        stream_runner=read.text("bandwidth", "runner"),
        theoretical_bandwidth_Bps=read.number("theoretical", "bandwidth_Bps"),
        theoretical_bandwidth_source=read.text("theoretical", "bandwidth_source"),
        levels=levels,
        levels_note=levels_note,
        clock_hz=read.number("clock", "clock_hz"),
        clock_source=read.text("theoretical", "isa_model", "clock_source"),
        canary=_canary(document),
        notes=_notes(document),
        missing=read.missing,
    )


def _peaks(read: _Reader) -> dict[str, Peak]:
    """Per dtype the file names (measured, theoretical or in a ridge), its `Peak`."""
    measured = lookup(read.document, "compute", "dtypes") or {}
    theory = lookup(read.document, "theoretical", "flops_per_s") or {}
    ridges = lookup(read.document, "ridge", "per_dtype") or {}
    peaks = {}
    for dtype in dict.fromkeys(["float32", "bfloat16", *measured, *theory, *ridges]):
        entry = measured.get(dtype) or {}
        peak = read.number(*peak_path(dtype))
        if dtype not in measured and dtype not in theory and dtype not in ridges:
            continue  # the roofline's dtypes are read for `missing` alone
        peaks[dtype] = Peak(
            measured_flops_per_s=peak,
            measured_by=str(entry.get("best_framework") or ""),
            gemm_flops_per_s={
                framework: float(result["flops_per_s"])
                for framework, result in (entry.get("per_framework") or {}).items()
                if isinstance(result, dict) and result.get("flops_per_s")
            },
            skipped=str(entry.get("skipped_reason") or ""),
            theoretical_flops_per_s=read.number("theoretical", "flops_per_s", dtype),
            theoretical_source=read.text("theoretical", "flops_source", dtype),
            measured_ridge=read.number("ridge", "per_dtype", dtype, "measured_flop_per_byte"),
            theoretical_ridge=read.number("ridge", "per_dtype", dtype, "theoretical_flop_per_byte"),
            served_by=tuple((entry.get("served_by") or {}).get("instructions") or ()),
            served_by_evidence=str((entry.get("served_by") or {}).get("evidence") or ""),
        )
    return peaks


def _memory_levels(read: _Reader, triad_Bps: float | None) -> tuple[tuple[MemoryLevel, ...], str]:
    """The hierarchy's roofs by the module's rule, smallest first, and what the sweep lacked."""
    stream_dram = (MemoryLevel(DRAM, math.inf, triad_Bps, STREAM_TRIAD),) if triad_Bps else ()
    found = lookup(read.document, "memory", "levels")
    if not found:
        reason = lookup(read.document, "memory", "error") or "no working-set sweep"
        return stream_dram, f"DRAM only: {reason}"
    levels, notes = [], []
    for name, entry in found.items():
        bandwidth = read.number("memory", "levels", name, "bandwidth_Bps")
        if bandwidth is None:
            why = entry.get("problem") or read.missing["memory", "levels", name, "bandwidth_Bps"]
            notes.append(f"{name}: {why}")
            if levels and name != DRAM:
                levels.append(_filled(name, float(entry["capacity_bytes"]), levels[-1]))
            continue
        kernel = str(entry.get("roof_kernel"))
        points = lookup(entry, "kernels", kernel, "working_set_bytes")
        capacity = math.inf if name == DRAM else float(entry["capacity_bytes"])
        span = (float(points[0]), float(points[1])) if points else None
        level = MemoryLevel(name, capacity, bandwidth, kernel, working_set_bytes=span)
        if name == DRAM and triad_Bps and triad_Bps > bandwidth:
            level = stream_dram[0]
        levels.append(level)
    if not any(level.name == DRAM for level in levels):
        levels += stream_dram
    return tuple(levels), "; ".join(notes)


def _filled(name: str, capacity_bytes: float, below: MemoryLevel) -> MemoryLevel:
    """A cache level without a plateau: the bandwidth of the measured level below it."""
    origin = below.filled_from or below.name
    kernel = below.kernel.split(":")[0] if below.filled_from else f"{below.name}'s {below.kernel}"
    return MemoryLevel(name, capacity_bytes, below.bandwidth_Bps, f"{kernel}: {FILLED}", origin)


def _canary(document: dict[str, Any]) -> tuple[CanaryLevel, ...]:
    section = document.get("canary") or {}
    entries = (section.get("levels") or {}).values()
    works = works_from_baseline(section) if entries else []
    return tuple(
        CanaryLevel(work, float(at["chain_s"]["median"]), float(at["read_s"]["median"]))
        for work, at in zip(works, entries, strict=True)
    )


def _notes(document: dict[str, Any]) -> tuple[str, ...]:
    """What a reader should know: STREAM and sweep errors, peaks above the theory."""

    def said(section: str, what: str) -> list[str]:
        found = (lookup(document, section, key) for key in ("error", "note"))
        return [f"{what}: {text}" for text in found if text]

    above = [
        f"{dtype}: the measured GEMM peak is {entry.get('best_over_theoretical', 0):.2f}× the "
        "theoretical one: the theoretical model (clock, FMA units) is too low"
        for dtype, entry in (lookup(document, "compute", "dtypes") or {}).items()
        if entry.get("above_theoretical")
    ]
    return (*said("bandwidth", "STREAM"), *above, *said("memory", "working-set sweep"))
