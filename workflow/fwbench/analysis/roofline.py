"""The roofline: the hardware's measured limits and how close each cell comes to them.

The limits come from the hardware stage's JSON (results/hardware/<system>.json): the
measured float32 GEMM peak, the STREAM triad bandwidth (the DRAM roof, as the first pipeline
drew it) and, from schema version 2 on, one bandwidth per memory level (L1, L2, L3, DRAM) read
off the working-set sweep. The keys it is read by are in HARDWARE_KEYS and MEMORY_LEVELS_KEY.
A limit the file does not have (missing key, or null) leaves the metrics NaN and says why in
`HardwareLimits.problems`; a value that is present but not a positive number raises, naming it.

Per cell: arithmetic intensity = FLOPs / bytes, achieved FLOP/s = FLOPs / median latency.
Two lower bounds, each max(FLOPs / peak, bytes / bandwidth):
- cache-aware: the bandwidth of the smallest memory level the cell's working set fits in (its
  weights, input, output and live activations; fwbench.model.cost). That level is the highest
  bandwidth the cell's data can plausibly stream from, so this bound is the one a correct
  measurement cannot beat: `efficiency` and `bound` are against it.
- DRAM: the STREAM triad for every cell (`dram_efficiency`, comparable to earlier runs).
Efficiency is never clamped: above 1 against the cache-aware roof the cell ran faster than the
hardware allows, which means a missing synchronization or a wrong cost model: `invalid_fast`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from fwbench.io.hardware_file import read_hardware
from fwbench.io.variables import V

# Where each limit sits in the hardware JSON, as key paths.
HARDWARE_KEYS: dict[str, tuple[str, ...]] = {
    "peak_flops_per_s": ("compute", "dtypes", "float32", "best_flops_per_s"),
    "bandwidth_Bps": ("bandwidth", "kernels", "triad", "best_bandwidth_Bps"),
    "ridge_flop_per_byte": ("ridge", "per_dtype", "float32", "measured_flop_per_byte"),
    "bf16_peak_flops_per_s": ("compute", "dtypes", "bfloat16", "best_flops_per_s"),
}
OPTIONAL_KEYS = ("ridge_flop_per_byte", "bf16_peak_flops_per_s")  # drawn or cross-checked only
MEMORY_LEVELS_KEY = ("memory", "levels")
DRAM = "DRAM"
INVALID_FAST = "invalid_fast"
# The per-cell numbers of RooflineMetrics that stats.nc keeps.
ROOFLINE_VARIABLES = (
    "arithmetic_intensity",
    "achieved_flops_per_s",
    "lower_bound_s",
    V.efficiency,
    "dram_lower_bound_s",
    "dram_efficiency",
)


@dataclass(frozen=True)
class MemoryLevel:
    """One roof of the hierarchy: data that fits in `capacity_bytes` streams at `bandwidth_Bps`
    (the fastest sweep kernel there, `kernel`)."""

    name: str
    capacity_bytes: float  # math.inf for DRAM
    bandwidth_Bps: float
    kernel: str


def dram_only(stream_triad_Bps: float) -> tuple[MemoryLevel, ...]:
    """The hierarchy when nothing but STREAM's triad is known (no sweep, or an older file)."""
    return (MemoryLevel(DRAM, math.inf, stream_triad_Bps, "STREAM triad"),)


