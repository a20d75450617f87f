"""The system dimension that bench.nc and stats.nc share, and one system's part of either.

Both files stack systems (the config's kinds of node) along `system`. Attributes every system
shares are the file's; what differs per system (bench.nc: its cells' provenance; stats.nc: its
roofline, host, processes ...) is the JSON of the `system_attrs` variable. `one_system` gives
one system's part back with its own attributes over the file's, the layout of a one-system run.
"""

from __future__ import annotations

import json

import xarray as xr

SYSTEM = "system"
SYSTEM_ATTRS = "system_attrs"


def systems_of(ds: xr.Dataset) -> list[str]:
    """The systems of bench.nc or stats.nc; none in one without a system dimension."""
    return [str(name) for name in ds[SYSTEM].values] if SYSTEM in ds.dims else []


def one_system(ds: xr.Dataset, name: str | None = None) -> xr.Dataset:
    """One system's part of bench.nc or stats.nc (the only system when `name` is None),
    without the system dimension and with that system's own attributes (SYSTEM_ATTRS) over
    the file's. A dataset without a system dimension is returned as it is."""
    if SYSTEM not in ds.dims:
        return ds
    names = systems_of(ds)
    if name is None:
        if len(names) != 1:
            raise ValueError(f"{len(names)} systems: name the one to take")
        name = names[0]
    if name not in names:
        raise ValueError(f"no system {name!r} here (systems: {names})")
    one = ds.sel({SYSTEM: name}, drop=True)
    if SYSTEM_ATTRS in one:
        one.attrs = dict(ds.attrs) | json.loads(str(one[SYSTEM_ATTRS].values))
        one = one.drop_vars(SYSTEM_ATTRS)
    return one
