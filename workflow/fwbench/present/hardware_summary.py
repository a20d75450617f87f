"""The hardware file (fwbench.io.hardware_file) reduced to the figures a reader wants:
measured and theoretical peaks per dtype, STREAM bandwidth per kernel, the memory levels'
plateau bandwidths, the measured clock, ridge points. The keys
read are those `fwbench.hardware.characterize` writes; a missing figure is None, never invented.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from fwbench.io.hardware_file import lookup, read_hardware

STREAM_KERNELS = ("copy", "scale", "add", "triad")


@dataclass(frozen=True)
class HardwareSummary:
    """Peaks in FLOP/s, bandwidths in B/s, ridges in FLOP/B; None where the file has none."""

    source: str
    host: str
    device: str
    device_name: str
    threads: int | None
    measured_flops_per_s: dict[str, float | None]
    measured_by: dict[str, str]
    gemm_flops_per_s: dict[str, dict[str, float]]  # dtype → framework → best GEMM rate
    skipped: dict[str, str]  # dtype → why it was not measured
    theoretical_flops_per_s: dict[str, float | None]
    theoretical_flops_source: dict[str, str]
    stream_Bps: dict[str, float]
    stream_runner: str
    theoretical_bandwidth_Bps: float | None
    theoretical_bandwidth_source: str
    measured_ridge: dict[str, float | None]
    theoretical_ridge: dict[str, float | None]
    notes: tuple[str, ...] = field(default=())
    # level → {"bandwidth_Bps", "roof_kernel", "working_set_bytes": [low, high] of its points}
    memory_levels: dict[str, dict[str, Any]] = field(default_factory=dict)
    clock_hz: float | None = None
    clock_source: str = ""
    system: str = ""  # the config's name of the system measured; "" in files before version 3

    @property
    def measured_bandwidth_Bps(self) -> float | None:
        """STREAM triad, the bandwidth the roofline uses."""
        return self.stream_Bps.get("triad")

    @property
    def dtypes(self) -> list[str]:
        return list(dict.fromkeys([*self.measured_flops_per_s, *self.theoretical_flops_per_s]))


def _number(value: Any, name: str, source: str) -> float | None:
    """A positive number, None for null/absent; anything else raises naming it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} in {source} must be a positive number or null, got {value!r}")
    return float(value)


def hardware_from_document(document: dict[str, Any], source: str) -> HardwareSummary:
    """The summary of a parsed hardware JSON written by fwbench.hardware.characterize."""
    if not isinstance(document, dict):
        raise ValueError(f"{source} must hold a JSON object, got {type(document).__name__}")
    if "compute" not in document:
        raise ValueError(
            f"{source} has no 'compute' section: not a hardware file written by "
            f"fwbench.hardware.characterize (keys: {', '.join(sorted(document)) or 'none'})"
        )
    measured, measured_by, gemm, skipped = _compute(document, source)
    theory = document.get("theoretical") or {}
    theoretical = {
        dtype: _number(value, f"theoretical.flops_per_s.{dtype}", source)
        for dtype, value in (theory.get("flops_per_s") or {}).items()
    }
    stream = _stream(document, source)
    ridges = lookup(document, "ridge", "per_dtype") or {}
    notes = _notes(document)
    gpu = lookup(document, "identity", "gpu") or {}
    cpu = lookup(document, "identity", "cpu") or {}
    threads = lookup(document, "provenance", "threads", "threads")
    return HardwareSummary(
        source=source,
        host=str(document.get("host", "")),
        device=str(document.get("device", "")),
        device_name=str(theory.get("device_name") or gpu.get("name") or cpu.get("model") or ""),
        threads=int(threads) if isinstance(threads, int) else None,
        measured_flops_per_s=measured,
        measured_by=measured_by,
        gemm_flops_per_s=gemm,
        skipped=skipped,
        theoretical_flops_per_s=theoretical,
        theoretical_flops_source={k: str(v) for k, v in (theory.get("flops_source") or {}).items()},
        stream_Bps=stream,
        stream_runner=str(lookup(document, "bandwidth", "runner") or ""),
        theoretical_bandwidth_Bps=_number(
            theory.get("bandwidth_Bps"), "theoretical.bandwidth_Bps", source
        ),
        theoretical_bandwidth_source=str(theory.get("bandwidth_source") or ""),
        measured_ridge={d: (r or {}).get("measured_flop_per_byte") for d, r in ridges.items()},
        theoretical_ridge={
            d: (r or {}).get("theoretical_flop_per_byte") for d, r in ridges.items()
        },
        notes=tuple(notes),
        memory_levels=_memory_levels(document, source),
        clock_hz=_number(lookup(document, "clock", "clock_hz"), "clock.clock_hz", source),
        clock_source=str(lookup(document, "theoretical", "isa_model", "clock_source") or ""),
        system=str(document.get("system") or ""),
    )


