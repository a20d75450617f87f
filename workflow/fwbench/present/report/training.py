"""The training results, when training inputs are given: one row per run of the stacked runs
(train files stacked: one dim per run key plus `epoch`; see fwbench.present.plots_training),
a CSV's rows as they are, or Markdown embedded as it is."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.io.dims import STATUS_ABSENT
from fwbench.present.report.context import ReportContext
from fwbench.present.report.markdown import frame_table, table

# Per-run training quantities shown when the run dataset has them: (variable, header, scale).
TRAINING_COLUMNS = (
    ("steady_epoch_time_s", "steady epoch s", 1.0),
    ("first_epoch_overhead_s", "first-epoch overhead s", 1.0),
    ("time_to_target_s", "time to target s", 1.0),
    ("steady_samples_per_s", "steady samples/s (epochs 2+)", 1.0),
    ("final_val_accuracy", "final val. accuracy %", 100.0),
    ("compiled", "compiled", 1.0),
)


def _run_value(run: xr.Dataset, name: str, scale: float) -> float:
    return float(run[name].values) * scale if name in run else math.nan


def training_runs_table(train: xr.Dataset) -> str:
    """One row per run (ok or failed) of a stacked training dataset."""
    if "status" not in train:
        raise ValueError("the training dataset has no 'status' variable (one per run)")
    keys = [d for d in train["status"].dims]
    columns = [(name, header, scale) for name, header, scale in TRAINING_COLUMNS if name in train]
    rows = []
    status = train["status"].values
    for index in np.ndindex(*status.shape):
        if status[index] == STATUS_ABSENT:
            continue
        run = train.isel(dict(zip(keys, index, strict=True)))
        labels = [str(run[d].item()) for d in keys]
        values = [_run_value(run, name, scale) for name, _, scale in columns]
        error = str(run["error"].item()) if "error" in run else ""
        rows.append([*labels, str(status[index]), *values, error])
    header = [*keys, "status", *(h for _, h, _ in columns), "error"]
    return table(header, rows)


def training_section(context: ReportContext) -> str:
    if not context.training:
        return ""
    parts = ["## Training\n"]
    for loaded in context.training:
        if isinstance(loaded.content, xr.Dataset):
            parts.append(f"From `{loaded.path.name}`:\n\n" + training_runs_table(loaded.content))
        elif isinstance(loaded.content, pd.DataFrame):
            parts.append(f"From `{loaded.path.name}`:\n\n" + frame_table(loaded.content))
        else:
            parts.append(str(loaded.content).strip() + "\n")
    return "\n".join(parts)
