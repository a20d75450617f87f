"""The per-cell variables of stats.nc, with their units and descriptions, and stats.csv: the
same variables as one row per cell (the files: fwbench.io.stats_file)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.analysis.attribution import dominant_part
from fwbench.analysis.machine import noise_source
from fwbench.analysis.roofline import RooflineMetrics
from fwbench.analysis.speedups import TEXT as SPEEDUP_TEXT
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT
from fwbench.io.variables import (
    BY_NAME,
    FROM_AGGREGATE,
    STATS_NUMBERS,
    STATS_TEXT_MEANINGS,
    Pool,
    V,
)

# The per-cell numbers of stats.nc with their units, and its text with descriptions, in the
# order stats.csv's columns take them (declared in fwbench.io.variables).
CELL_UNITS = STATS_NUMBERS
CELL_TEXT = STATS_TEXT_MEANINGS
# The ones taken from the pooled aggregate as they are (NaN where a cell did not succeed).
FROM_CELLS = FROM_AGGREGATE


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
    """The per-cell text of stats.nc (CELL_TEXT), in the order the file holds them: the
    aggregate's (status, failure text and nodes of every cell, the rest of the cells that ran)
    and the statistics' own."""
    computed = {
        V.bound: metrics.bound,
        V.memory_level: np.where(ok, metrics.memory_level, "").astype(object),
        V.noise: noise_source(cells[V.canary_rho], cells[V.slow_machine], ok),
        V.dominant_part: dominant_part(cells),
        **{name: cells[name] for name in SPEEDUP_TEXT},
        V.flags: flags,
    }
    every_cell = (Pool.STATUS, Pool.FAILURE_TEXT, Pool.NODES)
    return {
        name: computed[name]
        if name in computed
        else cell_values(bench, name).astype(object)
        if BY_NAME[name].pool in every_cell
        else text_of(bench, name, ok)
        for name in CELL_TEXT
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
    text with its descriptions (CELL_TEXT), then the aggregate's framework_version and
    versions (every distribution's, JSON)."""
    data_vars: dict[str, Any] = {
        name: (CELL_DIMS, cells[name], {"units": unit}) for name, unit in CELL_UNITS.items()
    }
    data_vars |= {
        name: (CELL_DIMS, values, {"description": CELL_TEXT[name]}) for name, values in text.items()
    }
    for name in ("framework_version", "versions"):
        if name in bench:
            data_vars[name] = bench[name]
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
