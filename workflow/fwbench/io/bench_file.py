"""The aggregate, results/aggregate/bench.nc: every benchmark cell in one xarray Dataset
(netCDF4 via h5netcdf), built by fwbench.analysis.aggregate; its version, writer and reader.

Dimensions system (the config's kinds of node), framework, mode, arch, precision (what the
model computes in; version 3, float32 before), batch, process (each of a cell's fresh processes;
size 1 in a one-process sweep) and repeat (the raw iterations).
Variables (SI units in each `units` attribute, text in each `description`):
  latency_s(..., repeat)   s    every timed sample of the cell (NaN beyond its repeats)
  speed_factor, slow_sample, canary_chain_s, canary_read_s (..., repeat)   the speed canary
                                after each sample (fwbench.io.cell_file.SERIES; version 2)
  the cell file's scalars       (fwbench.io.cell_file.SCALARS), one value per cell
  contended, attempts, slow_machine   1    from the cell's attributes
  import_s, build_s, export_s   s   the process's start-up, from the cell's attributes
                                (NaN in cells written before they were kept)
  status, error, host, cpu_model ...   per-cell text, each with its description (the list:
                                fwbench.analysis.aggregate.TEXT_ATTRS); a position without a
                                cell is NaN with status "absent"
  framework_version, versions(system, framework)   the version naming the results; JSON of
                                every distribution's version
  system_attrs(system)          JSON: the provenance of that system's cells alone
                                (fwbench.io.per_system)
Attributes: host, device, threads, config_hash, git_commit (one value, or a JSON list where
cells differ), framework_versions (JSON), cells, title, schema_version (SCHEMA_VERSION; files
written before the attribute existed have version 1's layout and are read as version 1).

Read with `read_bench`, which checks the schema version.
"""

from __future__ import annotations

import os

import xarray as xr

from fwbench.io.atomic import write_netcdf
from fwbench.io.common import read_versioned_netcdf, with_schema_version
from fwbench.io.dims import FLOAT32

# 2 adds the canary's per-sample series and slow_machine; version 1 files read without them.
# 3 adds the precision dimension; older files are read with every cell at float32.
SCHEMA_VERSION = 3
READABLE = (1, 2, 3)
UNVERSIONED = 1  # bench.nc from before the attribute existed has version 1's layout
WHAT = "benchmark aggregate"
RERUN = "the aggregate_bench rule (snakemake --forcerun aggregate_bench)"


def write_bench(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """bench.nc, atomically, with its schema version (`ds` itself is left as it is)."""
    write_netcdf(with_schema_version(ds, SCHEMA_VERSION), path)


def read_bench(path: str | os.PathLike) -> xr.Dataset:
    """The whole aggregate, its schema version checked (and not kept in the attributes)."""
    return _with_precision(read_versioned_netcdf(path, READABLE, WHAT, UNVERSIONED, RERUN))


def _with_precision(ds: xr.Dataset) -> xr.Dataset:
    """A file before version 3 with its per-cell variables at precision float32 (before
    batch, where the aggregate puts it)."""
    if "precision" in ds.dims:
        return ds
    per_cell = {
        name: ds[name].expand_dims(precision=[FLOAT32], axis=ds[name].dims.index("batch"))
        for name in ds.data_vars
        if "batch" in ds[name].dims
    }
    return ds.assign(per_cell)
