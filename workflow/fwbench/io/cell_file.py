"""The cell file: one benchmark cell as a self-describing xarray Dataset (netCDF4 via h5netcdf).

A cell holds every timed iteration (`latency_s`, dimension `repeat`), the conditions of the
measurement, and its outcome. A failed cell has the same variables, NaN where nothing was
measured, and says why in `status`/`error_*` attributes.

Its variables (the per-sample series, the scalars, and the numbers and text kept as
attributes), each with its unit, meaning and the schema version that added it, are declared in
fwbench.io.variables (files CELL); a cell older than a variable reads it as NaN.
Attributes: framework, framework_version, versions (JSON of every relevant distribution), mode,
arch, batch, precision (what the model computes in: float32, bfloat16; schema version 9,
float32 before), process (which of the cell's fresh processes: 0 when absent), status ('ok' |
'failed'), error_type, error_message, traceback_tail, compile_how, eager_ops (ops a compiled
mode left to the framework's eager kernels, beyond the GEMM/convolution libraries; '' when
none), counter_note, device, system (the config's name of the kind of node; schema
version 4), host, cpu_model and gpu_model (the node that measured the cell; gpu_model '' on
cpu; schema version 4), threads (JSON of every thread setting), warmup, repeats, config_hash,
git_commit, start_ns, end_ns (time.time_ns wall clock), start_utc, end_utc,
contended (0/1: the machine was busy during the cell), slow_machine (0/1: the canary
says the machine ran slow, after bench.retries), canary (its level and work, or why there is
none), attempts, and where the cell's time
went: import_s (framework import), build_s (model build + input on device), warmup_s (the
untimed warm-up calls); schema_version (SCHEMA_VERSION; cells written before the attribute
existed have version 1's layout and are read as version 1).

Two readers, both here: `read_cell` (xarray, the whole file) and `read_cell_record` (h5py's
low-level API, what the aggregate needs, about 20x faster at 10,000 cells). Both check the
schema version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import h5py
import numpy as np
import xarray as xr
from h5py import h5a, h5d, h5s, h5t

from fwbench.io.atomic import write_netcdf
from fwbench.io.common import (
    SCHEMA_KEY,
    attr_value,
    check_schema_version,
    schema_version,
)
from fwbench.io.dims import CELL_DIMS, FLOAT32, STATUS_OK, CellKey
from fwbench.io.variables import CELL_SCALARS, CELL_SERIES

# Per timed sample (dimension repeat), latency_s first; the scalar variables; with units.
SERIES = CELL_SERIES
UNITS = CELL_SERIES | CELL_SCALARS
SCALARS = list(CELL_SCALARS)
SCHEMA_VERSION = 10
# Version 1 lacks the contention variables other_cores_probe, other_cores_during, cpu_pressure;
# versions 1 and 2 lack working_set_bytes and null_call_s (all read as NaN); versions 1 to 3
# lack the attributes system, cpu_model and gpu_model (the aggregate is told the system; the
# node's models read as unknown). Cells from before the attribute existed have version 1's
# layout. Versions 1 to 4 lack calls_per_sample (one call per sample; read as NaN). Versions 1
# to 5 lack the canary's variables and the slow_machine attribute (NaN). Version 6 lacks
# canary_read_factor (NaN) and its speed_factor is the larger of the chain's and the read's.
# Versions 1 to 7 lack the attribution pass's variables (NaN). Versions 1 to 8 lack the
# precision attribute: they computed in float32 (CellKey.of reads them so). Versions 1 to 9 lack
# low_precision_share and kernel_precision (NaN, '': a bf16 cell of version 9 was not examined).
READABLE = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
UNVERSIONED = 1
WHAT = "cell file"


@dataclass
class Cell:
    """Everything one cell measured; NaN for what it could not."""

    framework: str
    mode: str
    arch: str
    batch: int
    repeats: int
    precision: str = FLOAT32
    latency_s: np.ndarray | None = None
    scalars: dict[str, float] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    series: dict[str, np.ndarray] = field(default_factory=dict)  # SERIES but latency_s

    def to_dataset(self) -> xr.Dataset:
        data = {}
        for name in SERIES:
            values = self.latency_s if name == "latency_s" else self.series.get(name)
            padded = np.full(self.repeats, np.nan)
            if values is not None:
                padded[: len(values)] = values
            data[name] = ("repeat", padded)
        for name in SCALARS:
            data[name] = ((), float(self.scalars.get(name, np.nan)))
        ds = xr.Dataset(data, coords={"repeat": np.arange(self.repeats)})
        for name, unit in UNITS.items():
            ds[name].attrs["units"] = unit
        attrs = {
            "framework": self.framework,
            "mode": self.mode,
            "arch": self.arch,
            "batch": int(self.batch),
            "precision": self.precision,
            "repeats": int(self.repeats),
            "status": STATUS_OK,
            SCHEMA_KEY: SCHEMA_VERSION,
        } | self.attrs
        ds.attrs.update({key: attr_value(value) for key, value in attrs.items()})
        return ds


def write_cell(cell: Cell, path: str | os.PathLike) -> None:
    write_netcdf(cell.to_dataset(), path)


def read_cell(path: str | os.PathLike) -> xr.Dataset:
    """The whole cell as a Dataset."""
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        check_schema_version(schema_version(ds.attrs, UNVERSIONED), READABLE, path, WHAT)
        return ds.load()


@dataclass
class CellRecord:
    """What the aggregate needs from one cell file."""

    path: str
    attrs: dict[str, Any]
    latency_s: np.ndarray
    scalars: dict[str, float]
    series: dict[str, np.ndarray] = field(default_factory=dict)  # SERIES but latency_s; NaN
    # where the file predates them

    @property
    def key(self) -> CellKey:
        return CellKey.of(self.attrs)

    @property
    def process(self) -> int:
        """Which of the cell's fresh processes measured it (cells before processes: 0)."""
        return int(self.attrs.get("process", 0))


