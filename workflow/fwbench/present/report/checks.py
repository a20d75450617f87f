"""The cross-checks: equivalence with the float64 reference and the analytic FLOP counts
against the frameworks' counters, from the merged check CSVs. `verdict_line` says in one line,
at the top of the report, how they came out; `checks_section` gives every row, near the end.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from fwbench.io.checks_file import BOUND
from fwbench.precisions import FLOAT32
from fwbench.present.figure_data import listed
from fwbench.present.format import MISSING, fixed, significant
from fwbench.present.report.context import ReportContext
from fwbench.present.report.support import unsupported
from fwbench.present.tables import markdown_table

SECTION = "Cross-checks"
BOUND_NOTE = (
    " Each output is held to an error bound: a float32 one to the configured tolerance "
    "(`equivalence.tolerance`), a low-precision one to its model's rounding-error bound "
    "λ·u·√R (R roundings on its longest path, float32 accumulation; the derivation: "
    "`fwbench.model.precision_bound`), which the row's `basis` in the check file spells out."
)


def verdict_line(context: ReportContext) -> str:
    """'**Cross-checks:** equivalence …; FLOP counters …', or '' without check files. The
    outputs their path does not support are left out here: `support.unsupported_line` says
    them, once."""
    parts = []
    if context.equivalence is not None:
        parts.append(_equivalence_verdict(context.equivalence))
    if context.flops is not None:
        parts.append(_flops_verdict(context.flops))
    if not parts:
        return ""
    return f"**{SECTION}:** " + "; ".join(parts) + f" (every row: {SECTION}, below).\n"


def _equivalence_verdict(rows: pd.DataFrame) -> str:
    rows = rows.assign(precision=_precisions(rows))
    refused = [
        unsupported(r["framework"], r["mode"], r["precision"], r.get("error")) is not None
        for r in rows.to_dict("records")
    ]
    passed = _passed(rows)
    supported = ~pd.Series(refused, index=rows.index, dtype=bool) | passed
    rows, passed = rows[supported], passed[supported]
    text = (
        f"equivalence {int(passed.sum())} of {len(rows)} outputs match the float64 reference "
        f"within {_bounds(rows)}"
    )
    failing = [_name(row) for row, ok in zip(rows.itertuples(), passed, strict=True) if not ok]
    return text + (f", failing: {listed(failing)}" if failing else "")


def _flops_verdict(rows: pd.DataFrame) -> str:
    within = rows["within_5pct"].astype(str).str.lower()
    counted = within.isin(["true", "false"])
    text = (
        f"FLOP counters {int((within == 'true').sum())} of {int(counted.sum())} within 5% "
        "of the analytic count"
    )
    outside = [_name(row) for row, w in zip(rows.itertuples(), within, strict=True) if w == "false"]
    uncounted = len(rows) - int(counted.sum())
    text += f" (outside: {listed(outside)})" if outside else ""
    return text + (f", {uncounted} without a count" if uncounted else "")


def _bounds(rows: pd.DataFrame) -> str:
    """float32's bound (the configured tolerance), and each low precision's range of bounds
    (one per model)."""
    parts = []
    for precision, group in rows.groupby(_precisions(rows), sort=False):
        values = sorted(set(group[BOUND].dropna()))
        span = "–".join(significant(v) for v in dict.fromkeys(values[:1] + values[-1:]))
        if precision == FLOAT32:
            parts.append(span or MISSING)
        else:
            parts.append(f"{precision}: its rounding-error bound, {span or MISSING}")
    return "; ".join(parts) or MISSING


def _precisions(rows: pd.DataFrame) -> pd.Series:
    """Each row's precision (float32 in check files before precision was a column)."""
    if "precision" not in rows:
        return pd.Series([FLOAT32] * len(rows), index=rows.index)
    return rows["precision"].fillna(FLOAT32)


def _name(row: Any) -> str:
    system = f"{row.system}: " if hasattr(row, "system") else ""
    precision = getattr(row, "precision", FLOAT32)
    tag = "" if precision in (FLOAT32, None) else f"/{precision}"
    return f"{system}{row.framework}/{row.mode}/{row.arch}{tag}"


def _passed(rows: pd.DataFrame) -> pd.Series:
    return rows["pass"].astype(str).str.lower() == "true"


def checks_section(context: ReportContext) -> str:
    text = f"## {SECTION}\n\n"
    if context.equivalence is not None:
        text += _equivalence_table(context.equivalence)
    if context.flops is not None:
        text += _flops_table(context.flops)
    if context.equivalence is None and context.flops is None:
        text += "No check results were given.\n"
    return text


def _equivalence_table(rows: pd.DataFrame) -> str:
    passed = _passed(rows)
    systems = _systems(rows)
    rows = rows.assign(precision=_precisions(rows))
    table_rows = [
        [
            *systems(r),
            r.arch,
            r.framework,
            r.mode,
            r.precision,
            significant(r.max_rel_err),
            significant(r.bound),
            "pass" if p else _failure(r),
            r.error if isinstance(r.error, str) else "",
        ]
        for r, p in zip(rows.itertuples(), passed, strict=True)
    ]
    return (
        f"### Equivalence with the float64 reference\n\n{int(passed.sum())} of {len(rows)} "
        f"({_keys(rows)}) outputs are within their error bound.{BOUND_NOTE}\n\n"
        + markdown_table(
            [*_system_header(rows), "arch", "framework", "mode", "precision", "max rel. error"]
            + ["bound", "result", "error"],
            table_rows,
        )
    )


def _failure(row: Any) -> str:
    """A failed row's result: not supported by its path (support.unsupported), or FAIL."""
    error = row.error if isinstance(row.error, str) else ""
    if unsupported(row.framework, row.mode, row.precision, error) is not None:
        return "not supported"
    return "**FAIL**"


def _flops_table(rows: pd.DataFrame) -> str:
    rows = rows.copy()
    # Each counter is compared with the analytic figure that counts what it counts.
    counts_all = rows["compared_with"] == "all"
    rows["analytic_compared"] = rows["analytic_flops"].where(
        ~counts_all, rows["analytic_total_flops"]
    )
    rows["ratio_compared"] = rows["ratio"].where(~counts_all, rows["ratio_total"])
    systems = _systems(rows)
    table_rows = [
        [
            *systems(r),
            r.arch,
            r.framework,
            r.mode,
            r.batch,
            r.compared_with if isinstance(r.compared_with, str) else "",
            fixed(r.analytic_compared, digits=0),
            fixed(r.counter_flops, digits=0),
            significant(r.ratio_compared),
            _yes_no(r.within_5pct),
            r.note if isinstance(r.note, str) else "",
        ]
        for r in rows.itertuples()
    ]
    header = [*_system_header(rows), "arch", "framework", "mode", "batch", "counted"]
    header += ["analytic", "counter", "ratio", "within 5%", "note"]
    return "\n### FLOPs: analytic cost model vs the frameworks' counters\n\n" + markdown_table(
        header, table_rows
    )


def _system_header(rows: pd.DataFrame) -> list[str]:
    """Merged checks carry their system (merge_checks); older files do not."""
    return ["system"] if "system" in rows else []


def _systems(rows: pd.DataFrame):
    return (lambda r: [r.system]) if "system" in rows else (lambda r: [])


def _keys(rows: pd.DataFrame) -> str:
    return ("system, " if "system" in rows else "") + "architecture, framework, mode"


def _yes_no(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return MISSING
    return "yes" if str(value).lower() == "true" else "no"
