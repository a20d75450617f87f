"""The report's cross-checks section: equivalence with the float64 reference and the analytic
FLOP counts against the frameworks' counters, from the check CSVs.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pandas as pd

from fwbench.present.format import MISSING, fixed, significant
from fwbench.present.tables import markdown_table


def checks_section(equivalence: str | os.PathLike | None, flops: str | os.PathLike | None) -> str:
    text = "## Cross-checks\n\n"
    if equivalence is not None:
        rows = pd.read_csv(equivalence, keep_default_na=False, na_values=[""])
        passed = rows["pass"].astype(str).str.lower() == "true"
        systems = _systems(rows)
        table_rows = [
            [
                *systems(r),
                r.arch,
                r.framework,
                r.mode,
                significant(r.max_rel_err),
                significant(r.tolerance),
                "pass" if p else "**FAIL**",
                r.error if isinstance(r.error, str) else "",
            ]
            for r, p in zip(rows.itertuples(), passed, strict=True)
        ]
        text += (
            f"### Equivalence with the float64 reference\n\n{int(passed.sum())} of {len(rows)} "
            f"({_keys(rows)}) outputs are within the tolerance.\n\n"
            + markdown_table(
                [*_system_header(rows), "arch", "framework", "mode", "max rel. error"]
                + ["tolerance", "result", "error"],
                table_rows,
            )
        )
    if flops is not None:
        rows = pd.read_csv(flops, keep_default_na=False, na_values=[""])
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
        text += "\n### FLOPs: analytic cost model vs the frameworks' counters\n\n" + markdown_table(
            [
                *_system_header(rows),
                "arch",
                "framework",
                "mode",
                "batch",
                "counted",
                "analytic",
                "counter",
                "ratio",
                "within 5%",
                "note",
            ],
            table_rows,
        )
    if equivalence is None and flops is None:
        text += "No check results were given.\n"
    return text


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
