"""results/report.md: what was measured, on what, how, and what came out — from the files only.

Every number is read from an input file (stats.nc, the summary tables, the hardware JSON, the
check CSVs, the optional aggregate, training and compare files); the only text typed here is
prose and headings. Sections: hardware, method, checks, figures, winners, the stats tables,
failed and flagged cells, then training and "changes since the previous version" when those
inputs are given. This module reads the inputs and puts the sections in order; the sections
live in report_sections, report_checks and report_optional.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fwbench.analysis.processes import pool
from fwbench.io.atomic import write_text
from fwbench.io.common import read_netcdf
from fwbench.present.hardware_summary import read_hardware_summary
from fwbench.present.report_checks import checks_section
from fwbench.present.report_hardware import hardware_section
from fwbench.present.report_optional import compare_section, training_section
from fwbench.present.report_sections import (
    figures_section,
    header_section,
    method_section,
    winners_section,
)

RESULT_TABLES = ("latency", "compile_speedup", "efficiency", "winners")
PROBLEM_TABLES = ("failed", "flagged")


PathLike = str | os.PathLike


@dataclass
class ReportInputs:
    """The files the report is made from; optional ones may be None or empty."""

    stats: PathLike
    stats_csv: PathLike
    tables: PathLike | Sequence[PathLike]  # the tables directory, or the table files
    hardware: PathLike | None = None
    equivalence: PathLike | None = None
    flops: PathLike | None = None
    figures: Sequence[PathLike] = ()
    bench: PathLike | None = None  # results/aggregate/bench.nc: compile details and versions
    train_stats: Sequence[PathLike] = ()
    compare: Sequence[PathLike] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # the config's bench section


def demote(markdown: str, levels: int = 2) -> str:
    """Headings one or more levels down, so an embedded table file nests under a section."""
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + levels) + " ", markdown, flags=re.M)


# ---- the stats tables ----------------------------------------------------------------------


def table_files(tables: PathLike | Sequence[PathLike]) -> dict[str, Path]:
    """{name: path} of the summary tables, from their directory or a list of files."""
    if isinstance(tables, str | os.PathLike):
        directory = Path(tables)
        if not directory.is_dir():
            raise ValueError(f"tables={directory} is not a directory of summary tables")
        return {path.stem: path for path in sorted(directory.glob("*.md"))}
    return {Path(path).stem: Path(path) for path in tables}


def _find_table(files: Mapping[str, Path], name: str) -> Path | None:
    """The table `name`, or `name_b<batch>` (the stats rule names the latency table by its
    batch)."""
    if name in files:
        return files[name]
    batched = [stem for stem in files if re.fullmatch(rf"{re.escape(name)}_b\d+", stem)]
    return files[batched[0]] if len(batched) == 1 else None


def embedded_tables(files: Mapping[str, Path], names: Sequence[str], heading: str) -> str:
    parts = [heading]
    for name in names:
        path = _find_table(files, name)
        if path is None:
            parts.append(f"(The {name} table was not given.)\n")
        else:
            parts.append(demote(path.read_text().strip()) + "\n")
    return "\n".join(parts)


# ---- the report ----------------------------------------------------------------------------


def render_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """The report's Markdown; figure links are relative to `report_path`'s directory."""
    stats = read_netcdf(inputs.stats)
    bench = pool(read_netcdf(inputs.bench)) if inputs.bench else None
    hardware = read_hardware_summary(inputs.hardware)
    tables = table_files(inputs.tables)
    report_dir = Path(report_path).resolve().parent
    sections = [
        header_section(stats, hardware),
        hardware_section(hardware, stats),
        method_section(stats, bench, inputs.settings),
        checks_section(inputs.equivalence, inputs.flops),
        figures_section([Path(f).resolve() for f in inputs.figures], report_dir),
        winners_section(stats),
        embedded_tables(tables, RESULT_TABLES, "## Statistics tables\n"),
        embedded_tables(tables, PROBLEM_TABLES, "## Failed and flagged cells\n"),
        training_section([Path(p) for p in inputs.train_stats]),
        compare_section([Path(p) for p in inputs.compare], report_dir),
        f"\n---\nStatistics of every cell: `{Path(inputs.stats_csv).name}` "
        f"({len(pd.read_csv(inputs.stats_csv))} rows).\n",
    ]
    return "\n".join(section for section in sections if section)


def write_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """Render the report and write it atomically to `report_path`; returns the text."""
    text = render_report(inputs, report_path)
    write_text(text, report_path)
    return text
