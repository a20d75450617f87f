"""What the figures, the tables and the report read from the result files, without matplotlib.

- `roofs`: the compute and bandwidth roofs the roofline figure draws: the ones stats.nc used for
  the efficiency (its `roofline_*` attributes, memory levels included) when they are numbers,
  else the hardware file's peak and STREAM triad (DRAM alone).
- helpers over stats.nc (dims framework, mode, arch, batch; see fwbench.analysis.stats): the
  variants present, cell names and values, the failed cells.
- `FigureInputs`: what every inference figure reads, with the settings stats.nc records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from fwbench.analysis.roofline import MemoryLevel, dram_only, levels_from_json
from fwbench.io.dims import CELL_DIMS, EAGER_MODE, STATUS_ABSENT, STATUS_FAILED
from fwbench.present.hardware_summary import HardwareSummary

ROOF_DTYPE = "float32"  # the models run in float32


@dataclass(frozen=True)
class Roofs:
    """The roofline's limits (NaN/None where unknown) and where they came from."""

    peak_flops_per_s: float
    bandwidth_Bps: float
    theoretical_peak_flops_per_s: float | None
    theoretical_bandwidth_Bps: float | None
    source: str
    bf16_peak_flops_per_s: float = math.nan
    levels: tuple[MemoryLevel, ...] = ()  # smallest first; DRAM last

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
    bf16_peak = float(stats.attrs.get("roofline_bf16_peak_flops_per_s", math.nan))
    levels = levels_from_json(stats.attrs.get("roofline_levels", "[]"))
    source = "stats.nc (the limits the efficiencies use)"
    if not (math.isfinite(peak) and math.isfinite(bandwidth)) and hardware is not None:
        peak = hardware.measured_flops_per_s.get(ROOF_DTYPE) or math.nan
        bandwidth = hardware.measured_bandwidth_Bps or math.nan
        bf16_peak = hardware.measured_flops_per_s.get("bfloat16") or math.nan
        levels = dram_only(bandwidth)
        source = f"{hardware.source} (stats.nc has no roofline limits)"
    return Roofs(
        peak_flops_per_s=peak,
        bandwidth_Bps=bandwidth,
        theoretical_peak_flops_per_s=(
            hardware.theoretical_flops_per_s.get(ROOF_DTYPE) if hardware else None
        ),
        theoretical_bandwidth_Bps=hardware.theoretical_bandwidth_Bps if hardware else None,
        source=source,
        bf16_peak_flops_per_s=bf16_peak,
        levels=levels,
    )


# ---- stats.nc helpers ---------------------------------------------------------------------


def variants(data: xr.Dataset, compiled_only: bool = False) -> list[tuple[str, str]]:
    """(framework, mode) pairs with at least one cell or run (ok or failed), in the data's
    order; `data` is stats.nc or the stacked training runs."""
    status = data["status"].transpose("framework", "mode", ...).values
    present = []
    for f, framework in enumerate(data["framework"].values.tolist()):
        for m, mode in enumerate(data["mode"].values.tolist()):
            if compiled_only and mode == EAGER_MODE:
                continue
            if (status[f, m] != STATUS_ABSENT).any():
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
    failed = cells_where(stats, stats["status"].transpose(*CELL_DIMS).values == STATUS_FAILED)
    if batches is not None:
        keep = set(batches)
        failed = [cell for cell in failed if cell[3] in keep]
    return failed


def cell_value(stats: xr.Dataset, name: str, cell: tuple[str, str, str, int]) -> Any:
    """The value of `name` at one (framework, mode, arch, batch) cell."""
    framework, mode, arch, batch = cell
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
