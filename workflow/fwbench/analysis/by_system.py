"""Statistics of every system: each system's cells against its own hardware limits
(fwbench.analysis.stats.summarize), stacked along a `system` dimension in one stats.nc.

Attributes that every system's summary shares stay attributes of stats.nc; the rest (the
roofline, the host, the number of processes ...) differ per system and are kept per system in
`system_attrs`. `fwbench.io.per_system.one_system` gives one system's statistics back with
its own attributes, the layout the tables, figures and report read (the file: io.stats_file).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.analysis.roofline import HardwareLimits, read_hardware_limits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.bench_file import read_bench
from fwbench.io.comparisons_file import fill_padding
from fwbench.io.per_system import SYSTEM, SYSTEM_ATTRS, one_system
from fwbench.io.rounds_file import rounds_by_system

# Attributes of a summary that describe the statistics, not the system: kept global too.
RUN_ATTRS = ("flags", "bootstrap", "title")


def summarize_sweep(
    bench: str,
    hardware: Mapping[str, str],
    rounds: Sequence[str],
    settings: StatsSettings,
) -> tuple[xr.Dataset, dict[str, HardwareLimits]]:
    """A sweep's statistics from its files: the aggregate, each system's hardware file (by
    system) and every rounds file; with each system's limits. The stats rule's reading, and
    `python -m fwbench reanalyse`'s of a finished sweep."""
    limits = {system: read_hardware_limits(path) for system, path in hardware.items()}
    for system, found in limits.items():
        for problem in found.problems:
            logging.warning("roofline of %s: %s", system, problem)
    summary = summarize_systems(read_bench(bench), limits, settings, rounds_by_system(rounds))
    return summary, limits


def summarize_systems(
    bench: xr.Dataset,
    limits: Mapping[str, HardwareLimits],
    settings: StatsSettings,
    rounds: Mapping[str, list[xr.Dataset]] | None = None,
) -> xr.Dataset:
    """stats.nc for every system of the aggregate, each against its own hardware limits and
    with its own rounds files (`rounds`), stacked along `system`. The attributes are the
    aggregate's (its provenance over every system) and the statistics settings, the same keys
    whatever the values; each system's own attributes are in `system_attrs` (`one_system` puts
    them back)."""
    names = [str(name) for name in bench[SYSTEM].values]
    missing = [name for name in names if name not in limits]
    if missing:
        raise ValueError(f"no hardware limits for the system(s) {', '.join(missing)}")
    rounds = rounds or {}
    parts = [
        summarize(one_system(bench, name), limits[name], settings, rounds.get(name, []))
        for name in names
    ]
    attrs = [part.attrs for part in parts]
    shared = {
        key: value
        for key, value in attrs[0].items()
        if key in bench.attrs or key.startswith("stats_") or key in RUN_ATTRS
    } | dict(bench.attrs)
    stacked = xr.concat(
        parts,
        dim=pd.Index(names, name=SYSTEM),
        combine_attrs="drop",
        coords="minimal",
        join="outer",
    )
    stacked = fill_padding(stacked)
    stacked[SYSTEM_ATTRS] = (
        SYSTEM,
        np.array([json.dumps(a, sort_keys=True, default=_plain) for a in attrs], dtype=object),
        {"description": "JSON: the system's own attributes (roofline, host, processes ...)"},
    )
    stacked.attrs = shared | {"systems": json.dumps(names)}
    return stacked


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else str(value)
