"""Training runs together: the train files stacked into one dataset
(results/aggregate/train.nc) and one summary row per run.

The stacked dataset has the train file's variables (fwbench.io.train_file) with the dimensions
system, framework, mode, one per run key (model, dataset, precision) and epoch; `status` per run
('ok', 'failed', or 'absent' where a combination has no run) and `error` (the failed run's
message). Runs written before precision was a dimension trained in float32.
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
from fwbench.io.train_file import (
    EPOCH_UNITS,
    EVALUATED_IN,
    SCALAR_UNITS,
    evaluated_in,
    read_run,
)
from fwbench.precisions import FLOAT32

VARIANT_DIMS = ("framework", "mode")
RUN_KEYS = ("model", "dataset", "precision")
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
        run.attrs.setdefault("precision", FLOAT32)
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
    precision, epoch), with the versions each framework's runs come from. `systems` (one per
    path) names the system of runs that do not record theirs and must agree with those that
    do."""
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


# MLPerf's quality bar for a reduced-precision result: at least 99% of the float32 accuracy.
ACCURACY_SHARE_BAR = 0.99
_SIDE_BY_SIDE = (
    "steady_epoch_time_s",
    "first_epoch_overhead_s",
    "time_to_target_s",
    "peak_mem_bytes",
    "final_val_accuracy",
)


def against_float32(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run in another precision beside the float32 run of the same (system, framework,
    mode, model, dataset), from summary_frame's rows: `<quantity>` and `<quantity>_float32`
    for each of _SIDE_BY_SIDE, `speedup` (float32's steady epoch time over the run's: one run
    each, so a ratio of medians over epochs without a CI), `accuracy_share` (its final
    accuracy over float32's; NaN for a failed run) and `meets_bar` (share ≥
    ACCURACY_SHARE_BAR; NaN share: False).
    No float32 run to hold it against: the float32 columns are NaN."""
    keys = [SYSTEM_DIM, *VARIANT_DIMS, "model", "dataset"]
    low = frame[frame["precision"] != FLOAT32]
    base = frame[frame["precision"] == FLOAT32][keys + list(_SIDE_BY_SIDE)]
    paired = low[keys + ["precision", "status", *_SIDE_BY_SIDE]].merge(
        base, on=keys, how="left", suffixes=("", "_float32")
    )
    paired["speedup"] = paired["steady_epoch_time_s_float32"] / paired["steady_epoch_time_s"]
    share = paired["final_val_accuracy"] / paired["final_val_accuracy_float32"]
    paired["accuracy_share"] = share.where(paired["status"] == STATUS_OK)  # a failed run's: none
    paired["meets_bar"] = paired["accuracy_share"] >= ACCURACY_SHARE_BAR
    return paired.reset_index(drop=True)


def evaluated_against_float32(frame: pd.DataFrame) -> pd.DataFrame:
    """Each float32 run's trained model evaluated in each of EVALUATED_IN (summary_frame's
    rows): per (run, precision) `accuracy`, `final_val_accuracy` (float32's),
    `accuracy_share` and `meets_bar` as in against_float32. A failed run is left out; a
    precision the framework does not run, or a run from before these variables, has a NaN
    accuracy (none at all where no run has them)."""
    keys = [SYSTEM_DIM, *VARIANT_DIMS, "model", "dataset"]
    runs = frame[(frame["precision"] == FLOAT32) & (frame["status"] == STATUS_OK)]
    parts = [
        runs[keys + ["final_val_accuracy"]].assign(
            precision=precision, accuracy=runs[evaluated_in(precision)]
        )
        for precision in EVALUATED_IN
        if evaluated_in(precision) in runs
    ]
    if not parts:
        return pd.DataFrame(columns=[*keys, "precision", "accuracy", "accuracy_share"])
    paired = pd.concat(parts, ignore_index=True)
    paired["accuracy_share"] = paired["accuracy"] / paired["final_val_accuracy"]
    paired["meets_bar"] = paired["accuracy_share"] >= ACCURACY_SHARE_BAR
    return paired
