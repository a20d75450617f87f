"""Statistics of one system's aggregate: stats.nc, stats.csv and <system>/tables/*.md.

Per cell (framework, mode, arch, batch), from the warm iterations: median, mean, σ (ddof 1),
CV %, IQR, min, p95 and a bootstrap CI of the median (fwbench.analysis.estimators); the
roofline metrics (fwbench.analysis.roofline); compile overhead (first call − median). Per
compiled mode against the same framework's eager cell: speedup (eager median / compiled
median) with a bootstrap CI of that ratio, and the break-even iteration count
(fwbench.analysis.speedups). Per (arch, batch): the winners (fwbench.analysis.winners). Flags:
`high_cv` (CV above the threshold), `contended` (the machine was busy during the cell),
`invalid_fast` (faster than the roofline allows), `not_compiled` (a compiled mode that the
framework ran eagerly). Failed cells stay in every output as failed rows with their error.

Each cell's resampling is seeded from (seed, the cell's name), so a CI does not depend on the
other cells.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.analysis.aggregate import one_system
from fwbench.analysis.estimators import cell_median_cis, ci_level, describe
from fwbench.analysis.flags import (
    FLAG_CONTENDED,
    FLAG_HIGH_CV,
    FLAG_MEANINGS,
    FLAG_NODE_MISMATCH,
    FLAG_NOT_COMPILED,
    FLAG_PARTIAL,
    UNTRUSTED_FLAGS,
    flag_cells,
    has_text,
    node_mismatch,
)
from fwbench.analysis.processes import pool, processes
from fwbench.analysis.roofline import (
    INVALID_FAST,
    ROOFLINE_VARIABLES,
    HardwareLimits,
    levels_to_json,
    roofline,
)
from fwbench.analysis.speedups import compile_speedups
from fwbench.analysis.winners import SCOPES, winner_variables
from fwbench.io.atomic import write_netcdf, write_text
from fwbench.io.dims import CELL_DIMS, EAGER_MODE, STATUS_ABSENT, STATUS_OK

# The per-cell variables of stats.nc, with units; these are also the columns of stats.csv.
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
    "compile_overhead_s": "s",
    "null_call_s": "s",
    "flops": "FLOP",
    "bytes": "B",
    "working_set_bytes": "B",
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
    "compiled": "1",
    "contended": "1",
    "busy_cpu_other": "cores",
    "cpu_pressure": "1",
}
_FROM_CELLS = (
    "calls_per_sample",
    "first_call_s",
    "null_call_s",
    "flops",
    "bytes",
    "working_set_bytes",
    "compiled",
    "contended",
)
CELL_TEXT = {
    "status": "'ok' | 'failed' | 'absent' (no cell for this position)",
    "error_type": "exception class of a failed cell",
    "error": "why the cell failed",
    "bound": "'compute' or 'memory': which roof sets the cache-aware lower bound",
    "memory_level": "the memory level whose bandwidth bounds the cell: the smallest its working"
    " set fits in ('' where the working set or the levels are unknown)",
    "flags": "comma-separated: " + ", ".join(FLAG_MEANINGS),
    "eager_ops": "ops a compiled mode left to the framework's eager kernels (torch inductor)",
}


@dataclass(frozen=True)
class StatsSettings:
    """The config's `stats` section (defaults as in the schema) and the run's seed."""

    cv_threshold_pct: float = 10.0
    alpha: float = 0.01
    min_effect_pct: float = 5.0
    confidence: float = 0.95
    bootstrap_resamples: int = 2000
    table_batch: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "cv_threshold_pct": self.cv_threshold_pct > 0,
            "alpha": 0 < self.alpha < 1,
            "min_effect_pct": self.min_effect_pct >= 0,
            "confidence": 0 < self.confidence < 1,
            "bootstrap_resamples": self.bootstrap_resamples >= 1,
            "table_batch": self.table_batch >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"stats.{name}={getattr(self, name)!r} is out of range")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], seed: int = 0) -> StatsSettings:
        unknown = set(values) - {f for f in cls.__dataclass_fields__ if f != "seed"}
        if unknown:
            raise ValueError(f"unknown stats settings: {', '.join(sorted(unknown))}")
        return cls(**values, seed=seed)


# --- the summary -----------------------------------------------------------------------------


def _cell_values(bench: xr.Dataset, name: str) -> np.ndarray:
    """A per-cell variable of the aggregate in CELL_DIMS order (NaN when it is missing)."""
    if name not in bench:
        return np.full(tuple(bench.sizes[d] for d in CELL_DIMS), np.nan)
    return bench[name].transpose(*CELL_DIMS).values


def summarize(bench: xr.Dataset, limits: HardwareLimits, settings: StatsSettings) -> xr.Dataset:
    """stats.nc as a Dataset: per-cell statistics, speedups, winners; provenance in attrs.
    A cell's processes are pooled (fwbench.analysis.processes); with more than one, the
    medians' CIs resample processes first. Several systems: by_system.summarize_systems."""
    bench = one_system(bench)  # raises for several: summarize them one at a time
    process_count = processes(bench)
    bench = pool(bench)
    coords = tuple(bench[d].values.tolist() for d in CELL_DIMS)
    status = _cell_values(bench, "status").astype(object)
    ok = status == STATUS_OK
    latency = bench["latency_s"].transpose(*CELL_DIMS, "repeat").values.copy()
    latency[~ok] = np.nan  # a failed cell's partial timings are not statistics

    cells: dict[str, np.ndarray] = describe(latency)
    by_process = None
    if process_count > 1:
        by_process = bench["latency_by_process_s"].transpose(*CELL_DIMS, "process", "iteration")
        by_process = by_process.values.copy()
        by_process[~ok] = np.nan  # as for the pooled timings
    names = np.array(["/".join(map(str, key)) for key in itertools.product(*coords)])
    cells["median_ci_low_s"], cells["median_ci_high_s"] = cell_median_cis(
        latency,
        by_process,
        ok,
        names.reshape(ok.shape),
        settings.confidence,
        settings.bootstrap_resamples,
        settings.seed,
    )
    for name in (*_FROM_CELLS, "busy_cpu_other", "cpu_pressure"):
        cells[name] = np.where(ok, _cell_values(bench, name), np.nan)
    cells["compile_overhead_s"] = cells["first_call_s"] - cells["median_s"]
    metrics = roofline(
        cells["flops"], cells["bytes"], cells["working_set_bytes"], cells["median_s"], limits
    )
    for name in ROOFLINE_VARIABLES:
        cells[name] = getattr(metrics, name)
    cells |= compile_speedups(
        latency,
        cells["median_s"],
        cells["first_call_s"],
        coords,
        confidence=settings.confidence,
        resamples=settings.bootstrap_resamples,
        seed=settings.seed,
        by_process=by_process,
    )

    is_compiled_mode = np.array([m != EAGER_MODE for m in coords[1]])[None, :, None, None]
    text = {
        "status": status,
        "error_type": _cell_values(bench, "error_type").astype(object),
        "error": _cell_values(bench, "error").astype(object),
        "bound": metrics.bound,
        "memory_level": np.where(ok, metrics.memory_level, "").astype(object),
        "eager_ops": np.where(ok, _cell_values(bench, "eager_ops"), "").astype(object)
        if "eager_ops" in bench
        else np.full(ok.shape, "", dtype=object),
        "flags": flag_cells(
            {
                FLAG_HIGH_CV: cells["cv_pct"] > settings.cv_threshold_pct,
                FLAG_CONTENDED: cells["contended"] == 1,
                INVALID_FAST: metrics.invalid_fast,
                FLAG_NOT_COMPILED: ok & is_compiled_mode & (cells["compiled"] == 0),
                FLAG_PARTIAL: ok & is_compiled_mode & has_text(bench, "eager_ops"),
                FLAG_NODE_MISMATCH: ok & node_mismatch(bench, limits.node),
            }
        ),
    }
    data_vars: dict[str, Any] = {
        name: (CELL_DIMS, cells[name], {"units": unit}) for name, unit in CELL_UNITS.items()
    }
    data_vars |= {
        name: (CELL_DIMS, values, {"description": CELL_TEXT[name]}) for name, values in text.items()
    }
    if "framework_version" in bench:
        data_vars["framework_version"] = bench["framework_version"]
    # A flagged cell's timings are not trusted to decide a winner (not_compiled is a fact about
    # the mode, not about the measurement: such a cell competes, flagged in its own table).
    flagged = np.array(
        [bool(set(flags.split(",")) & set(UNTRUSTED_FLAGS)) for flags in text["flags"].ravel()]
    ).reshape(ok.shape)
    data_vars |= winner_variables(
        latency,
        ok,
        flagged,
        coords,
        settings.alpha,
        settings.min_effect_pct,
        by_process,
        settings.bootstrap_resamples,
        settings.seed,
    )

    summary = xr.Dataset(data_vars, coords={d: bench[d].values for d in CELL_DIMS})
    summary = summary.assign_coords(scope=list(SCOPES))
    summary.attrs.update(bench.attrs)
    summary.attrs |= {f"stats_{key}": value for key, value in asdict(settings).items()}
    summary.attrs |= {
        "roofline": limits.describe(),
        "roofline_peak_flops_per_s": limits.peak_flops_per_s,
        "roofline_bandwidth_Bps": limits.bandwidth_Bps,
        "roofline_bf16_peak_flops_per_s": limits.bf16_peak_flops_per_s,
        "roofline_levels": levels_to_json(limits.levels),
        "roofline_ridge_flop_per_byte": limits.ridge_flop_per_byte,
        "roofline_reported_ridge_flop_per_byte": limits.reported_ridge_flop_per_byte,
        "roofline_node": json.dumps(limits.node, sort_keys=True),
        "flags": "; ".join(f"{flag}: {meaning}" for flag, meaning in FLAG_MEANINGS.items()),
        "bootstrap": "percentile method, each cell seeded from (stats_seed, cell name)",
        "processes": process_count,
        "median_ci_level": ci_level(process_count),
        "title": "fwbench: statistics, roofline efficiency, compile speedups and winners",
    }
    return summary


# --- outputs ---------------------------------------------------------------------------------


def tidy(summary: xr.Dataset) -> pd.DataFrame:
    """stats.csv: one row per measured or failed cell (absent positions left out), with its
    system first where there are systems."""
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


def write_outputs(
    summary: xr.Dataset,
    stats_nc: str | os.PathLike,
    stats_csv: str | os.PathLike,
) -> None:
    """Write stats.nc and stats.csv (the tables: fwbench.present.tables.write_tables)."""
    write_netcdf(summary, stats_nc)
    write_text(tidy(summary).to_csv(index=False), stats_csv)
