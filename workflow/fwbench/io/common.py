"""What every fwbench file format shares: the schema version and its check, attribute values."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from typing import Any

import xarray as xr

SCHEMA_KEY = "schema_version"
# What cell and train files both record about compilation and machine load, with units.
COMPILE_AND_LOAD_UNITS = {
    "compiled": "1",
    "graph_count": "1",
    "graph_breaks": "1",
    "fallbacks": "1",
    "load_before": "1",
    "load_after": "1",
}


def schema_version(attrs: Mapping[str, Any], unversioned: int | None = None) -> Any:
    """The file's schema version; `unversioned` for a file written before the format carried
    one (a reader passes the version whose layout such files have, or None to refuse them)."""
    value = attrs.get(SCHEMA_KEY, unversioned)
    return value.item() if hasattr(value, "item") else value


def check_schema_version(
    found: Any,
    readable: int | Collection[int],
    path: str | os.PathLike,
    what: str,
    rerun: str = "the job that writes it",
) -> None:
    """Raise naming the file, both versions and what to `rerun` when the file is not of a
    version this code reads."""
    versions = (readable,) if isinstance(readable, int) else tuple(readable)
    if isinstance(found, bool) or not isinstance(found, int) or found not in versions:
        known = " or ".join(str(version) for version in versions)
        raise ValueError(
            f"{path} is a {what} of {SCHEMA_KEY} {found!r}, but this fwbench reads "
            f"{SCHEMA_KEY} {known}; rerun {rerun}"
        )


def read_json_document(
    path: str | os.PathLike, readable: int | Collection[int], what: str
) -> dict[str, Any]:
    """A JSON object fwbench wrote; raises naming the file when it is not JSON, not an
    object, or of a version this code does not read."""
    try:
        with open(path) as handle:
            document = json.load(handle)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path} must hold a JSON object, got {type(document).__name__}")
    check_schema_version(schema_version(document), readable, path, what)
    return document


def read_netcdf(path: str | os.PathLike) -> xr.Dataset:
    """A netCDF file fwbench wrote, read into memory and closed, its version unchecked: for
    files without a reader of their own (the training aggregate; bench.nc and stats.nc are
    read by io.bench_file and io.stats_file)."""
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


def with_schema_version(ds: xr.Dataset, version: int) -> xr.Dataset:
    """A shallow copy of `ds` carrying `version` as its last attribute, for writing: the
    caller's dataset keeps its attributes."""
    versioned = ds.copy(deep=False)
    versioned.attrs = {k: v for k, v in ds.attrs.items() if k != SCHEMA_KEY}
    versioned.attrs[SCHEMA_KEY] = version
    return versioned


def read_versioned_netcdf(
    path: str | os.PathLike,
    readable: int | Collection[int],
    what: str,
    unversioned: int | None,
    rerun: str,
) -> xr.Dataset:
    """A whole netCDF file after its version is checked (see check_schema_version), without
    the version attribute: the version is the file's, so data made from it (stats.nc from
    bench.nc) does not inherit it."""
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        found = schema_version(ds.attrs, unversioned)
        check_schema_version(found, readable, path, what, rerun)
        loaded = ds.load()
    loaded.attrs.pop(SCHEMA_KEY, None)
    return loaded


def attr_value(value: Any) -> Any:
    """netCDF attributes hold strings and numbers; dicts and lists go as JSON, None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return value
