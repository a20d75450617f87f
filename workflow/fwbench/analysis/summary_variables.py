"""The per-cell variables of stats.nc, with their units and descriptions, and stats.csv: the
same variables as one row per cell (the files: fwbench.io.stats_file)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.analysis import attribution
from fwbench.analysis.attribution import dominant_part
from fwbench.analysis.flags import FLAG_MEANINGS
from fwbench.analysis.machine import noise_source
from fwbench.analysis.roofline import RooflineMetrics
from fwbench.io.cell_file import ATTRIBUTION_UNITS
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT

# The per-cell numeric variables of stats.nc, with units; also columns of stats.csv.
CELL_UNITS = {
    "n": "1",
    "median_s": "s",
    "mean_s": "s",
    "std_s": "s",
    "cv_pct": "%",
    "iqr_s": "s",
    "min_s": "s",
    "p95_s": "s",
    "median_ci_low_s": "s",
    "median_ci_high_s": "s",
    "calls_per_sample": "1",
    "first_call_s": "s",
    "first_call_warm_s": "s",
    "import_s": "s",
    "build_s": "s",
    "export_s": "s",
    "compile_overhead_s": "s",
    "null_call_s": "s",
    "flops": "FLOP",
    "bytes": "B",
    "working_set_bytes": "B",
    "recurrent_steps": "1",
    "arithmetic_intensity": "FLOP/B",
    "achieved_flops_per_s": "FLOP/s",
    "lower_bound_s": "s",
    "efficiency": "1",
    "dram_lower_bound_s": "s",
    "dram_efficiency": "1",
    "speedup_vs_eager": "1",
    "speedup_ci_low": "1",
    "speedup_ci_high": "1",
    "break_even_iterations": "1",
    "speedup_vs_best": "1",
    "speedup_vs_best_ci_low": "1",
    "speedup_vs_best_ci_high": "1",
    "compiled": "1",
    "contended": "1",
    "busy_cpu_other": "cores",
    "cpu_pressure": "1",
    "process_sigma": "1",
    "process_count": "1",
    "slow_machine": "1",
    "canary_factor": "1",
    "canary_read_factor": "1",
    "on_cpu_median": "1",
    "canary_cv_pct": "%",
    "canary_share": "1",
    "slow_samples": "1",
    "slow_samples_dropped": "1",
    "canary_rho": "1",
    "slow_processes_machine": "1",
    "slow_processes_own": "1",
    **{name: ATTRIBUTION_UNITS[name] for name in attribution.FROM_CELLS},
    **attribution.UNITS,
}
# The ones taken from the aggregate as they are (NaN where a cell did not succeed).
FROM_CELLS = (
    "calls_per_sample",
    "first_call_s",
    "first_call_warm_s",
    "import_s",
    "build_s",
    "export_s",
    "null_call_s",
    "flops",
    "bytes",
    "working_set_bytes",
    "recurrent_steps",
    "compiled",
    "contended",
    "busy_cpu_other",
    "cpu_pressure",
    "slow_machine",
    "canary_factor",
    "canary_read_factor",
    "on_cpu_median",
    "canary_cv_pct",
    "canary_share",
    "slow_samples",
    *attribution.FROM_CELLS,
)
# The per-cell text variables, with descriptions; the first columns of stats.csv.
CELL_TEXT = {
    "status": "'ok' | 'failed' | 'absent' (no cell for this position)",
    "error_type": "exception class of a failed cell",
    "error": "why the cell failed",
    "bound": "'compute' or 'memory': which roof sets the cache-aware lower bound",
    "memory_level": "the memory level whose bandwidth bounds the cell: the smallest its working"
    " set fits in ('' where the working set or the levels are unknown)",
    "noise": "whose the cell's noise is: 'machine' (a process ran on a slow machine, or the "
    "samples follow the speed canary: Spearman ρ ≥ 0.5) or 'framework' (its own); '' without "
    "a canary",
    "flags": "comma-separated: " + ", ".join(FLAG_MEANINGS),
    "eager_ops": "ops a compiled mode left to the framework's eager kernels (torch inductor)",
    "attribution": "what the attribution pass's profiler saw and could not see, or why no pass ran",
    "dominant_part": "the largest of the four parts of the median (fwbench.analysis.attribution)",
}


def cell_values(bench: xr.Dataset, name: str) -> np.ndarray:
    """A per-cell variable of the aggregate in CELL_DIMS order (NaN when it is missing)."""
    if name not in bench:
        return np.full(tuple(bench.sizes[d] for d in CELL_DIMS), np.nan)
    return bench[name].transpose(*CELL_DIMS).values


def text_variables(
    bench: xr.Dataset,
    ok: np.ndarray,
    metrics: RooflineMetrics,
    flags: np.ndarray,
    cells: dict[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """The per-cell text of stats.nc (CELL_TEXT), in the order the file holds them."""
    return {
        "status": cell_values(bench, "status").astype(object),
        "error_type": cell_values(bench, "error_type").astype(object),
        "error": cell_values(bench, "error").astype(object),
        "bound": metrics.bound,
        "memory_level": np.where(ok, metrics.memory_level, "").astype(object),
        "noise": noise_source(cells["canary_rho"], cells["slow_machine"], ok),
        "eager_ops": text_of(bench, "eager_ops", ok),
        "attribution": text_of(bench, "attribution", ok),
        "dominant_part": dominant_part(cells),
        "flags": flags,
    }


def text_of(bench: xr.Dataset, name: str, ok: np.ndarray) -> np.ndarray:
    """A per-cell text of the aggregate for succeeded cells ('' elsewhere, or where an older
    aggregate lacks it)."""
    if name not in bench:
        return np.full(ok.shape, "", dtype=object)
    return np.where(ok, cell_values(bench, name), "").astype(object)


def cell_variables(
    bench: xr.Dataset, cells: dict[str, np.ndarray], text: dict[str, np.ndarray]
) -> dict[str, Any]:
    """stats.nc's per-cell variables: the numbers with their units (CELL_UNITS), then the
    text with its descriptions (CELL_TEXT), then the aggregate's framework_version."""
    data_vars: dict[str, Any] = {
        name: (CELL_DIMS, cells[name], {"units": unit}) for name, unit in CELL_UNITS.items()
    }
    data_vars |= {
        name: (CELL_DIMS, values, {"description": CELL_TEXT[name]}) for name, values in text.items()
    }
    if "framework_version" in bench:
        data_vars["framework_version"] = bench["framework_version"]
    return data_vars


def tidy(summary: xr.Dataset) -> pd.DataFrame:
    """stats.csv: one row per measured or failed cell (absent positions left out), with its
    system first where there are systems and framework_version after framework."""
    frame = summary[list(CELL_TEXT) + list(CELL_UNITS)].to_dataframe().reset_index()
    frame = frame[frame["status"] != STATUS_ABSENT]
    if "framework_version" in summary:
        versions = summary["framework_version"].to_dataframe().reset_index()
        keys = [d for d in summary["framework_version"].dims]
        frame = frame.merge(versions, on=keys, how="left")
        columns = list(frame.columns)
        columns.remove("framework_version")
        columns.insert(columns.index("framework") + 1, "framework_version")
        frame = frame[columns]
    return frame.reset_index(drop=True)
