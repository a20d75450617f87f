"""The statistics, results/summary/stats.nc and stats.csv, computed by
fwbench.analysis.stats (one system) and fwbench.analysis.by_system (every system stacked);
their version, writers and readers.

stats.nc: dimensions system, framework, mode, arch, batch, and scope for the winners.
Per cell: the statistics, roofline and speedup variables (units in each `units` attribute) and
the text variables (status, error_type, error, bound, memory_level, noise, flags, eager_ops;
each with a `description`) of fwbench.analysis.summary_variables; per (arch, batch, scope) the
winner_* variables (fwbench.analysis.winners); framework_version(system, framework);
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

import pandas as pd
import xarray as xr

from fwbench.io.atomic import write_netcdf, write_text
from fwbench.io.common import read_versioned_netcdf, with_schema_version

# 2 adds the speed canary's variables (slow_machine, canary_*, slow_samples*, noise) and
# process_sigma (process_count came later, within version 2); version 1 files read without
# them.
SCHEMA_VERSION = 2
READABLE = (1, 2)
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
