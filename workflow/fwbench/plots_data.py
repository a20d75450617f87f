"""What the figures and the report read from the result files, without matplotlib.

- `HardwareSummary`: the hardware stage's JSON (fwbench.hardware.characterize) reduced to the
  figures a reader wants: measured and theoretical peaks per dtype, STREAM bandwidth per
  kernel, ridge points. The keys read are those `characterize` writes (compute.dtypes,
  bandwidth.kernels, theoretical, ridge); a missing figure is None, never invented.
- `roofs`: the compute and bandwidth roofs the roofline figure draws: the ones stats.nc used for
  the efficiency (its `roofline_*` attributes) when they are numbers, else the hardware file's.
- helpers over stats.nc (dims framework, mode, arch, batch; see fwbench.stats): the variants
  present, cell names, the failed cells.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from fwbench.aggregate import CELL_DIMS

EAGER_MODE = "eager"
STREAM_KERNELS = ("copy", "scale", "add", "triad")
ROOF_DTYPE = "float32"  # the models run in float32


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


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def hardware_from_document(document: dict[str, Any], source: str) -> HardwareSummary:
    """The summary of a parsed hardware JSON written by fwbench.hardware.characterize."""
    if not isinstance(document, dict):
        raise ValueError(f"{source} must hold a JSON object, got {type(document).__name__}")
    if "compute" not in document:
        raise ValueError(
            f"{source} has no 'compute' section: not a hardware file written by "
            f"fwbench.hardware.characterize (keys: {', '.join(sorted(document)) or 'none'})"
        )
    measured, measured_by, gemm, skipped = {}, {}, {}, {}
    for dtype, entry in (_get(document, "compute", "dtypes") or {}).items():
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
    theory = document.get("theoretical") or {}
    theoretical = {
        dtype: _number(value, f"theoretical.flops_per_s.{dtype}", source)
        for dtype, value in (theory.get("flops_per_s") or {}).items()
    }
    stream = {}
    for kernel in STREAM_KERNELS:
        value = _get(document, "bandwidth", "kernels", kernel, "best_bandwidth_Bps")
        rate = _number(value, f"bandwidth.kernels.{kernel}.best_bandwidth_Bps", source)
        if rate is not None:
            stream[kernel] = rate
    ridges = _get(document, "ridge", "per_dtype") or {}
    notes = [
        f"STREAM: {_get(document, 'bandwidth', key)}"
        for key in ("error", "note")
        if _get(document, "bandwidth", key)
    ]
    for dtype, entry in (_get(document, "compute", "dtypes") or {}).items():
        if entry.get("above_theoretical"):
            notes.append(
                f"{dtype}: the measured GEMM peak is {entry.get('best_over_theoretical', 0):.2f}× "
                "the theoretical one: the theoretical model (clock, FMA units) is too low"
            )
    gpu = _get(document, "identity", "gpu") or {}
    cpu = _get(document, "identity", "cpu") or {}
    threads = _get(document, "provenance", "threads", "threads")
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
        stream_runner=str(_get(document, "bandwidth", "runner") or ""),
        theoretical_bandwidth_Bps=_number(
            theory.get("bandwidth_Bps"), "theoretical.bandwidth_Bps", source
        ),
        theoretical_bandwidth_source=str(theory.get("bandwidth_source") or ""),
        measured_ridge={d: (r or {}).get("measured_flop_per_byte") for d, r in ridges.items()},
        theoretical_ridge={
            d: (r or {}).get("theoretical_flop_per_byte") for d, r in ridges.items()
        },
        notes=tuple(notes),
    )


def read_hardware(path: str | os.PathLike | None) -> HardwareSummary | None:
    """The summary of the hardware JSON at `path`; None when no path is given."""
    if path is None:
        return None
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    return hardware_from_document(document, str(path))


@dataclass(frozen=True)
class Roofs:
    """The roofline's limits (NaN/None where unknown) and where they came from."""

    peak_flops_per_s: float
    bandwidth_Bps: float
    theoretical_peak_flops_per_s: float | None
    theoretical_bandwidth_Bps: float | None
    source: str

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.peak_flops_per_s / self.bandwidth_Bps

    @property
    def known(self) -> bool:
        return math.isfinite(self.peak_flops_per_s) and math.isfinite(self.bandwidth_Bps)


