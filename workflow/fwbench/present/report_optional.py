"""The report sections that appear only when their inputs are given: training results and
"Changes since the previous version". Both render what the files hold, column by column, so
they follow those files' formats rather than fixing them.

Training input: a netCDF of training runs (train files stacked: one dim per run key plus
`epoch`; see fwbench.present.plots_training), a CSV (one row per run), or Markdown (embedded as
is). Compare input: the CSVs of fwbench.analysis.compare (one row per cell: old/new medians,
ratio with its CI, Holm p, verdict), its summary Markdown, its figures (PNG, linked).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.io.common import read_netcdf
from fwbench.io.dims import CELL_DIMS, STATUS_ABSENT
from fwbench.present.format import MISSING, latency_us, significant
from fwbench.present.tables import markdown_table

# Per-run training quantities shown when the run dataset has them: (variable, header, scale).
TRAINING_COLUMNS = (
    ("steady_epoch_time_s", "steady epoch s", 1.0),
    ("first_epoch_overhead_s", "first-epoch overhead s", 1.0),
    ("time_to_target_s", "time to target s", 1.0),
    ("samples_per_s", "median samples/s", 1.0),
    ("val_accuracy", "final val. accuracy %", 100.0),
    ("compiled", "compiled", 1.0),
)


def _cell(value: Any) -> Any:
    """Floats to 4 significant digits (— when not finite); everything else as it is."""
    return significant(float(value), 4) if isinstance(value, float | np.floating) else value


def _table(header: Sequence[str], rows: Any) -> str:
    return markdown_table(header, ([_cell(v) for v in row] for row in rows))


def _frame_table(frame: pd.DataFrame) -> str:
    return _table(list(frame.columns), frame.itertuples(index=False, name=None))


def _run_value(run: xr.Dataset, name: str, scale: float) -> float:
    if name not in run:
        return math.nan
    values = np.asarray(run[name].values, dtype=float)
    if "epoch" in run[name].dims:
        finite = values[np.isfinite(values)]
        if name == "samples_per_s":
            return float(np.median(finite)) * scale if finite.size else math.nan
        return float(finite[-1]) * scale if finite.size else math.nan  # the last epoch done
    return float(values) * scale


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
    return _table(header, rows)


def training_section(paths: Sequence[Path]) -> str:
    if not paths:
        return ""
    parts = ["## Training\n"]
    for path in paths:
        if path.suffix == ".nc":
            parts.append(f"From `{path.name}`:\n\n" + training_runs_table(read_netcdf(path)))
        elif path.suffix == ".csv":
            parts.append(f"From `{path.name}`:\n\n" + _frame_table(pd.read_csv(path)))
        elif path.suffix == ".md":
            parts.append(path.read_text().strip() + "\n")
        else:
            raise ValueError(f"training stats {path}: expected .nc, .csv or .md")
    return "\n".join(parts)


COMPARE_KEYS = CELL_DIMS
COMPARE_NEEDS = {"old_median_s", "new_median_s", "ratio", "verdict", *COMPARE_KEYS}


def _ratio_ci(row: pd.Series) -> str:
    ratio = row["ratio"]
    if not math.isfinite(ratio):
        return MISSING
    low, high = row.get("ratio_ci_low", math.nan), row.get("ratio_ci_high", math.nan)
    interval = f" [{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{ratio:.3f}{interval}"


def compare_table(frame: pd.DataFrame) -> str:
    """Per cell: old and new median (µs), new ÷ old with its CI, Holm p, verdict; a file
    without those columns is shown as it is."""
    if not COMPARE_NEEDS.issubset(frame.columns):
        return _frame_table(frame)
    rows = [
        [
            *(row[key] for key in COMPARE_KEYS),
            latency_us(row["old_median_s"]),
            latency_us(row["new_median_s"]),
            _ratio_ci(row),
            _cell(float(row.get("p_holm", math.nan))),
            row["verdict"],
        ]
        for _, row in frame.iterrows()
    ]
    header = [*COMPARE_KEYS, "old median µs", "new median µs", "new ÷ old [CI]", "p (Holm)"]
    return _table([*header, "verdict"], rows)


def _versions(frame: pd.DataFrame) -> str:
    if not {"old_version", "new_version"} <= set(frame.columns):
        return ""
    old = sorted({v for v in frame["old_version"].dropna().astype(str) if v})
    new = sorted({v for v in frame["new_version"].dropna().astype(str) if v})
    return f" {', '.join(old) or MISSING} → {', '.join(new) or MISSING}"


def compare_section(paths: Sequence[Path], report_dir: Path | None = None) -> str:
    """One subsection per compare CSV (a Markdown summary is embedded, a figure linked)."""
    if not paths:
        return ""
    parts = ["## Changes since the previous version\n"]
    for path in paths:
        if path.suffix == ".md":
            text = re.sub(r"^# .*\n+", "", path.read_text().strip() + "\n", count=1)
            parts.append(re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M))
            continue
        if path.suffix == ".png":
            link = os.path.relpath(path.resolve(), report_dir) if report_dir else path.name
            parts.append(f"![{path.stem}: new ÷ old per cell]({Path(link).as_posix()})\n")
            continue
        frame = pd.read_csv(path)
        summary = ""
        if "verdict" in frame and len(frame):
            counts = Counter(frame["verdict"].astype(str))
            summary = ", ".join(f"{count} {verdict}" for verdict, count in counts.most_common())
            summary = f" {len(frame)} cells: {summary}."
        body = compare_table(frame) if len(frame) else "No cells to compare.\n"
        system = f"{path.parent.name}/" if path.parent.parent.name == "compare" else ""
        heading = f"### {system}{path.stem}{_versions(frame)}"
        parts.append(f"{heading}\n\nFrom `{path.name}`.{summary}\n\n{body}")
    return "\n".join(parts)