@dataclass(frozen=True)
class HardwareLimits:
    """The limits the roofline uses; NaN where unavailable, with the reasons in `problems`."""

    peak_flops_per_s: float
    bandwidth_Bps: float
    source: str
    problems: tuple[str, ...] = ()
    reported_ridge_flop_per_byte: float = math.nan
    bf16_peak_flops_per_s: float = math.nan
    levels: tuple[MemoryLevel, ...] = ()  # smallest first, DRAM last
    levels_note: str = ""
    # The node that measured these limits: host, cpu_model, gpu_model (hardware file schema 3;
    # empty for older files and without a file).
    node: dict[str, str] = field(default_factory=dict)

    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity where the memory and compute roofs meet."""
        return self.peak_flops_per_s / self.bandwidth_Bps

    def describe(self) -> str:
        """One line for table headers and attributes."""
        text = (
            f"peak {self.peak_flops_per_s / 1e9:.1f} GFLOP/s (float32, measured), "
            f"DRAM bandwidth {self.bandwidth_Bps / 1e9:.1f} GB/s (STREAM triad)"
        )
        if self.levels:
            text += "; memory levels " + ", ".join(
                f"{level.name} {level.bandwidth_Bps / 1e9:.1f} GB/s ({level.kernel}"
                + (f", ≤ {level.capacity_bytes / 2**20:.3g} MiB)" if level.name != DRAM else ")")
                for level in self.levels
            )
        text += f"; from {self.source}"
        if self.levels_note:
            text += f" ({self.levels_note})"
        if self.problems:
            text += "; unavailable: " + "; ".join(self.problems)
        return text


def no_hardware_limits(reason: str) -> HardwareLimits:
    return HardwareLimits(math.nan, math.nan, source="none", problems=(reason,))


def _lookup(document: dict[str, Any], keys: tuple[str, ...], source: str) -> tuple[float, str]:
    """The positive number at `keys`, or NaN and why it is not there."""
    value: Any = document
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            return math.nan, f"{'.'.join(keys[: depth + 1])} is missing in {source}"
        value = value[key]
    name = ".".join(keys)
    if value is None:
        return math.nan, f"{name} is null in {source}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} in {source} must be a positive number, got {value!r}")
    return float(value), ""


def _memory_levels(
    document: dict[str, Any], stream_triad_Bps: float, source: str
) -> tuple[tuple[MemoryLevel, ...], str]:
    """The hierarchy's roofs, smallest level first; DRAM is the faster of the sweep's DRAM
    roof and STREAM's triad (two measurements of it). Without a sweep, DRAM alone."""
    found: Any = document
    for key in MEMORY_LEVELS_KEY:
        found = found.get(key) if isinstance(found, dict) else None
    dram_alone = dram_only(stream_triad_Bps)
    if not found:
        reason = (document.get("memory") or {}).get("error") or "no working-set sweep"
        return (dram_alone if stream_triad_Bps > 0 else ()), f"DRAM only: {reason}"
    levels, notes = [], []
    for name, entry in found.items():
        bandwidth, problem = _lookup(entry, ("bandwidth_Bps",), f"{source} memory.levels.{name}")
        if problem:
            notes.append(f"{name}: {entry.get('problem') or problem}")
            if levels and name != DRAM:
                # Bounding its cells by the next level up would be too slow a roof (a correct
                # cell would look impossible); the level below's bandwidth stays a true bound.
                below = levels[-1]
                kernel = f"{below.name}'s {below.kernel}: no plateau of its own"
                levels.append(
                    MemoryLevel(name, float(entry["capacity_bytes"]), below.bandwidth_Bps, kernel)
                )
            continue
        kernel = str(entry.get("roof_kernel"))
        if name == DRAM:
            if stream_triad_Bps > bandwidth:
                bandwidth, kernel = stream_triad_Bps, "STREAM triad"
            levels.append(MemoryLevel(DRAM, math.inf, bandwidth, kernel))
        else:
            levels.append(MemoryLevel(name, float(entry["capacity_bytes"]), bandwidth, kernel))
    if not any(level.name == DRAM for level in levels) and stream_triad_Bps > 0:
        levels += dram_alone
    return tuple(levels), "; ".join(notes)


def limits_from_document(document: dict[str, Any], source: str) -> HardwareLimits:
    """The limits in a parsed hardware JSON document."""
    values, problems = {}, []
    for name, keys in HARDWARE_KEYS.items():
        values[name], problem = _lookup(document, keys, source)
        if problem and name not in OPTIONAL_KEYS:
            problems.append(problem)
    levels, levels_note = _memory_levels(document, values["bandwidth_Bps"], source)
    return HardwareLimits(
        values["peak_flops_per_s"],
        values["bandwidth_Bps"],
        source=source,
        problems=tuple(problems),
        reported_ridge_flop_per_byte=values["ridge_flop_per_byte"],
        bf16_peak_flops_per_s=values["bf16_peak_flops_per_s"],
        levels=levels,
        levels_note=levels_note,
        node={key: str(value) for key, value in (document.get("node") or {}).items()},
    )


