"""Training runs together: the train files stacked into one dataset
(results/aggregate/train.nc) and one summary row per run.

The stacked dataset has the train file's variables (fwbench.io.train_file) with the dimensions
system, framework, mode, one per run key (model, dataset) and epoch; `status` per run ('ok',
'failed', or 'absent' where a combination has no run) and `error` (the failed run's message).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.frameworks import MODES
from fwbench.io.dims import STATUS_ABSENT, STATUS_OK
from fwbench.io.train_file import EPOCH_UNITS, SCALAR_UNITS, read_run

VARIANT_DIMS = ("framework", "mode")
RUN_KEYS = ("model", "dataset")
# Runs written before systems carry no `system` attribute: the caller names it, else they
# were measured on the default config's one machine.
SYSTEM_DIM = "system"
DEFAULT_SYSTEM = "local"


def stack_runs(runs: Iterable[xr.Dataset], keys: tuple[str, ...] = RUN_KEYS) -> xr.Dataset:
    """Train files (fwbench.io.train_file.read_run) as one dataset, dims system, framework,
    mode, *keys, epoch (see the module docstring)."""
    dims = (SYSTEM_DIM, *VARIANT_DIMS, *keys)
    expanded = []
    for run in runs:
        run.attrs.setdefault(SYSTEM_DIM, DEFAULT_SYSTEM)
        missing = [d for d in dims if d not in run.attrs]
        if missing:
            raise ValueError(f"a train file lacks the attributes {missing}")
        labels = {d: [str(run.attrs[d])] for d in dims}
        plain = run.assign(
            status=((), str(run.attrs.get("status", STATUS_OK))),
            error=((), str(run.attrs.get("error_message", ""))),
        )
        plain.attrs = {}
        expanded.append(plain.expand_dims(labels))
    if not expanded:
        raise ValueError("no training runs to stack")
    combined = xr.merge(expanded, combine_attrs="drop", join="outer", compat="no_conflicts")
    known = [f for f in MODES if f in combined["framework"].values]
    others = sorted(set(combined["framework"].values.tolist()) - set(known))
    combined = combined.reindex(framework=known + others)  # the registry's framework order
    status = combined["status"].values.astype(object)
    absent = np.vectorize(lambda v: not isinstance(v, str), otypes=[bool])(status)
    status[absent] = STATUS_ABSENT
    combined["status"] = (combined["status"].dims, status)
    return combined


def aggregate_runs(
    paths: Sequence[str | os.PathLike], systems: Sequence[str] | None = None
) -> xr.Dataset:
    """Every train file into one dataset (dims system, framework, mode, model, dataset,
    epoch), with the versions each framework's runs come from. `systems` (one per path) names
    the system of runs that do not record theirs and must agree with those that do."""
    runs = [read_run(path) for path in paths]
    if systems is not None:
        if len(systems) != len(runs):
            raise ValueError(f"{len(systems)} systems for {len(runs)} train files")
        for path, run, system in zip(paths, runs, systems, strict=True):
            recorded = run.attrs.setdefault(SYSTEM_DIM, system)
            if recorded != system:
                raise ValueError(f"{path} records system {recorded!r}, listed as {system!r}")
    stacked = stack_runs(runs)
    versions: dict[str, list[str]] = {}
    for run in runs:
        found = versions.setdefault(run.attrs["framework"], [])
        if run.attrs.get("framework_version", "") not in found:
            found.append(run.attrs.get("framework_version", ""))
    named = {fw: found[0] if len(found) == 1 else found for fw, found in versions.items()}
    stacked.attrs["framework_versions"] = json.dumps(named, sort_keys=True)
    stacked.attrs["host"] = ",".join(sorted({str(run.attrs.get("host", "")) for run in runs}))
    for name, unit in (EPOCH_UNITS | SCALAR_UNITS).items():
        if name in stacked:
            stacked[name].attrs["units"] = unit
    return stacked.assign(run_totals(stacked))


def run_totals(stacked: xr.Dataset) -> dict[str, xr.DataArray]:
    """Per run, the one definition of its throughput and accuracy that every reader prints:
    the median samples/s of the steady epochs (the second on: the first holds compilation,
    reported apart as first_epoch_overhead_s), and the validation accuracy of the last epoch
    measured (a failed run stops early)."""
    steady = stacked["samples_per_s"].isel(epoch=slice(1, None)).median("epoch")
    accuracy = stacked["val_accuracy"]
    last_measured = accuracy.notnull().cumsum("epoch").argmax("epoch")
    final = accuracy.isel(epoch=last_measured, drop=True)
    steady.attrs = {"units": "1/s", "description": "median samples/s of epochs 2 and later"}
    final.attrs = {"units": "1", "description": "validation accuracy after the last epoch"}
    return {"steady_samples_per_s": steady, "final_val_accuracy": final}


def summary_frame(stacked: xr.Dataset) -> pd.DataFrame:
    """One row per run (absent combinations left out): its status and per-run scalars, the
    final validation accuracy and the median samples/s of the steady epochs."""
    keys = (SYSTEM_DIM, *VARIANT_DIMS, *RUN_KEYS)
    scalars = [name for name in SCALAR_UNITS if name in stacked]
    frame = stacked[scalars + ["status", "error"]].to_dataframe().reset_index()
    frame = frame[frame["status"] != STATUS_ABSENT]
    extra = xr.Dataset(
        run_totals(stacked)
        if "steady_samples_per_s" not in stacked
        else {name: stacked[name] for name in ("steady_samples_per_s", "final_val_accuracy")}
    )
    frame = frame.merge(extra.to_dataframe().reset_index(), on=list(keys), how="left")
    return frame[[*keys, "status", "final_val_accuracy", "steady_samples_per_s", *scalars, "error"]]
