"""Every benchmark cell in one xarray Dataset: `results/aggregate/bench.nc`.

Dimensions framework, mode, arch, batch, process (each of a cell's fresh processes; size 1 in
a one-process sweep) and repeat for the raw iterations. A (framework, mode, arch, batch,
process) position without a cell file, e.g. a mode the framework does not have, is NaN with
status "absent"; a failed one keeps its status "failed" and its error message.
`fwbench.analysis.processes.pool` reduces the process dimension for the statistics.

The aggregate takes exactly the cell files it is given and refuses to mix: two cells for the
same position, two versions of one framework, or cells from two hosts or devices raise with
both paths named. Arrays are preallocated at their final shape, filled cell by cell and turned
into a Dataset once, so 10,000 cells cost 10,000 small reads and nothing quadratic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import xarray as xr

from fwbench.frameworks import MODES
from fwbench.io import cell_file
from fwbench.io.atomic import write_netcdf
from fwbench.io.cell_file import CellRecord, read_cell_record
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT, STATUS_OK
from fwbench.model.specs import ARCHITECTURES

# Per-cell numbers kept from the cell's attributes, beside its scalar variables.
NUMERIC_ATTRS = {"contended": "1", "attempts": "1"}
# Per-cell text: the name in bench.nc, the cell attribute it comes from, and what it holds.
TEXT_ATTRS = {
    "status": ("status", "'ok' | 'failed' | 'absent' (no cell given for this position)"),
    "error_type": ("error_type", "exception class of a failed cell"),
    "error": ("error_message", "why the cell failed; empty when it did not"),
    "traceback_tail": ("traceback_tail", "last lines of a failed cell's traceback"),
    "compile_how": ("compile_how", "how the framework says it compiled"),
    "eager_ops": ("eager_ops", "ops a compiled mode left to the framework's eager kernels"),
    "counter_note": ("counter_note", "why counter_flops is what it is"),
    "start_utc": ("start_utc", "when the cell's measurement started"),
    "config_hash": ("config_hash", "hash of the settings that determine the cell"),
    "git_commit": ("git_commit", "commit of the code that measured the cell"),
    "threads": ("threads", "JSON of every thread setting of the cell's process"),
}
# The run's provenance, attributes of bench.nc; host and device must agree across all cells.
PROVENANCE = ("host", "device", "threads", "config_hash", "git_commit")
MUST_AGREE = ("host", "device")


def _ordered(found: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """The found values, known ones in the preferred order, unknown ones after, sorted."""
    found = set(found)
    return [v for v in preferred if v in found] + sorted(found - set(preferred))


def _check_unique_positions(records: Sequence[CellRecord]) -> None:
    seen: dict[tuple[str, str, str, int, int], str] = {}
    for record in records:
        position = (*record.key, record.process)
        if position in seen:
            framework, mode, arch, batch = record.key
            raise ValueError(
                f"two cells for {framework}/{mode}/{arch}/b{batch} process {record.process}: "
                f"{seen[position]} and {record.path}"
            )
        seen[position] = record.path


def _check_agree(records: Sequence[CellRecord], attr: str, within_framework: bool) -> None:
    """Raise when two cells (of one framework, if `within_framework`) disagree on `attr`;
    cells that do not record it are not counted."""
    first: dict[str, CellRecord] = {}
    for record in records:
        value = record.attrs.get(attr, "")
        if value in ("", None):
            continue
        group = record.key[0] if within_framework else ""
        if group not in first:
            first[group] = record
        elif first[group].attrs[attr] != value:
            scope = f"{group} cells" if within_framework else "cells"
            raise ValueError(
                f"{scope} disagree on {attr}: {first[group].attrs[attr]!r} in "
                f"{first[group].path} but {value!r} in {record.path}; aggregate one at a time"
            )


def _framework_versions(records: Sequence[CellRecord], frameworks: list[str]) -> dict[str, Any]:
    version = dict.fromkeys(frameworks, "")
    versions = dict.fromkeys(frameworks, "")
    for record in records:
        framework = record.key[0]
        version[framework] = version[framework] or str(record.attrs.get("framework_version", ""))
        versions[framework] = versions[framework] or str(record.attrs.get("versions", ""))
    return {"version": version, "versions": versions}


def _provenance(records: Sequence[CellRecord]) -> dict[str, str]:
    """One value per provenance key, or a JSON list of the distinct values when cells differ."""
    attrs = {}
    for key in PROVENANCE:
        values = sorted({str(r.attrs[key]) for r in records if r.attrs.get(key, "") != ""})
        attrs[key] = values[0] if len(values) == 1 else json.dumps(values)
    return attrs


def aggregate_cells(paths: Sequence[str | os.PathLike]) -> xr.Dataset:
    """One Dataset from exactly these cell files (see the module docstring)."""
    if not paths:
        raise ValueError("no cell files given to aggregate")
    records = [read_cell_record(path) for path in paths]
    _check_unique_positions(records)
    _check_agree(records, "framework_version", within_framework=True)
    _check_agree(records, "versions", within_framework=True)
    for attr in MUST_AGREE:
        _check_agree(records, attr, within_framework=False)

    frameworks = _ordered((r.key[0] for r in records), list(MODES))
    all_modes = list(dict.fromkeys(mode for modes in MODES.values() for mode in modes))
    modes = _ordered((r.key[1] for r in records), all_modes)
    archs = _ordered((r.key[2] for r in records), ARCHITECTURES)
    batches = sorted({r.key[3] for r in records})
    processes = sorted({r.process for r in records})
    repeats = max(len(r.latency_s) for r in records)
    index = [
        {value: i for i, value in enumerate(values)}
        for values in (frameworks, modes, archs, batches, processes)
    ]
    shape = tuple(len(values) for values in (frameworks, modes, archs, batches, processes))

    latency = np.full((*shape, repeats), np.nan)
    numbers = {name: np.full(shape, np.nan) for name in [*cell_file.SCALARS, *NUMERIC_ATTRS]}
    texts = {name: np.full(shape, "", dtype=object) for name in TEXT_ATTRS}
    texts["status"][...] = STATUS_ABSENT
    for record in records:
        where = (*record.key, record.process)
        position = tuple(lookup[value] for lookup, value in zip(index, where, strict=True))
        latency[position][: len(record.latency_s)] = record.latency_s
        for name in cell_file.SCALARS:
            numbers[name][position] = record.scalars[name]
        for name in NUMERIC_ATTRS:
            numbers[name][position] = float(record.attrs.get(name, np.nan))
        for name, (attr, _) in TEXT_ATTRS.items():
            texts[name][position] = str(record.attrs.get(attr, ""))
        if texts["status"][position] == "":
            texts["status"][position] = STATUS_OK

    versions = _framework_versions(records, frameworks)
    data_vars: dict[str, Any] = {
        "latency_s": ((*CELL_DIMS, "process", "repeat"), latency, {"units": "s"}),
        "framework_version": (
            "framework",
            np.array([versions["version"][f] for f in frameworks], dtype=object),
            {"description": "version of the framework whose numbers these are"},
        ),
        "versions": (
            "framework",
            np.array([versions["versions"][f] for f in frameworks], dtype=object),
            {"description": "JSON {distribution: version} recorded with the framework's cells"},
        ),
    }
    units = cell_file.UNITS | NUMERIC_ATTRS
    for name, values in numbers.items():
        data_vars[name] = ((*CELL_DIMS, "process"), values, {"units": units[name]})
    for name, values in texts.items():
        data_vars[name] = ((*CELL_DIMS, "process"), values, {"description": TEXT_ATTRS[name][1]})

    coords = {
        "framework": frameworks,
        "mode": modes,
        "arch": archs,
        "batch": np.array(batches, dtype=np.int64),
        "process": np.array(processes, dtype=np.int64),
        "repeat": np.arange(repeats),
    }
    ds = xr.Dataset(data_vars, coords=coords)
    ds["batch"].attrs["units"] = "1"
    ds["repeat"].attrs["description"] = "index of the warm (timed) iteration"
    ds["process"].attrs["description"] = "which of the cell's fresh processes (bench.processes)"
    ds.attrs.update(_provenance(records))
    ds.attrs["framework_versions"] = json.dumps(versions["version"], sort_keys=True)
    ds.attrs["cells"] = len(records)
    ds.attrs["title"] = "fwbench: every benchmark cell's raw timings and conditions"
    return ds


def write_aggregate(paths: Sequence[str | os.PathLike], output: str | os.PathLike) -> xr.Dataset:
    """Aggregate `paths` and write the Dataset atomically to `output`."""
    ds = aggregate_cells(paths)
    write_netcdf(ds, output)
    return ds
