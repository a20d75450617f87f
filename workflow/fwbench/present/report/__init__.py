"""results/report.md: what was measured, on what, how, and what came out — from the files only.

Every number is read from an input file (stats.nc, the summary tables, the hardware JSONs, the
check CSVs, the aggregate's cell details, training and compare files); the only text typed here
is prose and headings. `context` reads the inputs once into a `ReportContext`; one module per
section formats it (`header`, `systems`, `results`, `problems`, `hardware`, `method`,
`training`, `compare`, `checks`); `document` puts the sections in order and writes the file.
"""

from fwbench.present.report.context import ReportContext, ReportInputs, load_context
from fwbench.present.report.document import render, render_report, write_report

__all__ = [
    "ReportContext",
    "ReportInputs",
    "load_context",
    "render",
    "render_report",
    "write_report",
]
