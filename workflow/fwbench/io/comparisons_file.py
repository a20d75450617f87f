"""The comparison record, its words, and results/summary/comparisons.csv.

Every comparison fwbench reports (fwbench.analysis.comparisons) is one record: what is
compared (KINDS), the row of cells it sits in (the cell dims other than framework and mode),
the baseline and candidate variants, the candidate's speedup over the baseline with its CI, two
p values, a verdict (VERDICTS) and how the standard error was made (COLUMNS says each).

stats.nc holds them as variables `comparison_<column>` over the dimension `comparison`
(0, 1, ... within each system; a system with fewer comparisons than another is padded with
records whose kind is ''); comparisons.csv holds the same records, one row each, system first
where there are systems. This module is the one reader of both layouts.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.io.atomic import write_text
from fwbench.io.dims import CELL_DIMS, VARIANT_DIMS
from fwbench.io.per_system import SYSTEM, one_system, systems_of

FASTER, SLOWER, EQUIVALENT, UNDETERMINED = "faster", "slower", "equivalent", "undetermined"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, UNDETERMINED)
DECIDED = (FASTER, SLOWER, EQUIVALENT)  # what the data settled: all but UNDETERMINED
# what is compared
WINNER_RIVALRY, COMPILE, DEPLOYMENT, PRECISION = "winner", "compile", "deployment", "precision"
KINDS = (WINNER_RIVALRY, COMPILE, DEPLOYMENT, PRECISION)

COMPARISON = "comparison"  # stats.nc's dimension of compared pairs
PREFIX = "comparison_"
ROW_DIMS = tuple(d for d in CELL_DIMS if d not in VARIANT_DIMS)
COLUMNS = {
    "kind": f"what is compared: {WINNER_RIVALRY} (a rival against the fastest of its row), "
    f"{COMPILE} (a mode against its eager cell), {DEPLOYMENT} (an export mode against its "
    f"framework's best own mode), {PRECISION} (a low-precision cell against the same variant "
    "in float32)",
    **{d: f"the compared cells' {d} (the candidate's)" for d in ROW_DIMS},
    "baseline": "framework/mode of the baseline",
    "candidate": "framework/mode of the candidate",
    "speedup": "the baseline's median over the candidate's (above 1: the candidate is faster); "
    "where the rounds measured both (method 'rounds: ...'), their medians in the rounds",
    "ci_low": "lower end of the speedup's CI at stats.confidence (the CI the verdict uses)",
    "ci_high": "upper end of that CI",
    "p_difference": "two-sided p of no difference (speedup 1)",
    "p_equivalence": "p of the two one-sided tests against ±stats.min_effect_pct (the larger)",
    "verdict": f"{' | '.join(VERDICTS)} (fwbench.analysis.comparisons)",
    "se_log": "the standard error of the log speedup (the CI is its exp(± quantile × se_log))",
    "dof": "its degrees of freedom (inf: normal quantiles)",
    "method": "how the standard error was estimated",
}


def comparison_variables(rows: list[dict[str, Any]]) -> dict[str, xr.DataArray]:
    """Records (dicts with every column of COLUMNS) as stats.nc's variables over COMPARISON."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    index = {COMPARISON: np.arange(len(frame))}
    return {
        PREFIX + column: xr.DataArray(
            _stored(frame[column]), dims=COMPARISON, coords=index, attrs={"description": meaning}
        )
        for column, meaning in COLUMNS.items()
    }


def _stored(values: pd.Series) -> np.ndarray:
    if values.dtype == object or values.empty:
        return values.fillna("").astype(str).to_numpy(dtype=object)
    return values.to_numpy()


def fill_padding(stacked: xr.Dataset) -> xr.Dataset:
    """Systems stacked with different numbers of comparisons: the padded text is ''."""
    text = [n for n in stacked.data_vars if n.startswith(PREFIX) and stacked[n].dtype == object]
    return stacked.assign({n: stacked[n].fillna("") for n in text})


def comparisons_table(stats: xr.Dataset) -> pd.DataFrame:
    """The comparisons of stats.nc (every system, or a dataset of one), one row each, the
    padding left out, the row dims with their coordinates' types, system first."""
    names = systems_of(stats)
    if not names:
        return _records(stats)
    frames = [_records(one_system(stats, name)).assign(**{SYSTEM: name}) for name in names]
    return pd.concat(frames, ignore_index=True)[[SYSTEM, *COLUMNS]]


def _records(ds: xr.Dataset) -> pd.DataFrame:
    frame = pd.DataFrame({c: ds[PREFIX + c].values for c in COLUMNS})
    frame = frame[frame["kind"].astype(str) != ""].reset_index(drop=True)
    for dim in ROW_DIMS:
        frame[dim] = frame[dim].astype(ds[dim].dtype)
    return frame


def write_comparisons_table(table: pd.DataFrame, path: str | os.PathLike) -> None:
    """comparisons.csv, atomically."""
    write_text(table.to_csv(index=False), path)


def read_comparisons_table(path: str | os.PathLike) -> pd.DataFrame:
    """comparisons.csv as a DataFrame, one row per comparison."""
    return pd.read_csv(path)
