"""Changes since the previous version, when compare inputs are given: per compare CSV of
fwbench.analysis.compare (one row per cell: old/new medians, ratio with its CI, p,
verdict) a subsection; its summary Markdown embedded, its figures (PNG) linked."""

from __future__ import annotations

import math
import re
from collections import Counter

import pandas as pd

from fwbench.io.dims import CELL_DIMS
from fwbench.present.format import MISSING, latency_us, p_value, speedup_with_ci
from fwbench.present.report.context import LoadedFile, ReportContext
from fwbench.present.report.markdown import frame_table, link, table

COMPARE_KEYS = CELL_DIMS
COMPARE_NEEDS = {"old_median_s", "new_median_s", "ratio", "verdict", *COMPARE_KEYS}


def _ratio_ci(row: pd.Series) -> str:
    ratio = row["ratio"]
    if not math.isfinite(ratio):
        return MISSING
    return speedup_with_ci(ratio, row.get("ratio_ci_low"), row.get("ratio_ci_high"))


def compare_table(frame: pd.DataFrame) -> str:
    """Per cell: old and new median (µs), new ÷ old with its CI, p, verdict; a file
    without those columns is shown as it is."""
    if not COMPARE_NEEDS.issubset(frame.columns):
        return frame_table(frame)
    rows = [
        [
            *(row[key] for key in COMPARE_KEYS),
            latency_us(row["old_median_s"]),
            latency_us(row["new_median_s"]),
            _ratio_ci(row),
            p_value(row.get("p_difference", math.nan)),
            row["verdict"],
        ]
        for _, row in frame.iterrows()
    ]
    header = [*COMPARE_KEYS, "old median µs", "new median µs", "new ÷ old [CI]", "p"]
    return table([*header, "verdict"], rows)


def _versions(frame: pd.DataFrame) -> str:
    if not {"old_version", "new_version"} <= set(frame.columns):
        return ""
    old = sorted({v for v in frame["old_version"].dropna().astype(str) if v})
    new = sorted({v for v in frame["new_version"].dropna().astype(str) if v})
    return f" {', '.join(old) or MISSING} → {', '.join(new) or MISSING}"


def _table_part(loaded: LoadedFile) -> str:
    frame = loaded.content
    summary = ""
    if "verdict" in frame and len(frame):
        counts = Counter(frame["verdict"].astype(str))
        summary = ", ".join(f"{count} {verdict}" for verdict, count in counts.most_common())
        summary = f" {len(frame)} cells: {summary}."
    body = compare_table(frame) if len(frame) else "No cells to compare.\n"
    system = f"{loaded.system}/" if loaded.system else ""
    heading = f"### {system}{loaded.path.stem}{_versions(frame)}"
    return f"{heading}\n\nFrom `{loaded.path.name}`.{summary}\n\n{body}"


def compare_section(context: ReportContext) -> str:
    """One subsection per compare CSV (a Markdown summary is embedded, a figure linked)."""
    if not context.compare:
        return ""
    parts = ["## Changes since the previous version\n"]
    for loaded in context.compare:
        if isinstance(loaded.content, pd.DataFrame):
            parts.append(_table_part(loaded))
        elif loaded.content is None:  # a figure
            where = link(loaded.path.resolve(), context.report_dir)
            parts.append(f"![{loaded.path.stem}: new ÷ old per cell]({where})\n")
        else:
            text = re.sub(r"^# .*\n+", "", loaded.content.strip() + "\n", count=1)
            parts.append(re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M))
    return "\n".join(parts)