def _compute(document: dict[str, Any], source: str) -> tuple[dict, dict, dict, dict]:
    """Per dtype: the measured peak, the framework that reached it, every framework's best
    GEMM rate, and why a dtype was skipped."""
    measured, measured_by, gemm, skipped = {}, {}, {}, {}
    for dtype, entry in (lookup(document, "compute", "dtypes") or {}).items():
        name = f"compute.dtypes.{dtype}"
        measured[dtype] = _number(entry.get("best_flops_per_s"), f"{name}.best_flops_per_s", source)
        measured_by[dtype] = entry.get("best_framework") or ""
        if entry.get("skipped_reason"):
            skipped[dtype] = str(entry["skipped_reason"])
        gemm[dtype] = {
            framework: float(result["flops_per_s"])
            for framework, result in (entry.get("per_framework") or {}).items()
            if isinstance(result, dict) and result.get("flops_per_s")
        }
    return measured, measured_by, gemm, skipped


def _stream(document: dict[str, Any], source: str) -> dict[str, float]:
    stream = {}
    for kernel in STREAM_KERNELS:
        value = lookup(document, "bandwidth", "kernels", kernel, "best_bandwidth_Bps")
        rate = _number(value, f"bandwidth.kernels.{kernel}.best_bandwidth_Bps", source)
        if rate is not None:
            stream[kernel] = rate
    return stream


def _notes(document: dict[str, Any]) -> list[str]:
    """What the reader should know: STREAM and sweep errors, peaks above the theory."""
    notes = [
        f"STREAM: {lookup(document, 'bandwidth', key)}"
        for key in ("error", "note")
        if lookup(document, "bandwidth", key)
    ]
    for dtype, entry in (lookup(document, "compute", "dtypes") or {}).items():
        if entry.get("above_theoretical"):
            notes.append(
                f"{dtype}: the measured GEMM peak is {entry.get('best_over_theoretical', 0):.2f}× "
                "the theoretical one: the theoretical model (clock, FMA units) is too low"
            )
    for key in ("error", "note"):
        if lookup(document, "memory", key):
            notes.append(f"working-set sweep: {lookup(document, 'memory', key)}")
    return notes


def _memory_levels(document: dict[str, Any], source: str) -> dict[str, dict[str, Any]]:
    levels = {}
    for name, entry in (lookup(document, "memory", "levels") or {}).items():
        bandwidth = _number(entry.get("bandwidth_Bps"), f"memory.levels.{name}", source)
        if bandwidth is None:
            continue
        kernel = entry.get("roof_kernel")
        points = (entry.get("kernels") or {}).get(kernel, {}).get("working_set_bytes")
        levels[name] = {
            "bandwidth_Bps": bandwidth,
            "roof_kernel": kernel,
            "working_set_bytes": points,
            "capacity_bytes": entry.get("capacity_bytes"),
        }
    return levels


def read_hardware_summary(path: str | os.PathLike | None) -> HardwareSummary | None:
    """The summary of the hardware file at `path`; None when no path is given."""
    if path is None:
        return None
    return hardware_from_document(read_hardware(path), str(path))
