"""results/report.md: what was measured, on what, how, and what came out — from the files only.

Every number is read from an input file (stats.nc, the summary tables, the hardware JSONs, the
check CSVs, the optional aggregate, training and compare files); the only text typed here is
prose and headings. Sections: the systems side by side, the checks, then per system its
hardware, method, figures, winners, stats tables, failed and flagged cells; then training and
"changes since the previous version" when those inputs are given. This module reads the inputs
and puts the sections in order; the sections live in report_systems, report_sections,
report_hardware, report_checks and report_optional.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from fwbench.analysis.aggregate import one_system, systems_of
from fwbench.analysis.processes import pool
from fwbench.io.atomic import write_text
from fwbench.io.common import read_netcdf
from fwbench.present.hardware_summary import HardwareSummary, read_hardware_summary
from fwbench.present.report_checks import checks_section
from fwbench.present.report_hardware import hardware_section
from fwbench.present.report_optional import compare_section, training_section
from fwbench.present.report_sections import (
    figures_section,
    header_section,
    method_section,
    winners_section,
)
from fwbench.present.report_systems import systems_header, systems_section

RESULT_TABLES = ("latency", "compile_speedup", "efficiency", "winners")
PROBLEM_TABLES = ("failed", "flagged")


PathLike = str | os.PathLike


@dataclass
class ReportInputs:
    """The files the report is made from; optional ones may be None or empty."""

    stats: PathLike
    stats_csv: PathLike
    tables: PathLike | Sequence[PathLike]  # the tables directory, or the table files
    # One hardware file per system, in stats.nc's system order (or one file without systems).
    hardware: PathLike | Sequence[PathLike] | None = None
    equivalence: PathLike | None = None
    flops: PathLike | None = None
    figures: Sequence[PathLike] = ()
    bench: PathLike | None = None  # results/aggregate/bench.nc: compile details and versions
    train_stats: Sequence[PathLike] = ()
    compare: Sequence[PathLike] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # the config's bench section
    systems_figures: Sequence[PathLike] = ()  # the systems side by side
    systems: Mapping[str, str] = field(default_factory=dict)  # name → how it is configured


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


def _for_system(paths: Sequence[PathLike], name: str | None, depth: int) -> list[Path]:
    """The files whose directory `depth` levels up is named after the system (all of them
    without systems): results/figures/<system>/x.png is depth 1, .../<system>/tables/x.md 2."""

    def owner(path: Path) -> str:
        for _ in range(depth):
            path = path.parent
        return path.name

    return [Path(p) for p in paths if name is None or owner(Path(p)) == name]


def system_part(
    inputs: ReportInputs,
    stats: xr.Dataset,
    bench: xr.Dataset | None,
    hardware: HardwareSummary | None,
    name: str | None,
    report_dir: Path,
) -> list[str]:
    """One system's sections (hardware, method, figures, winners, its tables)."""
    tables = table_files(_for_system(_table_list(inputs.tables), name, 2))
    figures = [p.resolve() for p in _for_system(inputs.figures, name, 1)]
    return [
        hardware_section(hardware, stats),
        method_section(stats, bench, inputs.settings),
        figures_section(figures, report_dir),
        winners_section(stats),
        embedded_tables(tables, RESULT_TABLES, "## Statistics tables\n"),
        embedded_tables(tables, PROBLEM_TABLES, "## Failed and flagged cells\n"),
    ]


def _table_list(tables: PathLike | Sequence[PathLike]) -> list[PathLike]:
    if isinstance(tables, str | os.PathLike):
        return list(table_files(tables).values())
    return list(tables)


def render_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """The report's Markdown; figure links are relative to `report_path`'s directory."""
    stats = read_netcdf(inputs.stats)
    bench = pool(read_netcdf(inputs.bench)) if inputs.bench else None
    report_dir = Path(report_path).resolve().parent
    names = systems_of(stats)
    hardware_paths = (
        [inputs.hardware]
        if inputs.hardware is None or isinstance(inputs.hardware, str | os.PathLike)
        else list(inputs.hardware)
    )
    if names and len(hardware_paths) != len(names):
        raise ValueError(f"{len(hardware_paths)} hardware files for the systems {names}")
    if not names:  # statistics of one machine without a system dimension
        bench = one_system(bench) if bench is not None else None
        hardware = read_hardware_summary(hardware_paths[0])
        sections = [header_section(stats, hardware)]
        parts = system_part(inputs, stats, bench, hardware, None, report_dir)
        sections += [parts[0], parts[1], checks_section(inputs.equivalence, inputs.flops)]
        sections += parts[2:]
    else:
        hardware = {n: read_hardware_summary(p) for n, p in zip(names, hardware_paths, strict=True)}
        systems_figures = [Path(p).resolve() for p in inputs.systems_figures]
        sections = [
            systems_header(stats),
            systems_section(stats, bench, hardware, inputs.systems, systems_figures, report_dir),
            checks_section(inputs.equivalence, inputs.flops),
        ]
        for name in names:
            one_bench = one_system(bench, name) if bench is not None else None
            parts = system_part(
                inputs, one_system(stats, name), one_bench, hardware[name], name, report_dir
            )
            described = inputs.systems.get(name, "")
            heading = f"# System `{name}`" + (f": {described}" if described else "") + "\n"
            sections.append(demote(heading + "\n".join(p for p in parts if p), 1))
    sections += [
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