def read_hardware_limits(path: str | os.PathLike | None) -> HardwareLimits:
    """The limits in the hardware file at `path`; None means no hardware file is available."""
    if path is None:
        return no_hardware_limits("no hardware file was given")
    return limits_from_document(read_hardware(path), str(path))


@dataclass
class RooflineMetrics:
    """Arrays of the cells' shape; NaN (or '') where an input is NaN."""

    arithmetic_intensity: np.ndarray
    achieved_flops_per_s: np.ndarray
    lower_bound_s: np.ndarray
    efficiency: np.ndarray
    memory_level: np.ndarray
    dram_lower_bound_s: np.ndarray
    dram_efficiency: np.ndarray
    invalid_fast: np.ndarray
    bound: np.ndarray


def levels_to_json(levels: tuple[MemoryLevel, ...]) -> str:
    """For a netCDF attribute: DRAM's unbounded capacity as null."""
    return json.dumps(
        [
            asdict(level)
            | {"capacity_bytes": None if math.isinf(level.capacity_bytes) else level.capacity_bytes}
            for level in levels
        ]
    )


def levels_from_json(text: str) -> tuple[MemoryLevel, ...]:
    return tuple(
        MemoryLevel(**(entry | {"capacity_bytes": entry["capacity_bytes"] or math.inf}))
        for entry in json.loads(text or "[]")
    )


def level_bandwidths(
    working_set_bytes: np.ndarray, levels: tuple[MemoryLevel, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Per cell: the bandwidth of the smallest level its working set fits in, and its name
    (the fastest level's where the working set is unknown)."""
    working_set = np.asarray(working_set_bytes, dtype=float)
    # An unknown working set (cells before schema 3) gets the fastest roof: still a lower
    # bound no correct measurement beats, so invalid_fast keeps its meaning.
    fastest = max(levels, key=lambda level: level.bandwidth_Bps, default=None)
    bandwidth = np.full(working_set.shape, np.nan)
    names = np.full(working_set.shape, "", dtype=object)
    unplaced = ~np.isnan(working_set)
    if fastest:
        bandwidth[~unplaced] = fastest.bandwidth_Bps
        names[~unplaced] = f"unknown ({fastest.name}, the fastest)"
    for level in levels:
        fits = unplaced & (working_set <= level.capacity_bytes)
        bandwidth[fits], names[fits] = level.bandwidth_Bps, level.name
        unplaced &= ~fits
    return bandwidth, names


def roofline(
    flops: np.ndarray,
    bytes_moved: np.ndarray,
    working_set_bytes: np.ndarray,
    median_s: np.ndarray,
    limits: HardwareLimits,
) -> RooflineMetrics:
    """The roofline metrics of cells with these FLOPs, bytes, working sets and medians."""
    flops, bytes_moved, median_s = (
        np.asarray(a, dtype=float) for a in (flops, bytes_moved, median_s)
    )
    levels = limits.levels or dram_only(limits.bandwidth_Bps)
    level_Bps, level_names = level_bandwidths(working_set_bytes, levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        compute_s = flops / limits.peak_flops_per_s
        memory_s = bytes_moved / level_Bps
        lower_bound_s = np.maximum(compute_s, memory_s)
        dram_lower_bound_s = np.maximum(compute_s, bytes_moved / limits.bandwidth_Bps)
        efficiency = lower_bound_s / median_s
        bound = np.where(compute_s >= memory_s, "compute", "memory").astype(object)
        bound[np.isnan(lower_bound_s)] = ""
        return RooflineMetrics(
            arithmetic_intensity=flops / bytes_moved,
            achieved_flops_per_s=flops / median_s,
            lower_bound_s=lower_bound_s,
            efficiency=efficiency,
            memory_level=level_names,
            dram_lower_bound_s=dram_lower_bound_s,
            dram_efficiency=dram_lower_bound_s / median_s,
            invalid_fast=efficiency > 1.0,
            bound=bound,
        )
