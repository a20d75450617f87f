"""The cell file: one benchmark cell as a self-describing xarray Dataset (netCDF4 via h5netcdf).

A cell holds every timed iteration (`latency_s`, dimension `repeat`), the conditions of the
measurement, and its outcome. A failed cell has the same variables, NaN where nothing was
measured, and says why in `status`/`error_*` attributes.

Variables (SI units in the `units` attribute):
  latency_s(repeat)   s      each warm iteration, perf_counter_ns around call + sync
  first_call_s        s      the first call (tracing/compilation + first run), not in latency_s
  flops               FLOP   analytic, per call (fwbench.cost)
  bytes               B      analytic compulsory traffic per call (weights + input + output)
  activation_bytes    B      analytic estimate of activation traffic (labelled an estimate)
  counter_flops       FLOP   the framework's own counter, NaN where it has none (see attr note)
  peak_mem_bytes      B      process peak RSS on CPU; allocator peak on an accelerator
  compiled            1      1 when the callable really ran compiled, else 0
  graph_count, graph_breaks, fallbacks   1
  load_before, load_after   1      1-minute load average at start and end
  busy_cpu_other      1      other processes' CPU use during the timed loop, in cores
Attributes: framework, framework_version, versions (JSON of every relevant distribution),
mode, arch, batch, status ('ok' | 'failed'), error_type, error_message, traceback_tail,
compile_how, counter_note, device, host, threads (JSON of every thread setting), warmup,
repeats, config_hash, git_commit, start_ns, end_ns (time.time_ns wall clock), start_utc,
end_utc, contended (0/1: the machine was busy during the cell), attempts, and where the
cell's time went: import_s (framework import), build_s (model build + input on device),
warmup_s (the untimed warm-up calls).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from fwbench.atomic import atomic_path

UNITS = {
    "latency_s": "s",
    "first_call_s": "s",
    "flops": "FLOP",
    "bytes": "B",
    "activation_bytes": "B",
    "counter_flops": "FLOP",
    "peak_mem_bytes": "B",
    "compiled": "1",
    "graph_count": "1",
    "graph_breaks": "1",
    "fallbacks": "1",
    "load_before": "1",
    "load_after": "1",
    "busy_cpu_other": "cores",
}
SCALARS = [name for name in UNITS if name != "latency_s"]
STATUS_OK = "ok"
STATUS_FAILED = "failed"


@dataclass
class Cell:
    """Everything one cell measured; NaN for what it could not."""

    framework: str
    mode: str
    arch: str
    batch: int
    repeats: int
    latency_s: np.ndarray | None = None
    scalars: dict[str, float] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_dataset(self) -> xr.Dataset:
        latency = np.full(self.repeats, np.nan)
        if self.latency_s is not None:
            latency[: len(self.latency_s)] = self.latency_s
        data = {"latency_s": ("repeat", latency)}
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
            "repeats": int(self.repeats),
            "status": STATUS_OK,
        } | self.attrs
        ds.attrs.update({key: attr_value(value) for key, value in attrs.items()})
        return ds


def attr_value(value: Any) -> Any:
    """netCDF attributes hold strings and numbers; dicts and lists go as JSON, None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def write_atomic(ds: xr.Dataset, path: str | os.PathLike) -> None:
    """Write a netCDF file atomically (fwbench.atomic)."""
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")


def write_cell(cell: Cell, path: str | os.PathLike) -> None:
    write_atomic(cell.to_dataset(), path)


def read_cell(path: str | os.PathLike) -> xr.Dataset:
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()
