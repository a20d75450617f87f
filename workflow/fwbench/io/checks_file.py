"""The equivalence checks' file: each checks job's
results/checks/<system>/<fw>/<version>/equivalence.csv (fwbench.measure.checks) and merge_checks'
results/checks/equivalence.csv, the same rows with their `system` first.

One row per (architecture, framework, mode, precision): the output against the float64
reference, with the columns of COLUMNS in that order, and `schema_version` (SCHEMA_VERSION) as
the last column of every row. Every writer and reader of the file goes through this module.

Schema 1, the files written before the file had a version (no `schema_version` column), named
the error bound `tolerance`; they are read as schema 2 with that column as `bound`, and the
columns an older file predates (precision, basis, saturated, saturated_of, seconds) empty
(precision float32).
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from fwbench.io.atomic import atomic_open
from fwbench.io.common import SCHEMA_KEY, check_schema_version
from fwbench.io.per_system import SYSTEM
from fwbench.precisions import FLOAT32

# 2: the error bound's column is `bound` (schema 1: `tolerance`); the schema_version column.
SCHEMA_VERSION = 2
READABLE = (1, SCHEMA_VERSION)
UNVERSIONED = 1
WHAT = "equivalence check file"
RERUN = "the checks rule (snakemake --forcerun checks; merge_checks follows)"

PRECISION, BOUND, PASS, SECONDS = "precision", "bound", "pass", "seconds"
COLUMNS = {
    "arch": "the architecture (fwbench.model.specs)",
    "framework": "the framework",
    "mode": "the framework's mode",
    PRECISION: "what the model computed in: float32 or a low precision",
    "max_abs_err": "the largest absolute difference from the float64 reference",
    "max_rel_err": "that difference over the reference's largest absolute value: the normwise "
    "relative error (fwbench.model.reference.max_errors)",
    BOUND: "the error bound the row is held to: in float32 the configured "
    "equivalence.tolerance, in a low precision the model's rounding-error bound "
    "(fwbench.model.precision_bound); empty where it could not be made",
    "basis": "how the bound was made",
    "saturated": "a static quantization's stored activation values at a limit of their "
    "integer range (clipped at the calibrated range, which the bound does not cover)",
    "saturated_of": "the activation values it stored (0 for a dynamic quantization)",
    PASS: "True when max_rel_err is at most the bound; a NaN or infinite output, or a failure "
    "to build or run, never passes",
    "error": "why the row failed to build or run ('' where it ran)",
    SECONDS: "what the row cost the checks job (build, the scales' reading, the run)",
}
# Schema 1's names of columns schema 2 renamed.
RENAMED = {"tolerance": BOUND}
SCHEMA_1_COLUMNS = tuple({v: k for k, v in RENAMED.items()}.get(c, c) for c in COLUMNS)
# Empty fields; 'nan' is what earlier versions wrote for a failed row's error.
EMPTY = ("", "nan")


def header(merged: bool = False) -> list[str]:
    """The file's data columns in order: merge_checks' file has `system` first."""
    return ([SYSTEM] if merged else []) + list(COLUMNS)


def write_equivalence(
    rows: Iterable[Mapping[str, Any]], path: str | os.PathLike, merged: bool = False
) -> None:
    """Rows with exactly the columns of `header(merged)` as the file, atomically, with the
    schema version in its last column; None and NaN are written as an empty field."""
    columns = header(merged)
    rows = [{key: _field(value) for key, value in row.items()} for row in rows]
    for row in rows:
        if set(row) != set(columns):
            raise ValueError(f"{path}: a row with columns {sorted(row)}, not {columns}")
    with atomic_open(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*columns, SCHEMA_KEY])
        writer.writeheader()
        writer.writerows(row | {SCHEMA_KEY: SCHEMA_VERSION} for row in rows)


def _field(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def read_equivalence(path: str | os.PathLike) -> pd.DataFrame:
    """The file in this schema: the columns of COLUMNS (`system` first where it has one), a
    schema-1 file's `tolerance` as `bound`; empty fields NaN, precision float32 where the file
    predates it, `pass` a bool. Raises naming the file and the rule to rerun where the file is
    of another version, or not an equivalence check file."""
    frame = _csv(path, keep_default_na=False, na_values=list(EMPTY))
    frame = _current(frame, path, missing=math.nan)
    frame[PRECISION] = [FLOAT32 if pd.isna(p) else p for p in frame[PRECISION]]
    frame[PASS] = frame[PASS].astype(str).str.lower() == "true"
    return frame


def merge_equivalence(
    paths: Sequence[str | os.PathLike], out: str | os.PathLike, systems: Sequence[str]
) -> None:
    """merge_checks' file from the checks jobs' files (`systems`: each file's system), each
    row with its system first, in this schema, atomically; the fields are copied as written
    (a schema-1 file's as read_equivalence names them, the columns it predates empty)."""
    if not paths:
        raise ValueError("merging the equivalence checks needs at least one file")
    if len(systems) != len(paths):
        raise ValueError(f"{len(systems)} systems for {len(paths)} equivalence check files")
    rows = []
    for path, system in zip(paths, systems, strict=True):
        frame = _current(_csv(path, dtype=str, keep_default_na=False), path, missing="")
        if SYSTEM in frame:
            raise ValueError(f"{path} is a merged {WHAT} (it has a {SYSTEM} column), not a job's")
        rows += [{SYSTEM: system} | row for row in frame.to_dict("records")]
    write_equivalence(rows, out, merged=True)


def _csv(path: str | os.PathLike, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **options)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not an {WHAT} ({error}); rerun {RERUN}") from None


def _current(frame: pd.DataFrame, path: str | os.PathLike, missing: Any) -> pd.DataFrame:
    """The file's rows with this schema's columns, in order, after its version is checked;
    `missing` fills the columns a schema-1 file predates."""
    version = _version(frame, path)
    check_schema_version(version, READABLE, path, WHAT, RERUN)
    frame = frame.drop(columns=SCHEMA_KEY, errors="ignore")
    columns = SCHEMA_1_COLUMNS if version == UNVERSIONED else tuple(COLUMNS)
    unknown = [c for c in frame.columns if c not in (SYSTEM, *columns)]
    # A schema-1 file has any of its columns (they grew over time); a later one has them all.
    lacking = [] if version == UNVERSIONED else [c for c in columns if c not in frame]
    if unknown or lacking:
        raise ValueError(
            f"{path} is not an {WHAT} of {SCHEMA_KEY} {version} (its columns: {list(columns)},"
            f" {SYSTEM} first in a merged file): it has {unknown} and lacks {lacking};"
            f" rerun {RERUN}"
        )
    frame = frame.rename(columns=RENAMED)
    for column in COLUMNS:
        if column not in frame:
            frame[column] = missing
    return frame[header(SYSTEM in frame)]


def _version(frame: pd.DataFrame, path: str | os.PathLike) -> Any:
    """The rows' schema version (UNVERSIONED without the column; this one for a header alone,
    whose columns are then checked)."""
    if SCHEMA_KEY not in frame:
        return UNVERSIONED
    found = sorted(set(frame[SCHEMA_KEY].astype(str)))
    if len(found) > 1:
        raise ValueError(f"{path} holds rows of {SCHEMA_KEY} {', '.join(found)}; rerun {RERUN}")
    if not found:
        return SCHEMA_VERSION
    return int(found[0]) if found[0].isdigit() else found[0]
