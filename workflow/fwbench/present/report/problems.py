"""A system's problems: the failed and the flagged cells, from the stats rule's tables."""

from __future__ import annotations

from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import embedded_tables

PROBLEM_TABLES = ("failed", "flagged")


def problems_section(context: ReportContext, part: SystemPart) -> str:
    return embedded_tables(part.tables, PROBLEM_TABLES, "## Failed and flagged cells\n")
