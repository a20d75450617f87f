"""The systems side by side: what each is, where it ran, its limits, how its cells fared, and
the cross-system figure (only in a report over systems)."""

from __future__ import annotations

import numpy as np

from fwbench.analysis.flags import FLAG_NODE_MISMATCH
from fwbench.analysis.processes import NODE_SEPARATOR
from fwbench.io.variables import V
from fwbench.present.format import MISSING, fixed
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import link, parse_json
from fwbench.present.tables import markdown_table

HEADER = [
    "system",
    "configured as",
    "hardware",
    "hardware file's node",
    "cells' nodes",
    "fp32 peak GFLOP/s",
    "DRAM triad GB/s",
    "ok",
    "failed",
    FLAG_NODE_MISMATCH,
]


def systems_section(context: ReportContext) -> str:
    """One row per system: its config, the node its hardware file measured, the nodes its
    cells ran on, its peak and DRAM bandwidth, and its cells' outcome ('' without systems)."""
    if not context.names:
        return ""
    rows = [_row(part, context.described.get(part.name, MISSING)) for part in context.parts]
    links = "".join(
        f"\n![The systems side by side]({link(figure, context.report_dir)})\n"
        for figure in context.systems_figures
    )
    return (
        "## Systems\n\n"
        "Each system's cells are measured on its own nodes and held against its own hardware "
        f"file. `{FLAG_NODE_MISMATCH}` counts cells whose node's CPU or GPU model differs from "
        "the one the hardware file measured.\n\n" + markdown_table(HEADER, rows) + links
    )


def _row(part: SystemPart, described: str) -> list:
    summary = part.hardware
    node = parse_json(part.stats.attrs.get("roofline_node", "{}") or "{}")
    return [
        part.name,
        described,
        summary.device_name if summary else MISSING,
        node.get("host", MISSING),
        ", ".join(_hosts(part)) or MISSING,
        fixed(summary.measured_flops_per_s.get("float32") if summary else None, 1e-9),
        fixed(summary.stream_Bps.get("triad") if summary else None, 1e-9),
        fixed(part.view.of_system(V.cells_ok), digits=0),
        fixed(part.view.of_system(V.cells_failed), digits=0),
        _count_flag(part, FLAG_NODE_MISMATCH),
    ]


def _count_flag(part: SystemPart, flag: str) -> int:
    flags = part.stats["flags"].values.astype(str).ravel()
    return sum(flag in text.split(",") for text in flags)


def _hosts(part: SystemPart) -> list[str]:
    """The nodes the system's cells ran on (the aggregate keeps each cell's)."""
    hosts = np.ravel(part.view.values(V.host))
    return sorted({h for text in hosts for h in str(text).split(NODE_SEPARATOR) if h})
