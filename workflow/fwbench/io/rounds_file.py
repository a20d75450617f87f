"""The rounds file: results/rounds/<system>/<arch>/b<batch>/set<k>.nc, the paired samples of
every variant of one (architecture, batch) measured in alternation by one set of fresh worker
processes (fwbench.measure.rounds); a row's sets are read as one table (rounds_by_system).

Dimensions: `variant` (framework/mode, and /precision where it is not float32; coords
`framework`, `mode`, `version`, `precision`: a file without it measured float32; `replica`: 1
for the A/A control's second worker of one variant, named with " (A/A)", schema 3), `set` (a set of
fresh worker processes, one per variant; coordinate: the set's index; one per file since
schema 2, all of a row's in a schema-1 file), `round` (each variant takes one turn per round, in an
order shuffled every round), `sample` (a turn's samples, back to back: `after_switch` right
after another variant ran, then `warm`).

Variables: declared in fwbench.io.variables.ROUNDS_FILE (named as `R.<name>`): `latency_s`
(variant, set, round, sample: seconds per call), `position`, `calls_per_sample`, `setup_s`,
`first_call_warm_s` (a fresh worker's first call from a warm compile cache; `first_call_s`
before schema 3, renamed on reading: the cells' `first_call_s` is the cold one), `status`,
`error_message`, `start_utc`. Attributes: system,
arch, batch, rounds, seed (the set's order seed: drawn fresh by each job unless config
rounds.order_seed fixes it), round_wall_s (the median round's wall time at the coordinator),
schema_version. The cells own the absolute medians; this file owns the ratios at its batch
(fwbench.analysis.rounds).
"""

from __future__ import annotations

import math
import os

import numpy as np
import xarray as xr

from fwbench.io.atomic import write_netcdf
from fwbench.io.common import read_versioned_netcdf, with_schema_version
from fwbench.io.variables import R
from fwbench.precisions import FLOAT32

SCHEMA_VERSION = 3  # 2: one set per file, `set` a coordinate; 3: first_call_warm_s
WHAT = "rounds file"
RERUN = "the rounds rule (snakemake --forcerun rounds)"
AFTER_SWITCH, WARM = "after_switch", "warm"
OLD_FIRST_CALL = "first_call_s"  # schema 1 and 2's name of first_call_warm_s
# The A/A control (config rounds.aa_control): one variant of the row measured by a second,
# independent worker; coordinate `replica` (variant: 1 for that worker; absent before schema 3).
REPLICA = "replica"
AA_MARK = " (A/A)"
SAMPLES = (AFTER_SWITCH, WARM)


def variant_name(framework: str, mode: str, precision: str = FLOAT32, replica: int = 0) -> str:
    """framework/mode, and the precision where it is not float32 (as CellKey names a cell);
    the A/A control's second worker marked."""
    name = f"{framework}/{mode}" if precision == FLOAT32 else f"{framework}/{mode}/{precision}"
    return name + AA_MARK if replica else name


def variant_keys(ds: xr.Dataset) -> list[tuple[str, str, str]]:
    """Each variant's (framework, mode, precision); the A/A control's second worker's mode
    marked (AA_MARK), so it is a variant of its own to the analysis."""
    replicas = ds[REPLICA].values.tolist() if REPLICA in ds.coords else [0] * ds.sizes["variant"]
    modes = [
        m + AA_MARK if r else m for m, r in zip(ds["mode"].values.tolist(), replicas, strict=True)
    ]
    return list(zip(ds["framework"].values.tolist(), modes, variant_precisions(ds), strict=True))


def replicated(mode: str) -> str:
    """The mode an A/A control's marked mode replicates (itself where unmarked)."""
    return mode.removesuffix(AA_MARK)


def variant_precisions(ds: xr.Dataset) -> list[str]:
    """Each variant's precision (float32 in a file written before the coordinate)."""
    if "precision" not in ds.coords:
        return [FLOAT32] * ds.sizes["variant"]
    return [str(p) for p in ds["precision"].values]


def write_rounds(ds: xr.Dataset, path: str | os.PathLike) -> None:
    write_netcdf(with_schema_version(ds, SCHEMA_VERSION), path)


def read_rounds(path: str | os.PathLike) -> xr.Dataset:
    """A rounds file of any readable schema, with schema 3's names."""
    ds = read_versioned_netcdf(path, (1, 2, SCHEMA_VERSION), WHAT, None, RERUN)
    if OLD_FIRST_CALL in ds:
        ds = ds.rename({OLD_FIRST_CALL: R.first_call_warm_s})
    return ds


def joined_sets(sets: list[xr.Dataset]) -> xr.Dataset:
    """One row's sets as one table along `set`, in the sets' order; round_wall_s their median."""
    ds = xr.concat(sets, dim="set", combine_attrs="drop_conflicts")
    if "set" in ds.coords:
        ds = ds.sortby("set")
    walls = [s.attrs.get("round_wall_s", math.nan) for s in sets]
    ds.attrs["round_wall_s"] = float(np.nanmedian(walls)) if np.isfinite(walls).any() else math.nan
    return ds


def joined_rows(paths: list[str]) -> list[xr.Dataset]:
    """Every row's (system, architecture, batch) sets, each row joined into one table."""
    rows: dict[tuple[str, str, int], list[xr.Dataset]] = {}
    for path in paths:
        ds = read_rounds(path)
        key = (str(ds.attrs["system"]), str(ds.attrs["arch"]), int(ds.attrs["batch"]))
        rows.setdefault(key, []).append(ds)
    return [joined_sets(sets) for sets in rows.values()]


def rounds_by_system(paths: list[str]) -> dict[str, list[xr.Dataset]]:
    """The rows of joined_rows grouped by the system they were measured on."""
    found: dict[str, list[xr.Dataset]] = {}
    for row in joined_rows(paths):
        found.setdefault(str(row.attrs["system"]), []).append(row)
    return found
