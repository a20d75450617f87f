"""Every benchmark cell in one xarray Dataset, `results/aggregate/bench.nc` (its layout, writer
and reader: fwbench.io.bench_file).

A position without a cell file, e.g. a mode the framework does not have, is NaN with status
"absent"; a failed one keeps its status "failed" and its error message. Each cell's node
(host, cpu_model, gpu_model) is kept per cell: the nodes of one SLURM partition differ in name.
`fwbench.analysis.processes.pool` reduces the process dimension for the statistics.

The aggregate takes exactly the cell files it is given and refuses to mix: two cells for the
same position, two versions of one package (the framework or a runtime its modes use) on one
system, or two devices on one system raise with both paths named; a framework's `versions` is
the union of its modes' packages. Arrays are preallocated at their final shape, filled cell by
cell and turned into a Dataset once, so 10,000 cells cost 10,000 small reads and nothing
quadratic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import xarray as xr

from fwbench.analysis.mixing import package_versions, refuse_mixed
from fwbench.frameworks import MODES
from fwbench.io import cell_file
from fwbench.io.bench_file import write_bench
from fwbench.io.cell_file import CellRecord, read_cell_record
from fwbench.io.dims import CELL_DIMS, PRECISIONS, STATUS_ABSENT, STATUS_OK
from fwbench.io.per_system import SYSTEM, SYSTEM_ATTRS
from fwbench.io.variables import BENCH, declared, units
from fwbench.model.specs import ARCHITECTURES

# Per-cell numbers and text kept from the cell's attributes (fwbench.io.variables): the name
# in bench.nc, and the attribute it comes from.
NUMERIC_ATTRS = units(declared(BENCH, text=False, from_attr=True))
TEXT_ATTRS = {v.name: v.attr for v in declared(BENCH, text=True, from_attr=True)}
TEXT_MEANINGS = {v.name: v.meaning for v in declared(BENCH, text=True, from_attr=True)}
# The run's provenance, attributes of bench.nc (a JSON list where cells differ); per system in
# the variable SYSTEM_ATTRS (fwbench.io.per_system).
PROVENANCE = ("host", "device", "threads", "config_hash", "git_commit")
# The system of cells that record none when the caller names none: the default config's one
# machine (cells before systems were all measured where the workflow ran).
DEFAULT_SYSTEM = "local"


def _ordered(found: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """The found values, known ones in the preferred order, unknown ones after, sorted."""
    found = set(found)
    return [v for v in preferred if v in found] + sorted(found - set(preferred))


def _assign_systems(records: Sequence[CellRecord], systems: Sequence[str] | None) -> None:
    """Every record's `system` attribute: its own, or the one the caller lists for its path
    (cells before systems record none), else DEFAULT_SYSTEM; a disagreement raises."""
    if systems is not None and len(systems) != len(records):
        raise ValueError(f"{len(systems)} systems for {len(records)} cell files")
    for index, record in enumerate(records):
        listed = systems[index] if systems is not None else ""
        recorded = str(record.attrs.get(SYSTEM, "") or "")
        if recorded and listed and recorded != listed:
            raise ValueError(f"{record.path} records system {recorded!r}, listed as {listed!r}")
        record.attrs[SYSTEM] = recorded or listed or DEFAULT_SYSTEM


def _framework_versions(
    records: Sequence[CellRecord], systems: list[str], frameworks: list[str]
) -> dict[str, np.ndarray]:
    """(system, framework) arrays of the version naming the results and of every version."""
    index = {(s, f): (i, j) for i, s in enumerate(systems) for j, f in enumerate(frameworks)}
    found = {key: np.full((len(systems), len(frameworks)), "", dtype=object) for key in "vV"}
    packages: dict[tuple[int, int], dict[str, str]] = {}
    for record in records:
        where = index[(record.attrs[SYSTEM], record.key.framework)]
        found["v"][where] = found["v"][where] or str(record.attrs.get("framework_version", ""))
        packages.setdefault(where, {}).update(package_versions(record))
    for where, named in packages.items():
        found["V"][where] = json.dumps(named, sort_keys=True) if named else ""
    return {"version": found["v"], "versions": found["V"]}


def _provenance(records: Sequence[CellRecord]) -> dict[str, str]:
    """One value per provenance key, or a JSON list of the distinct values when cells differ."""
    attrs = {}
    for key in PROVENANCE:
        values = sorted({str(r.attrs[key]) for r in records if r.attrs.get(key, "") != ""})
        attrs[key] = values[0] if len(values) == 1 else json.dumps(values)
    return attrs


def _axes(records: Sequence[CellRecord]) -> tuple[list, ...]:
    """The coordinates of (system, framework, mode, arch, precision, batch, process): known
    frameworks, modes, architectures and precisions in the house's order, unknown ones
    after."""
    all_modes = list(dict.fromkeys(mode for modes in MODES.values() for mode in modes))
    return (
        list(dict.fromkeys(r.attrs[SYSTEM] for r in records)),
        _ordered((r.key.framework for r in records), list(MODES)),
        _ordered((r.key.mode for r in records), all_modes),
        _ordered((r.key.arch for r in records), ARCHITECTURES),
        _ordered((r.key.precision for r in records), PRECISIONS),
        sorted({r.key.batch for r in records}),
        sorted({r.process for r in records}),
    )


def _cell_arrays(
    records: Sequence[CellRecord], axes: tuple[list, ...]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The per-sample series (latency_s first; repeat last, as many as the longest cell's),
    the per-cell numbers and the per-cell text, preallocated and filled cell by cell; NaN, ''
    and status absent where no cell is."""
    index = [{value: i for i, value in enumerate(values)} for values in axes]
    shape = tuple(len(values) for values in axes)
    repeats = max(len(r.latency_s) for r in records)
    series = {name: np.full((*shape, repeats), np.nan) for name in cell_file.SERIES}
    numbers = {name: np.full(shape, np.nan) for name in [*cell_file.SCALARS, *NUMERIC_ATTRS]}
    texts = {name: np.full(shape, "", dtype=object) for name in TEXT_ATTRS}
    texts["status"][...] = STATUS_ABSENT
    for record in records:
        where = (record.attrs[SYSTEM], *record.key.values(), record.process)
        position = tuple(lookup[value] for lookup, value in zip(index, where, strict=True))
        for name, values in series.items():
            found = record.latency_s if name == "latency_s" else record.series.get(name)
            if found is not None:
                values[position][: len(found)] = found
        for name in cell_file.SCALARS:
            numbers[name][position] = record.scalars[name]
        for name in NUMERIC_ATTRS:
            numbers[name][position] = float(record.attrs.get(name, np.nan))
        for name, attr in TEXT_ATTRS.items():
            texts[name][position] = str(record.attrs.get(attr, ""))
        if texts["status"][position] == "":
            texts["status"][position] = STATUS_OK
    return series, numbers, texts