def _plain(value: np.ndarray) -> Any:
    """An attribute as a Python value: 1-element arrays unwrapped, bytes decoded."""
    value = value.reshape(()).item() if value.size == 1 else value.tolist()
    return value.decode() if isinstance(value, bytes) else value


def _read_attrs(file_id: h5py.h5f.FileID) -> dict[str, Any]:
    # h5py's low-level API: the high-level File.attrs costs about twice as much per attribute.
    attrs = {}
    for i in range(h5a.get_num_attrs(file_id)):
        attr = h5a.open(file_id, index=i)
        value = np.zeros(attr.shape or (), dtype=attr.dtype)
        attr.read(value, mtype=h5t.py_create(attr.dtype))
        attrs[attr.name.decode()] = _plain(value)
    return attrs


def _read_array(file_id: h5py.h5f.FileID, name: str) -> np.ndarray | None:
    """A float variable's values, or None when the file does not have it."""
    try:
        variable = h5d.open(file_id, name.encode())
    except KeyError:
        return None
    values = np.empty(variable.shape, dtype=np.float64)
    variable.read(h5s.ALL, h5s.ALL, values)
    return values


def read_cell_record(path: str | os.PathLike) -> CellRecord:
    """The attributes, iterations and scalars of one cell (h5py's low-level API)."""
    with h5py.File(path, "r") as handle:
        attrs = _read_attrs(handle.id)
        latency = _read_array(handle.id, "latency_s")
        missing = [key for key in CELL_DIMS if key not in attrs and key != "precision"]
        if missing or latency is None:
            raise ValueError(
                f"{path} is not a cell file (missing {', '.join(missing) or 'latency_s'})"
            )
        check_schema_version(schema_version(attrs, UNVERSIONED), READABLE, path, WHAT)
        scalars = {}
        for name in SCALARS:
            values = _read_array(handle.id, name)
            scalars[name] = np.nan if values is None else float(values)
        series = {}
        for name in SERIES:
            if name != "latency_s":
                values = _read_array(handle.id, name)
                series[name] = np.full(latency.shape, np.nan) if values is None else values
    return CellRecord(str(path), attrs, latency, scalars, series)
