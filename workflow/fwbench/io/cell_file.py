"""The cell file: one benchmark cell as a self-describing xarray Dataset (netCDF4 via h5netcdf).

A cell holds every timed iteration (`latency_s`, dimension `repeat`), the conditions of the
measurement, and its outcome. A failed cell has the same variables, NaN where nothing was
measured, and says why in `status`/`error_*` attributes.

Variables (SI units in the `units` attribute):
  latency_s(repeat)   s      each timed sample: perf_counter_ns around calls_per_sample
                             consecutive calls (each synced), ÷ calls_per_sample
  calls_per_sample    1      calls in each sample (bench.min_sample_s; schema version 5, older
                             cells read NaN: one call per sample)
  first_call_s        s      the first call (tracing/compilation + first run), not in latency_s
  null_call_s         s      median of the framework's null call (one elementwise op on a
                             1-element tensor, synced): its dispatch floor; schema version 3
  flops               FLOP   analytic, per call (fwbench.model.cost)
  bytes               B      analytic compulsory traffic per call (weights + input + output)
  activation_bytes    B      analytic estimate of activation traffic (labelled an estimate)
  working_set_bytes   B      analytic estimate of the bytes live at once (weights + input +
                             output + live activations): picks the roofline's memory level;
                             schema version 3
  recurrent_steps     1      rnn and lstm: cell steps per call, each waiting on the one before
                             (seq_len × layers); NaN for the others and in older cells
  counter_flops       FLOP   the framework's own counter, NaN where it has none (see attr note)
  peak_mem_bytes      B      process peak RSS on CPU; allocator peak on an accelerator
  compiled            1      1 when the callable really ran compiled, else 0
  graph_count, graph_breaks, fallbacks   1
  load_before, load_after   1      1-minute load average at start and end
  busy_cpu_other      cores  the larger of other_cores_probe and other_cores_during
  other_cores_probe   cores  other processes' CPU use while the cell slept just before the loop
  other_cores_during  cores  other processes' CPU use during the warm-up and timed calls
  cpu_pressure        1      PSI: share of the warm-up and timed calls in which some task waited
                             for a CPU (NaN without /proc/pressure/cpu); schema version 2
The speed canary (fwbench.memory.canary, fwbench.measure.speed; schema version 6, older cells
read NaN), probed after each timed sample:
  speed_factor(repeat)     1  the probe's chain over the quiet baseline's median: the core's
                              speed just after the sample, 1 = quiet (schema 6: the larger
                              of the chain's and the read's factor)
  on_cpu(repeat)           1  the process's CPU time over the sample's wall time (read around
                              the sample; NaN where it does not count: threads > 1, cuda)
  slow_sample(repeat)      1  1 where speed_factor is above bench.slow_sample_factor or on_cpu
                              below bench.slow_on_cpu
  canary_chain_s(repeat), canary_read_s(repeat)   s   the probe's two timings
  canary_factor            1  median speed_factor;  canary_cv_pct  %  its CV
  canary_read_factor       1  median of the read over its baseline median (recorded, decides
                              nothing: the framework's cache footprint moves it; schema 7)
  on_cpu_median            1  median on_cpu
  slow_samples             1  samples marked slow;  canary_share   1  the probes' share of the
                              timed loop's wall time (their cost)
  canary_chain_baseline_s, canary_read_baseline_s   s   the baseline medians used
The attribution pass (fwbench.measure.attribution; process 0, bench.attribution; schema
version 8, older cells and later processes read NaN), per call: attr_dispatches (ops or
launches), attr_kernel_s (kernel time less the profiler's in-event cost; attr_kernel_raw_s
before), attr_kernel_regions, attr_floor_s (the mode's launch floor), attr_events,
attr_event_cost_s (the profiler's cost per event, on the floor call), attr_floor_kernel_s,
attr_profiled_call_s, attr_profiled_work_s (that wall less the events' calibrated cost, at
least attr_unprofiled_call_s: the same calls unprofiled right after),
attr_nested_events (events inside a kernel region), attr_in_framework_s (time dispatching or
in kernels), attr_calls (calls profiled), attr_pass_s
(the pass's wall time); the
attribute `attribution` says what the profiler saw and could not see, or why no pass ran.
Attributes: framework, framework_version, versions (JSON of every relevant distribution), mode,
arch, batch, process (which of the cell's fresh processes: 0 when absent), status ('ok' |
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
    COMPILE_AND_LOAD_UNITS,
    SCHEMA_KEY,
    attr_value,
    check_schema_version,
    schema_version,
)
from fwbench.io.dims import STATUS_OK

# The attribution pass's per-call numbers (fwbench.measure.attribution), with units.
ATTRIBUTION_UNITS = {
    "attr_dispatches": "1",
    "attr_kernel_s": "s",
    "attr_kernel_raw_s": "s",
    "attr_kernel_regions": "1",
    "attr_floor_s": "s",
    "attr_events": "1",
    "attr_event_cost_s": "s",
    "attr_floor_kernel_s": "s",
    "attr_profiled_call_s": "s",
    "attr_profiled_work_s": "s",
    "attr_unprofiled_call_s": "s",
    "attr_in_framework_s": "s",
    "attr_nested_events": "1",
    "attr_calls": "1",
    "attr_pass_s": "s",
}

UNITS = {
    "latency_s": "s",
    "first_call_s": "s",
    "calls_per_sample": "1",
    "null_call_s": "s",
    "flops": "FLOP",
    "bytes": "B",
    "activation_bytes": "B",
    "working_set_bytes": "B",
    "recurrent_steps": "1",
    "counter_flops": "FLOP",
    "peak_mem_bytes": "B",
    **COMPILE_AND_LOAD_UNITS,
    "busy_cpu_other": "cores",
    "other_cores_probe": "cores",
    "other_cores_during": "cores",
    "cpu_pressure": "1",
    "canary_factor": "1",
    "canary_read_factor": "1",
    "on_cpu_median": "1",
    "canary_cv_pct": "%",
    "slow_samples": "1",
    "canary_share": "1",
    "canary_chain_baseline_s": "s",
    "canary_read_baseline_s": "s",
    **ATTRIBUTION_UNITS,
}
# Per timed sample (dimension repeat); latency_s first.
SERIES = {
    "latency_s": "s",
    "speed_factor": "1",
    "on_cpu": "1",
    "slow_sample": "1",
    "canary_chain_s": "s",
    "canary_read_s": "s",
}
UNITS |= {name: unit for name, unit in SERIES.items() if name != "latency_s"}
SCALARS = [name for name in UNITS if name not in SERIES]
SCHEMA_VERSION = 8
# Version 1 lacks the contention variables other_cores_probe, other_cores_during, cpu_pressure;
# versions 1 and 2 lack working_set_bytes and null_call_s (all read as NaN); versions 1 to 3
# lack the attributes system, cpu_model and gpu_model (the aggregate is told the system; the
# node's models read as unknown). Cells from before the attribute existed have version 1's
# layout. Versions 1 to 4 lack calls_per_sample (one call per sample; read as NaN). Versions 1
# to 5 lack the canary's variables and the slow_machine attribute (NaN). Version 6 lacks
# canary_read_factor (NaN) and its speed_factor is the larger of the chain's and the read's.
# Versions 1 to 7 lack the attribution pass's variables (NaN).
READABLE = (1, 2, 3, 4, 5, 6, 7, 8)
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
    def key(self) -> tuple[str, str, str, int]:
        return (
            str(self.attrs["framework"]),
            str(self.attrs["mode"]),
            str(self.attrs["arch"]),
            int(self.attrs["batch"]),
        )

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
        missing = [key for key in ("framework", "mode", "arch", "batch") if key not in attrs]
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
