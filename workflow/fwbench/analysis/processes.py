"""A cell's fresh processes pooled into one cell: the layout the statistics, tables and report
read. The aggregate keeps every process apart (dimension `process`); `pool` stacks their
timings into one sample per cell and reduces each per-process variable by what it means
(a cell is contended if any process was, compiled only if every process was; its first call
is process 0's, the cold one). The timings by
process stay beside the pooled ones, as `latency_by_process_s`, for the spread between
processes (fwbench.analysis.process_spread).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT, STATUS_FAILED, STATUS_OK
from fwbench.io.variables import BY_NAME, Pool, V, pooling

PROCESS = "process"
ITERATION = "iteration"  # a timed iteration within one process
# How each variable pools is declared with it (fwbench.io.variables.Pool).
NODE_SEPARATOR = " | "


def processes(bench: xr.Dataset) -> int:
    return int(bench.sizes.get(PROCESS, 1))


def _status(status: np.ndarray) -> np.ndarray:
    """Failed if any process failed, else ok if any process measured, else absent."""
    pooled = np.full(status.shape[:-1], STATUS_ABSENT, dtype=object)
    pooled[(status == STATUS_OK).any(axis=-1)] = STATUS_OK
    pooled[(status == STATUS_FAILED).any(axis=-1)] = STATUS_FAILED
    return pooled


def _first_text(values: np.ndarray, status: np.ndarray, failures_only: bool) -> np.ndarray:
    """Per cell, the first process's non-empty text (of a failed process for failure text)."""
    pooled = np.full(values.shape[:-1], "", dtype=object)
    for index in np.ndindex(*values.shape[:-1]):
        for process, text in enumerate(values[index]):
            if text and (not failures_only or status[index][process] == STATUS_FAILED):
                prefix = f"process {process}: " if failures_only and values.shape[-1] > 1 else ""
                pooled[index] = prefix + str(text)
                break
    return pooled


def _distinct_text(values: np.ndarray) -> np.ndarray:
    pooled = np.full(values.shape[:-1], "", dtype=object)
    for index in np.ndindex(*values.shape[:-1]):
        distinct = dict.fromkeys(str(v) for v in values[index] if v and str(v) != "nan")
        pooled[index] = NODE_SEPARATOR.join(distinct)
    return pooled


def _reduce(name: str, values: np.ndarray) -> np.ndarray:
    how = pooling(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: absent cells
        if how is Pool.WORST:
            return np.nanmax(values, axis=-1)
        if how in (Pool.ALL_OF, Pool.LEAST):
            return np.nanmin(values, axis=-1)
        if how is Pool.FIRST_PROCESS:
            return values[..., 0]
        if how is Pool.TOTAL:
            return np.where(np.isnan(values).all(axis=-1), np.nan, np.nansum(values, axis=-1))
        return np.nanmedian(values, axis=-1)


WARM = {"units": "s", "description": BY_NAME[V.first_call_warm_s].meaning}


def later_first_calls(bench: xr.Dataset, dims: tuple[str, ...] = CELL_DIMS) -> np.ndarray:
    """The unpooled aggregate's first calls of every process after process 0 (`dims` × later
    processes; none without a process dimension; NaN: not measured)."""
    if PROCESS not in bench.dims or V.first_call_s not in bench:
        return np.full((*(bench.sizes[d] for d in dims), 0), np.nan)
    return bench[V.first_call_s].transpose(*dims, PROCESS).values[..., 1:].astype(float)


def warm_first_call(values: np.ndarray) -> np.ndarray:
    """The median over the last axis of fresh processes' first calls from a warm compile
    cache; NaN where none was measured."""
    if values.shape[-1] == 0:
        return np.full(values.shape[:-1], np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # cells measured in one process
        return np.nanmedian(values, axis=-1)


def pool(bench: xr.Dataset) -> xr.Dataset:
    """The aggregate with one cell per (system, framework, mode, arch, batch); an aggregate
    without a process dimension (written before processes existed) is returned as it is."""
    if PROCESS not in bench.dims:
        return bench
    lead = tuple(d for d in bench["status"].dims if d not in (*CELL_DIMS, PROCESS))
    cell_dims = (*lead, *CELL_DIMS)  # `system`, where the aggregate has it
    order = (*cell_dims, PROCESS)
    status = bench["status"].transpose(*order).values
    by_process = bench["latency_s"].transpose(*order, "repeat")
    pooled_latency = by_process.values.reshape(*by_process.shape[:-2], -1)
    data_vars = {
        # its own iteration dimension: `repeat` is the pooled one, processes × iterations long
        "latency_by_process_s": by_process.rename(repeat=ITERATION).variable,
    }
    for name, variable in bench.data_vars.items():
        if "repeat" in variable.dims:  # a per-sample series: stacked like latency_s
            values = variable.transpose(*order, "repeat").values
            pooled_series = values.reshape(*values.shape[:-2], -1)
            data_vars[name] = ((*cell_dims, "repeat"), pooled_series, variable.attrs)
            continue
        if PROCESS not in variable.dims:
            data_vars[name] = variable.variable
            continue
        values = variable.transpose(*order).values
        how = pooling(name)
        if how is Pool.STATUS:
            reduced = _status(values)
        elif how is Pool.NODES:
            reduced = _distinct_text(values)
        elif values.dtype.kind in "OUS":  # text: object in memory, str read from a file
            reduced = _first_text(values, status, failures_only=how is Pool.FAILURE_TEXT)
        else:
            reduced = _reduce(name, values.astype(float))
        data_vars[name] = (cell_dims, reduced, variable.attrs)
    if V.first_call_s in bench:
        later = warm_first_call(later_first_calls(bench, cell_dims))
        data_vars[V.first_call_warm_s] = (cell_dims, later, WARM)
    coords = {dim: bench[dim].values for dim in cell_dims}
    coords |= {"repeat": np.arange(pooled_latency.shape[-1]), PROCESS: bench[PROCESS].values}
    coords[ITERATION] = bench["repeat"].values
    pooled = xr.Dataset(data_vars, coords=coords)
    pooled.attrs.update(bench.attrs)
    pooled.attrs["processes"] = processes(bench)
    return pooled
