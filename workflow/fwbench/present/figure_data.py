"""What the figures read from the result files, without matplotlib.

- `roofs`: the compute and bandwidth roofs the roofline figure draws: the ones stats.nc used for
  the efficiency (its `roofline_*` attributes, memory levels included); the vendor or ISA
  figures beside them from the hardware file.
- `FigureInputs`: what every inference figure reads: one system's statistics through their view
  (fwbench.io.stats_file.StatsView), its hardware file and the merged equivalence checks.
- `precision_accuracy`: one system's check rows in one precision, as the precision figure and
  the report's accuracy table read them.
- `batch_note`, `failed_note`, `listed`: the notes every figure and table words the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.analysis.roofline import MemoryLevel, levels_from_json
from fwbench.io.hardware_file import HardwareRecord
from fwbench.io.stats_file import StatsView

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


def roofs(view: StatsView, hardware: HardwareRecord | None) -> Roofs:
    """The measured roofs that the efficiencies in stats.nc were computed against (NaN where
    the hardware file had none), with the theoretical ones from the hardware file."""
    attrs = view.attrs
    return Roofs(
        peak_flops_per_s=float(attrs["roofline_peak_flops_per_s"]),
        bandwidth_Bps=float(attrs["roofline_bandwidth_Bps"]),
        theoretical_peak_flops_per_s=(
            hardware.theoretical_flops_per_s.get(ROOF_DTYPE) if hardware else None
        ),
        theoretical_bandwidth_Bps=hardware.theoretical_bandwidth_Bps if hardware else None,
        source="stats.nc (the limits the efficiencies use)",
        bf16_peak_flops_per_s=float(attrs["roofline_bf16_peak_flops_per_s"]),
        levels=levels_from_json(attrs["roofline_levels"]),
    )


@dataclass(frozen=True)
class FigureInputs:
    """What every inference figure may read: one system's statistics, hardware file and
    equivalence checks (results/checks/equivalence.csv, every system's)."""

    view: StatsView
    hardware: HardwareRecord | None = None
    equivalence: pd.DataFrame | None = None

    @property
    def stats(self) -> xr.Dataset:
        return self.view.ds

    @property
    def batch(self) -> int:
        """The table batch (fwbench.analysis.stats.table_batch)."""
        return self.view.table_batch

    def batch_note(self) -> str:
        return batch_note(self.view)

    @property
    def threshold_pct(self) -> float:
        return float(self.view.attrs["stats_cv_threshold_pct"])


def batch_note(view: StatsView) -> str:
    """'' at the configured table batch, else which batch is shown instead."""
    if view.table_batch == view.wanted_batch:
        return ""
    return (
        f"Batch {view.wanted_batch} (the table batch) was not measured; "
        f"batch {view.table_batch}, the nearest measured, is shown."
    )


def failed_note(view: StatsView, batches: Iterable[int] | None, what: str = "Not drawn") -> str:
    """The figure note naming the failed cells it leaves out ('' when none)."""
    names = [key.name for key in view.failed(batches)]
    if not names:
        return ""
    return f"{what} (the cell failed; see the report's failed section): {listed(names)}."


def precision_accuracy(
    rows: pd.DataFrame | None, system: str | None, precision: str
) -> pd.DataFrame | None:
    """The equivalence rows of `system` (every row where the file has no systems) in
    `precision`, with `passed` as a bool and `saturated_share` (a static quantization's stored
    activation values at a limit of their range, of those stored; NaN where none was stored or
    the file predates the count); None where the file holds no such rows."""
    if rows is None or "precision" not in rows:
        return None
    rows = rows[rows["precision"] == precision]
    if system is not None and "system" in rows:
        rows = rows[rows["system"] == system]
    if rows.empty:
        return None
    counts = [_numbers(rows, column) for column in ("saturated", "saturated_of")]
    share = (counts[0] / counts[1].where(counts[1] > 0)).astype(float)
    return rows.assign(passed=rows["pass"].astype(str).str.lower() == "true", saturated_share=share)


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers, NaN where it is empty or absent."""
    if column not in rows:
        return pd.Series(np.nan, index=rows.index)
    return pd.to_numeric(rows[column], errors="coerce")


def listed(names: Sequence[str], limit: int = 12) -> str:
    """'a, b, c' with at most `limit` names, then '+N more'."""
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")