def roofs(stats: xr.Dataset, hardware: HardwareSummary | None) -> Roofs:
    """The measured roofs that the efficiencies in `stats` were computed against, or, when
    stats has none, the hardware file's measured float32 peak and STREAM triad."""
    peak = float(stats.attrs.get("roofline_peak_flops_per_s", math.nan))
    bandwidth = float(stats.attrs.get("roofline_bandwidth_Bps", math.nan))
    source = "stats.nc (the limits the efficiencies use)"
    if not (math.isfinite(peak) and math.isfinite(bandwidth)) and hardware is not None:
        peak = hardware.measured_flops_per_s.get(ROOF_DTYPE) or math.nan
        bandwidth = hardware.measured_bandwidth_Bps or math.nan
        source = f"{hardware.source} (stats.nc has no roofline limits)"
    return Roofs(
        peak_flops_per_s=peak,
        bandwidth_Bps=bandwidth,
        theoretical_peak_flops_per_s=(
            hardware.theoretical_flops_per_s.get(ROOF_DTYPE) if hardware else None
        ),
        theoretical_bandwidth_Bps=hardware.theoretical_bandwidth_Bps if hardware else None,
        source=source,
    )


# ---- stats.nc helpers ---------------------------------------------------------------------


def variants(stats: xr.Dataset, compiled_only: bool = False) -> list[tuple[str, str]]:
    """(framework, mode) pairs with at least one cell (ok or failed), in the stats' order."""
    status = stats["status"].transpose(*CELL_DIMS).values
    present = []
    for f, framework in enumerate(stats["framework"].values.tolist()):
        for m, mode in enumerate(stats["mode"].values.tolist()):
            if compiled_only and mode == EAGER_MODE:
                continue
            if (status[f, m] != "absent").any():
                present.append((framework, mode))
    return present


def cell_name(framework: str, mode: str, arch: str, batch: int) -> str:
    return f"{framework}/{mode}/{arch}/b{batch}"


def cells_where(stats: xr.Dataset, mask: np.ndarray) -> list[tuple[str, str, str, int]]:
    """(framework, mode, arch, batch) where `mask` (CELL_DIMS order) holds."""
    coords = [stats[d].values.tolist() for d in CELL_DIMS]
    return [
        (coords[0][f], coords[1][m], coords[2][a], int(coords[3][b]))
        for f, m, a, b in zip(*np.nonzero(mask), strict=True)
    ]


def failed_cells(
    stats: xr.Dataset, batches: Iterable[int] | None = None
) -> list[tuple[str, str, str, int]]:
    """The failed cells, optionally only at `batches`."""
    failed = cells_where(stats, stats["status"].transpose(*CELL_DIMS).values == "failed")
    if batches is not None:
        keep = set(batches)
        failed = [cell for cell in failed if cell[3] in keep]
    return failed


def value(stats: xr.Dataset, name: str, framework: str, mode: str, arch: str, batch: int) -> Any:
    return stats[name].sel(framework=framework, mode=mode, arch=arch, batch=batch).item()


@dataclass(frozen=True)
class FigureInputs:
    """What every inference figure may read; settings default to those stats.nc records."""

    stats: xr.Dataset
    hardware: HardwareSummary | None = None
    table_batch: int | None = None
    cv_threshold_pct: float | None = None

    @property
    def wanted_batch(self) -> int:
        return int(self.table_batch or self.stats.attrs.get("stats_table_batch", 32))

    @property
    def batch(self) -> int:
        """The table batch, or the measured batch nearest to it (on a log scale)."""
        wanted = self.wanted_batch
        batches = [int(b) for b in self.stats["batch"].values]
        return min(batches, key=lambda b: (abs(math.log(b / wanted)), -b))

    def batch_note(self) -> str:
        if self.batch == self.wanted_batch:
            return ""
        return (
            f"Batch {self.wanted_batch} (the table batch) was not measured; "
            f"batch {self.batch} is shown."
        )

    @property
    def threshold_pct(self) -> float:
        return float(self.cv_threshold_pct or self.stats.attrs.get("stats_cv_threshold_pct", 10))


def failed_note(stats: xr.Dataset, batches: Iterable[int] | None, what: str = "Not drawn") -> str:
    """The figure note naming the failed cells it leaves out ('' when none)."""
    names = [cell_name(*cell) for cell in failed_cells(stats, batches)]
    if not names:
        return ""
    return f"{what} (the cell failed; see the report's failed section): {listed(names)}."


def listed(names: Sequence[str], limit: int = 12) -> str:
    """'a, b, c' with at most `limit` names, then '+N more'."""
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")


def series(stats: xr.Dataset, name: str, framework: str, mode: str) -> np.ndarray:
    """One variant's values of `name` over the remaining dims."""
    return stats[name].sel(framework=framework, mode=mode).values
