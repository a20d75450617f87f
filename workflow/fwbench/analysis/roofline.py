"""The roofline: the hardware's measured limits and how close each cell comes to them.

The limits are the hardware file's record (fwbench.io.hardware_file.HardwareRecord, the one
reading of results/hardware/<system>.json that the figures, the report and the speed canary
share): the measured GEMM peak of the cell's precision (float32's; bfloat16's for a bf16 cell;
the int8 GEMM's integer op/s for an int8 cell, whose products run in int8; NaN where none was
measured), the STREAM triad bandwidth (the DRAM roof, as the first
pipeline drew it) and the record's memory levels (L1, L2, L3, DRAM), by the record's one rule
for a level the working-set sweep did not resolve and for DRAM. A limit the file does not have
(missing key, or null) leaves the metrics NaN and says why in `HardwareLimits.problems`; a value
that is present but not a positive number raises, naming it.

Per cell: arithmetic intensity = FLOPs / bytes, achieved FLOP/s = FLOPs / median latency.
Two lower bounds, each max(FLOPs / peak, bytes / bandwidth):
- cache-aware: the bandwidth of the smallest memory level the cell's working set fits in (its
  weights, input, output and live activations; fwbench.model.cost). That level is the highest
  bandwidth the cell's data can plausibly stream from, so this bound is the one a correct
  measurement cannot beat: `efficiency` and `bound` are against it.
- DRAM: the STREAM triad for every cell (`dram_efficiency`, comparable to earlier runs).
Efficiency is never clamped: above 1 against the cache-aware roof the cell ran faster than the
roof's measurement; above 1 even at the slow end of the median's CI it ran faster than the
hardware allows, which means a missing synchronization or a wrong cost model: `invalid_fast`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from fwbench.io.dims import BFLOAT16, FLOAT32
from fwbench.io.hardware_file import (
    STREAM_TRIAD,
    HardwareRecord,
    MemoryLevel,  # the record's memory level is the roofline's roof
    peak_path,
    read_hardware_record,
    record_from_document,
    stream_path,
)
from fwbench.io.variables import V
from fwbench.precisions import ARITHMETIC, INT8

ROOF_DTYPE = "float32"  # the models run in float32
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


def dram_only(stream_triad_Bps: float) -> tuple[MemoryLevel, ...]:
    """The hierarchy when nothing but STREAM's triad is known (limits built by hand)."""
    return (MemoryLevel(DRAM, math.inf, stream_triad_Bps, STREAM_TRIAD),)


@dataclass(frozen=True)
class HardwareLimits:
    """The limits the roofline uses; NaN where unavailable, with the reasons in `problems`."""

    peak_flops_per_s: float
    bandwidth_Bps: float
    source: str
    problems: tuple[str, ...] = ()
    reported_ridge_flop_per_byte: float = math.nan
    bf16_peak_flops_per_s: float = math.nan
    int8_peak_ops_per_s: float = math.nan  # integer op/s (2 per multiply-add)
    levels: tuple[MemoryLevel, ...] = ()  # smallest first, DRAM last
    levels_note: str = ""
    # The node that measured these limits: host, cpu_model, gpu_model (hardware file schema 3;
    # empty for older files and without a file).
    node: dict[str, str] = field(default_factory=dict)

    def peak_of(self, precision: str) -> float:
        """The measured GEMM peak a cell computing in `precision` is held against (NaN where
        the hardware stage measured none for it)."""
        peaks = {
            FLOAT32: self.peak_flops_per_s,
            BFLOAT16: self.bf16_peak_flops_per_s,
            INT8: self.int8_peak_ops_per_s,
        }
        return peaks.get(ARITHMETIC.get(precision, precision), math.nan)

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


def limits_from_record(record: HardwareRecord) -> HardwareLimits:
    """The roofline's limits in a hardware file's record."""
    peak = record.peaks.get(ROOF_DTYPE)
    bf16, int8 = record.peaks.get(BFLOAT16), record.peaks.get(INT8)
    required = (peak_path(ROOF_DTYPE), stream_path("triad"))
    return HardwareLimits(
        _or_nan(peak and peak.measured_flops_per_s),
        _or_nan(record.stream_Bps.get("triad")),
        source=record.source,
        problems=tuple(record.missing[path] for path in required if path in record.missing),
        reported_ridge_flop_per_byte=_or_nan(peak and peak.measured_ridge),
        bf16_peak_flops_per_s=_or_nan(bf16 and bf16.measured_flops_per_s),
        int8_peak_ops_per_s=_or_nan(int8 and int8.measured_flops_per_s),
        levels=record.levels,
        levels_note=record.levels_note,
        node=dict(record.node),
    )


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def limits_from_document(document: dict[str, Any], source: str) -> HardwareLimits:
    """The limits in a parsed hardware JSON document."""
    return limits_from_record(record_from_document(document, source))


def read_hardware_limits(path: str | os.PathLike | None) -> HardwareLimits:
    """The limits in the hardware file at `path`; None means no hardware file is available."""
    record = read_hardware_record(path)
    if record is None:
        return no_hardware_limits("no hardware file was given")
    return limits_from_record(record)


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
    """The levels `levels_to_json` wrote (those of older statistics lack the later fields)."""
    return tuple(
        MemoryLevel(
            **(
                entry
                | {"capacity_bytes": entry["capacity_bytes"] or math.inf}
                | {"working_set_bytes": _pair(entry.get("working_set_bytes"))}
            )
        )
        for entry in json.loads(text or "[]")
    )


def _pair(value: list[float] | None) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if value else None


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


def _beyond_roof(
    lower_bound_s: np.ndarray, median_s: np.ndarray, slowest_s: np.ndarray | None
) -> np.ndarray:
    """Faster than the roof at the slow end of the median's CI (at the median without one)."""
    if slowest_s is None:
        return lower_bound_s / median_s > 1.0
    slowest = np.asarray(slowest_s, dtype=float)
    return lower_bound_s / np.where(np.isfinite(slowest), slowest, median_s) > 1.0


def roofline(
    flops: np.ndarray,
    bytes_moved: np.ndarray,
    working_set_bytes: np.ndarray,
    median_s: np.ndarray,
    limits: HardwareLimits,
    peak_flops_per_s: np.ndarray | float | None = None,
    slowest_s: np.ndarray | None = None,
) -> RooflineMetrics:
    """The roofline metrics of cells with these FLOPs, bytes, working sets and medians;
    `peak_flops_per_s` per cell (each its precision's, limits.peak_of), else float32's.
    `invalid_fast`: beyond the roof even at `slowest_s` (the upper end of the median's CI,
    where known): the roofs were measured at one moment of a machine whose speed moves (σ 7.4%
    between the rounds' sets on the 2-core Zen 4 VM), so a correct cell measured at a faster
    moment may beat them by as much as its median's CI allows; beyond that, a missing
    synchronization or a wrong cost model."""
    peak = limits.peak_flops_per_s if peak_flops_per_s is None else peak_flops_per_s
    flops, bytes_moved, median_s = (
        np.asarray(a, dtype=float) for a in (flops, bytes_moved, median_s)
    )
    levels = limits.levels or dram_only(limits.bandwidth_Bps)
    level_Bps, level_names = level_bandwidths(working_set_bytes, levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        compute_s = flops / peak
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
            invalid_fast=_beyond_roof(lower_bound_s, median_s, slowest_s),
            bound=bound,
        )
