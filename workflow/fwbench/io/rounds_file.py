"""The rounds file: results/rounds/<system>/<arch>/b<batch>.nc, the paired samples of every
variant of one (architecture, batch) measured in alternation (fwbench.measure.rounds).

Dimensions: `variant` (framework/mode; coords `framework`, `mode`, `version`), `set` (a set of
fresh worker processes, one per variant), `round` (each variant takes one turn per round, in an
order shuffled every round), `sample` (a turn's samples, back to back: `after_switch` right
after another variant ran, then `warm`).

Variables: `latency_s` (variant, set, round, sample: seconds per call), `position` (variant,
set, round: its place in the round's order), `calls_per_sample` (variant, set), `setup_s`
(variant, set: from the worker's start to the end of its warm-up, nothing timed; NaN in a file
written before it was recorded, or where the worker failed), `status` and
`error_message` (variant, set: "ok", or "failed" with the worker's error). Attributes: system,
arch, batch, sets, rounds, seed, round_wall_s (the median round's wall time at the coordinator),
schema_version. The cells own the absolute medians; this file owns the ratios at its batch
(fwbench.analysis.rounds).
"""

from __future__ import annotations

import os

import xarray as xr

from fwbench.io.atomic import write_netcdf
from fwbench.io.common import read_versioned_netcdf, with_schema_version

SCHEMA_VERSION = 1
WHAT = "rounds file"
RERUN = "the rounds rule (snakemake --forcerun rounds)"
AFTER_SWITCH, WARM = "after_switch", "warm"
SAMPLES = (AFTER_SWITCH, WARM)


def variant_name(framework: str, mode: str) -> str:
    return f"{framework}/{mode}"


def write_rounds(ds: xr.Dataset, path: str | os.PathLike) -> None:
    write_netcdf(with_schema_version(ds, SCHEMA_VERSION), path)


def read_rounds(path: str | os.PathLike) -> xr.Dataset:
    return read_versioned_netcdf(path, (SCHEMA_VERSION,), WHAT, None, RERUN)


def rounds_by_system(paths: list[str]) -> dict[str, list[xr.Dataset]]:
    """Rounds files grouped by the system they were measured on."""
    found: dict[str, list[xr.Dataset]] = {}
    for path in paths:
        ds = read_rounds(path)
        found.setdefault(str(ds.attrs["system"]), []).append(ds)
    return found