def _data_variables(
    series: dict[str, np.ndarray],
    numbers: dict[str, np.ndarray],
    texts: dict[str, np.ndarray],
    versions: dict[str, np.ndarray],
) -> dict[str, Any]:
    """bench.nc's variables but system_attrs, with their units or descriptions."""
    dims = (SYSTEM, *CELL_DIMS, "process")
    data_vars: dict[str, Any] = {
        name: ((*dims, "repeat"), values, {"units": cell_file.SERIES[name]})
        for name, values in series.items()
    }
    data_vars |= {
        "framework_version": (
            (SYSTEM, "framework"),
            versions["version"],
            {"description": "version of the framework whose numbers these are"},
        ),
        "versions": (
            (SYSTEM, "framework"),
            versions["versions"],
            {"description": "JSON {distribution: version} recorded with the framework's cells"},
        ),
    }
    units = cell_file.UNITS | NUMERIC_ATTRS
    for name, values in numbers.items():
        data_vars[name] = (dims, values, {"units": units[name]})
    for name, values in texts.items():
        data_vars[name] = (dims, values, {"description": TEXT_MEANINGS[name]})
    return data_vars


def _coords(axes: tuple[list, ...], repeats: int) -> dict[str, Any]:
    system_names, frameworks, modes, archs, precisions, batches, processes = axes
    return {
        SYSTEM: system_names,
        "framework": frameworks,
        "mode": modes,
        "arch": archs,
        "precision": precisions,
        "batch": np.array(batches, dtype=np.int64),
        "process": np.array(processes, dtype=np.int64),
        "repeat": np.arange(repeats),
    }


def _system_attrs(records: Sequence[CellRecord], system_names: list[str]) -> tuple:
    """The SYSTEM_ATTRS variable: each system's own provenance (its host, device, threads),
    which fwbench.io.per_system.one_system applies."""
    per_system = [
        json.dumps(_provenance([r for r in records if r.attrs[SYSTEM] == name]))
        for name in system_names
    ]
    return (
        SYSTEM,
        np.array(per_system, dtype=object),
        {"description": "JSON: the provenance attributes of the system's cells alone"},
    )


def _versions_attr(versions: np.ndarray, frameworks: list[str]) -> str:
    """JSON {framework: version}, or the list of a framework's versions where systems differ."""
    named = {f: sorted({v for v in versions[:, j] if v}) for j, f in enumerate(frameworks)}
    return json.dumps({f: v[0] if len(v) == 1 else v for f, v in named.items()}, sort_keys=True)


def aggregate_cells(
    paths: Sequence[str | os.PathLike], systems: Sequence[str] | None = None
) -> xr.Dataset:
    """One Dataset from exactly these cell files (see the module docstring). `systems` (one
    per path) names the system of cells that do not record theirs."""
    if not paths:
        raise ValueError("no cell files given to aggregate")
    records = [read_cell_record(path) for path in paths]
    _assign_systems(records, systems)
    refuse_mixed(records)

    axes = _axes(records)
    system_names, frameworks = axes[0], axes[1]
    series, numbers, texts = _cell_arrays(records, axes)
    versions = _framework_versions(records, system_names, frameworks)
    ds = xr.Dataset(
        _data_variables(series, numbers, texts, versions),
        coords=_coords(axes, series["latency_s"].shape[-1]),
    )
    ds["batch"].attrs["units"] = "1"
    ds["repeat"].attrs["description"] = "index of the warm (timed) iteration"
    ds["process"].attrs["description"] = "which of the cell's fresh processes (bench.processes)"
    ds[SYSTEM].attrs["description"] = "the config's kind of node (systems) that measured"
    ds.attrs.update(_provenance(records))
    ds[SYSTEM_ATTRS] = _system_attrs(records, system_names)
    ds.attrs["framework_versions"] = _versions_attr(versions["version"], frameworks)
    ds.attrs["cells"] = len(records)
    ds.attrs["title"] = "fwbench: every benchmark cell's raw timings and conditions"
    return ds


def write_aggregate(
    paths: Sequence[str | os.PathLike],
    output: str | os.PathLike,
    systems: Sequence[str] | None = None,
) -> xr.Dataset:
    """Aggregate `paths` and write the Dataset atomically to `output` (fwbench.io.bench_file)."""
    ds = aggregate_cells(paths, systems)
    write_bench(ds, output)
    return ds
