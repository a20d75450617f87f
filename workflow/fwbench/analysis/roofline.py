"""The roofline: the hardware's measured limits and how close each cell comes to them.

The limits come from the hardware stage's JSON (results/hardware/<host>-<device>.json): the
measured float32 peak and the measured STREAM triad bandwidth. The keys it is read by are all
in HARDWARE_KEYS below. A limit the file does not have (missing key, or null) leaves the
roofline metrics NaN and says why in `HardwareLimits.problems`; a value that is present but
not a positive number raises, naming it.

Per cell: arithmetic intensity = FLOPs / bytes, achieved FLOP/s = FLOPs / median latency,
lower bound = max(FLOPs / peak, bytes / bandwidth), efficiency = lower bound / median.
Efficiency is never clamped: above 1 the cell ran faster than the hardware allows, which means
a missing synchronization or a wrong cost model, and it is flagged `invalid_fast`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from fwbench.io.hardware_file import read_hardware

# Where each limit sits in the hardware JSON, as key paths.
HARDWARE_KEYS: dict[str, tuple[str, ...]] = {
    "peak_flops_per_s": ("compute", "dtypes", "float32", "best_flops_per_s"),
    "bandwidth_Bps": ("bandwidth", "kernels", "triad", "best_bandwidth_Bps"),
    "ridge_flop_per_byte": ("ridge", "per_dtype", "float32", "measured_flop_per_byte"),
}
INVALID_FAST = "invalid_fast"


@dataclass(frozen=True)
class HardwareLimits:
    """The limits the roofline uses; NaN where unavailable, with the reasons in `problems`."""

    peak_flops_per_s: float
    bandwidth_Bps: float
    source: str
    problems: tuple[str, ...] = ()
    reported_ridge_flop_per_byte: float = math.nan

    @property
    def ridge_flop_per_byte(self) -> float:
        """Arithmetic intensity where the memory and compute roofs meet."""
        return self.peak_flops_per_s / self.bandwidth_Bps

    def describe(self) -> str:
        """One line for table headers and attributes."""
        text = (
            f"peak {self.peak_flops_per_s / 1e9:.1f} GFLOP/s (float32, measured), "
            f"bandwidth {self.bandwidth_Bps / 1e9:.1f} GB/s (triad), from {self.source}"
        )
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


def limits_from_document(document: dict[str, Any], source: str) -> HardwareLimits:
    """The limits in a parsed hardware JSON document."""
    values, problems = {}, []
    for name, keys in HARDWARE_KEYS.items():
        values[name], problem = _lookup(document, keys, source)
        if problem and name != "ridge_flop_per_byte":  # the ridge is a cross-check only
            problems.append(problem)
    return HardwareLimits(
        values["peak_flops_per_s"],
        values["bandwidth_Bps"],
        source=source,
        problems=tuple(problems),
        reported_ridge_flop_per_byte=values["ridge_flop_per_byte"],
    )


def read_hardware_limits(path: str | os.PathLike | None) -> HardwareLimits:
    """The limits in the hardware file at `path`; None means no hardware file is available."""
    if path is None:
        return no_hardware_limits("no hardware file was given")
    return limits_from_document(read_hardware(path), str(path))


@dataclass
class RooflineMetrics:
    """Arrays of the cells' shape; NaN where an input is NaN."""

    arithmetic_intensity: np.ndarray
    achieved_flops_per_s: np.ndarray
    lower_bound_s: np.ndarray
    efficiency: np.ndarray
    invalid_fast: np.ndarray
    bound: np.ndarray


def roofline(
    flops: np.ndarray, bytes_moved: np.ndarray, median_s: np.ndarray, limits: HardwareLimits
) -> RooflineMetrics:
    """The roofline metrics of cells with these FLOPs, bytes and median latencies."""
    flops, bytes_moved, median_s = (
        np.asarray(a, dtype=float) for a in (flops, bytes_moved, median_s)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        compute_s = flops / limits.peak_flops_per_s
        memory_s = bytes_moved / limits.bandwidth_Bps
        lower_bound_s = np.maximum(compute_s, memory_s)
        efficiency = lower_bound_s / median_s
        bound = np.where(compute_s >= memory_s, "compute", "memory").astype(object)
        bound[np.isnan(lower_bound_s)] = ""
        return RooflineMetrics(
            arithmetic_intensity=flops / bytes_moved,
            achieved_flops_per_s=flops / median_s,
            lower_bound_s=lower_bound_s,
            efficiency=efficiency,
            invalid_fast=efficiency > 1.0,
            bound=bound,
        )
