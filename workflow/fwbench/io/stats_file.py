"""The statistics, results/summary/stats.nc and stats.csv, computed by
fwbench.analysis.stats (one system) and fwbench.analysis.by_system (every system stacked);
their version, writers and readers.

stats.nc: dimensions system, framework, mode, arch, batch, scope for the winners, and
comparison for the compared pairs (their records: fwbench.io.comparisons_file).
Per cell: the statistics, roofline and speedup variables (units in each `units` attribute) and
the text variables (status, error_type, error, bound, memory_level, noise, flags, eager_ops;
each with a `description`) of fwbench.analysis.summary_variables; per (arch, precision, batch,
scope) the winner_* variables (declared in fwbench.io.variables.WINNERS, computed by
fwbench.analysis.winners); framework_version(system, framework);
system_attrs(system), JSON of each system's own attributes (fwbench.io.per_system). Attributes:
the aggregate's provenance, stats_* (the settings), the roofline's, flags, bootstrap,
processes, median_ci_level, slow_samples_choice, title, systems, schema_version
(SCHEMA_VERSION). A stats.nc without the attribute is refused: rerun the stats rule.

stats.csv: one row per measured or failed cell (absent positions left out), system first,
framework_version after framework, then the text and the per-cell numeric variables. A CSV
carries no attributes: its version is the stats.nc written beside it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.io.atomic import write_netcdf, write_text
from fwbench.io.common import read_versioned_netcdf, with_schema_version
from fwbench.io.dims import CELL_DIMS, FLOAT32, STATUS_FAILED, CellKey, keys_where, variants_in
from fwbench.io.per_system import one_system
from fwbench.io.variables import V

# 2 adds the speed canary's variables (slow_machine, canary_*, slow_samples*, noise) and
# process_sigma (process_count came later, within version 2). 3 adds what the report prints of
# many cells (fwbench.io.variables.AGGREGATES), the cells' compile details, host and versions,
# and the attribute table_batch (the batch every table shows); it carries every variable
# fwbench.io.variables declares for it, so readers test no variable's presence: older files
# are refused naming the stats rule. 4: every comparison as a record over the dimension
# `comparison` (fwbench.io.comparisons_file), verdicts faster / slower / equivalent /
# undetermined at one level, the winners' contenders, ratio CI and p in place of the tie and
# Holm's p, deployment_verdict, compile_equivalent_cells. 5: the precision dimension (every
# cell variable over it; the comparisons name their precision). 6: low_precision_share and
# kernel_precision (what a low-precision cell computed in), the flag upcast. 7: state_sigma
# (the machine's state over the sweep, in the medians' CIs).
SCHEMA_VERSION = 7
PRECISION = "precision"
VIEW_DIMS = tuple(d for d in CELL_DIMS if d != PRECISION)  # a StatsView's cell dimensions
READABLE = (7,)
WHAT = "statistics file"
RERUN = "the stats rule (snakemake --forcerun stats)"


def write_stats(summary: xr.Dataset, path: str | os.PathLike) -> None:
    """stats.nc, atomically, with its schema version (`summary` itself is left as it is)."""
    write_netcdf(with_schema_version(summary, SCHEMA_VERSION), path)


def read_stats(path: str | os.PathLike) -> xr.Dataset:
    """The whole of stats.nc, its schema version checked (and not kept in the attributes);
    a file without one, or of another version, is refused naming it and the stats rule."""
    return read_versioned_netcdf(path, READABLE, WHAT, None, RERUN)


def write_stats_table(table: pd.DataFrame, path: str | os.PathLike) -> None:
    """stats.csv, atomically: the rows of fwbench.analysis.summary_variables.tidy."""
    write_text(table.to_csv(index=False), path)


def read_stats_table(path: str | os.PathLike) -> pd.DataFrame:
    """stats.csv as a DataFrame, one row per measured or failed cell."""
    return pd.read_csv(path)


class StatsView:
    """One system's statistics at one precision (float32 unless named) as the figures, tables
    and report read them: a cell's value by its key, a variant's values, the variants and
    failed cells present, the table batch, and the values over many cells, each by its
    declared name (fwbench.io.variables.V). The precision is a scalar coordinate of the view,
    so its arrays are over VIEW_DIMS (CELL_DIMS without it) and its keys carry it."""

    def __init__(self, stats: xr.Dataset, system: str | None = None, precision: str = FLOAT32):
        one = one_system(stats, system) if system else one_system(stats)
        self.precision, self.system, self._every = precision, system, one
        self.ds = one  # a part of the statistics without the dimension: one precision's
        if PRECISION in one.dims:
            if precision not in one[PRECISION].values:
                raise ValueError(f"no {precision} cells in the statistics")
            self.ds = one.sel(precision=precision)

    @classmethod
    def read(
        cls, path: str | os.PathLike, system: str | None = None, precision: str = FLOAT32
    ) -> StatsView:
        return cls(read_stats(path), system, precision)

    @property
    def attrs(self) -> dict[str, Any]:
        return self.ds.attrs

    # --- cells ----------------------------------------------------------------------------
    def value(self, name: str, key: CellKey) -> Any:
        """`name` at one cell (of the view's precision)."""
        if key.precision != self.precision:
            raise ValueError(f"{key} is not a cell of this {self.precision} view")
        at = {d: v for d, v in key.sel().items() if d != PRECISION}
        return self.ds[name].sel(**at).item()

    def precisions(self) -> list[str]:
        """Every precision the system's statistics hold (the view shows one of them)."""
        every = self._every
        return [str(p) for p in every[PRECISION].values] if PRECISION in every.dims else []

    def in_precision(self, precision: str) -> StatsView:
        """The same system's view at another precision."""
        return StatsView(self._every, None, precision)

    @staticmethod
    def columns(key: CellKey) -> tuple[Any, ...]:
        """A cell's coordinates as the view's tables show them (VIEW_DIMS)."""
        return tuple(getattr(key, d) for d in VIEW_DIMS)

    def values(self, name: str) -> np.ndarray:
        """`name` over every cell, in VIEW_DIMS order."""
        return self.ds[name].transpose(*VIEW_DIMS).values

    def series(self, name: str, framework: str, mode: str, **at: Any) -> np.ndarray:
        """One variant's values of `name` over the remaining dims (arch, batch), or at `at`."""
        return self.ds[name].sel(framework=framework, mode=mode, **at).values

    def keys_where(self, mask: np.ndarray) -> list[CellKey]:
        """The cells where `mask` (over VIEW_DIMS) holds."""
        coords = {d: self.ds[d].values for d in VIEW_DIMS} | {PRECISION: [self.precision]}
        return list(keys_where(coords, np.expand_dims(mask, CELL_DIMS.index(PRECISION))))

    def status(self) -> np.ndarray:
        return self.values(V.status)

    def failed(self, batches: Iterable[int] | None = None) -> list[CellKey]:
        keys = self.keys_where(self.status() == STATUS_FAILED)
        if batches is not None:
            keep = set(batches)
            keys = [key for key in keys if key.batch in keep]
        return keys

    def variants(self, compiled_only: bool = False) -> list[tuple[str, str]]:
        """(framework, mode) pairs with at least one cell (ok or failed), in the file's order."""
        return variants_in(self.ds, compiled_only)

    def archs(self) -> list[str]:
        return [str(a) for a in self.ds["arch"].values]

    def batches(self) -> list[int]:
        return [int(b) for b in self.ds["batch"].values]

    # --- the table batch ------------------------------------------------------------------
    @property
    def table_batch(self) -> int:
        """The batch every table, figure and finding shows (fwbench.analysis.stats)."""
        return int(self.attrs["table_batch"])

    @property
    def wanted_batch(self) -> int:
        """The configured stats.table_batch (the table batch unless no cell ran at it)."""
        return int(self.attrs["stats_table_batch"])

    # --- over many cells ------------------------------------------------------------------
    def of_variant(self, name: str, framework: str, mode: str) -> Any:
        return self.ds[name].sel(framework=framework, mode=mode).item()

    def of_framework(self, name: str, framework: str) -> Any:
        return self.ds[name].sel(framework=framework).item()

    def of_system(self, name: str) -> Any:
        return self.ds[name].item()
