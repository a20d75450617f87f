"""Everything the report shows, read once: `load_context` turns the `ReportInputs` (paths) into
one `ReportContext` that every section reads.

Each file's system comes from its data: stats.nc's `system` dimension names the systems (none
in statistics of one machine), a hardware file's own `system` field names its system (files
written before that field are taken in stats.nc's system order), and the merged check CSVs carry
a `system` column that their sections show. Figures, summary tables and compare tables hold no
system of their own: each belongs to the system named by the nearest directory above it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from fwbench.io.artifact_file import read_manifest
from fwbench.io.checks_file import read_equivalence
from fwbench.io.common import read_netcdf
from fwbench.io.dims import STATUS_ABSENT
from fwbench.io.hardware_file import HardwareRecord, read_hardware_record
from fwbench.io.per_system import systems_of
from fwbench.io.stats_file import StatsView, read_stats

PathLike = str | os.PathLike


@dataclass
class ReportInputs:
    """The files the report is made from; optional ones may be None or empty."""

    stats: PathLike  # stats.nc; stats.csv beside it is named in the report's last line
    tables: PathLike | Sequence[PathLike]  # the tables directory, or the table files
    # One hardware file per system (each names its system; older files in stats.nc's order).
    hardware: PathLike | Sequence[PathLike] | None = None
    equivalence: PathLike | None = None
    flops: PathLike | None = None
    figures: Sequence[PathLike] = ()
    train_stats: Sequence[PathLike] = ()
    compare: Sequence[PathLike] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # the config's bench section
    systems_figures: Sequence[PathLike] = ()  # the systems side by side
    systems: Mapping[str, str] = field(default_factory=dict)  # name → how it is configured
    artifacts: Sequence[PathLike] = ()  # the export modes' artifact manifests, every system's


@dataclass(frozen=True, eq=False)
class SystemPart:
    """One system's share of the inputs (name None: statistics without systems)."""

    name: str | None
    described: str
    view: StatsView  # the system's statistics
    hardware: HardwareRecord | None
    tables: dict[str, Path]  # table name (file stem) → file
    figures: tuple[Path, ...]  # resolved
    artifacts: tuple[dict[str, Any], ...] = ()  # its artifact manifests (io.artifact_file)

    @property
    def stats(self) -> xr.Dataset:
        """The system's stats.nc, as its view holds it."""
        return self.view.ds


@dataclass(frozen=True, eq=False)
class LoadedFile:
    """An optional input read: a Dataset (.nc), a DataFrame (.csv), text (.md), None (.png)."""

    path: Path
    system: str | None
    content: xr.Dataset | pd.DataFrame | str | None


@dataclass(frozen=True, eq=False)
class ReportContext:
    """Every input of the report, read; the sections only format it."""

    stats: xr.Dataset  # every system's
    names: tuple[str, ...]  # the systems, in stats.nc's order; () without systems
    parts: tuple[SystemPart, ...]  # one per system (one with name None without systems)
    equivalence: pd.DataFrame | None
    flops: pd.DataFrame | None
    training: tuple[LoadedFile, ...]
    compare: tuple[LoadedFile, ...]
    settings: Mapping[str, Any]
    described: Mapping[str, str]  # system → how it is configured
    systems_figures: tuple[Path, ...]
    report_dir: Path
    stats_csv_name: str

    @property
    def cells(self) -> int:
        """Measured or failed cells: the rows of stats.csv (absent positions left out)."""
        return int((self.stats["status"].values != STATUS_ABSENT).sum())


def load_context(inputs: ReportInputs, report_path: PathLike) -> ReportContext:
    """Read every input once; figure links will be relative to `report_path`'s directory."""
    stats = read_stats(inputs.stats)
    names = tuple(systems_of(stats))
    hardware = hardware_by_system(inputs.hardware, names)
    tables = list(table_files(inputs.tables).values()) if _is_path(inputs.tables) else inputs.tables
    tables = _listed(tables)
    manifests = [read_manifest(path) for path in _listed(inputs.artifacts)]
    parts = tuple(
        SystemPart(
            name=name,
            described=inputs.systems.get(name, "") if name else "",
            view=StatsView(stats, name),
            hardware=hardware[name],
            tables=table_files([p for p in tables if owner(p, names) == name]),
            figures=tuple(p.resolve() for p in _listed(inputs.figures) if owner(p, names) == name),
            artifacts=tuple(m for m in manifests if not name or m.get("system") == name),
        )
        for name in names or (None,)
    )
    return ReportContext(
        stats=stats,
        names=names,
        parts=parts,
        equivalence=None if inputs.equivalence is None else read_equivalence(inputs.equivalence),
        flops=read_checks(inputs.flops),
        training=tuple(read_training(path) for path in _listed(inputs.train_stats)),
        compare=tuple(read_compare(path, names) for path in _listed(inputs.compare)),
        settings=dict(inputs.settings),
        described=dict(inputs.systems),
        systems_figures=tuple(p.resolve() for p in _listed(inputs.systems_figures)),
        report_dir=Path(report_path).resolve().parent,
        stats_csv_name=Path(inputs.stats).with_suffix(".csv").name,
    )


def hardware_by_system(
    paths: PathLike | Sequence[PathLike] | None, names: Sequence[str]
) -> dict[str | None, HardwareRecord | None]:
    """{system: its hardware summary}; without systems {None: the first file's}."""
    paths = [paths] if paths is None or _is_path(paths) else list(paths)
    if not names:
        return {None: read_hardware_record(paths[0] if paths else None)}
    if len(paths) != len(names):
        raise ValueError(f"{len(paths)} hardware files for the systems {list(names)}")
    found: dict[str | None, HardwareRecord | None] = {}
    sources: dict[str, PathLike] = {}
    for index, path in enumerate(paths):
        summary = read_hardware_record(path)
        system = (summary.system if summary else "") or names[index]
        if system not in names:
            raise ValueError(f"{path} is the hardware file of system {system!r}, not of {names}")
        if system in sources:
            raise ValueError(f"two hardware files for system {system!r}: {sources[system]}, {path}")
        found[system], sources[system] = summary, path
    return found


def table_files(tables: PathLike | Sequence[PathLike]) -> dict[str, Path]:
    """{name: path} of the summary tables, from their directory or a list of files."""
    if _is_path(tables):
        directory = Path(tables)
        if not directory.is_dir():
            raise ValueError(f"tables={directory} is not a directory of summary tables")
        return {path.stem: path for path in sorted(directory.glob("*.md"))}
    return {Path(path).stem: Path(path) for path in tables}


def owner(path: Path, names: Sequence[str]) -> str | None:
    """The system a file without a system of its own belongs to: the nearest directory above
    it named after a system (None without systems, or when no directory is)."""
    return next((parent.name for parent in path.parents if parent.name in names), None)


def read_checks(path: PathLike | None) -> pd.DataFrame | None:
    """The merged FLOP checks (the equivalence checks: fwbench.io.checks_file); empty cells
    (and 'nan', which earlier versions wrote for a failed row's error) are NaN, other text
    stays text."""
    missing = ["", "nan"]
    return None if path is None else pd.read_csv(path, keep_default_na=False, na_values=missing)


def read_training(path: Path) -> LoadedFile:
    """Training results: the stacked runs (.nc), one row per run (.csv), or Markdown."""
    readers = {".nc": read_netcdf, ".csv": pd.read_csv, ".md": lambda p: p.read_text()}
    if path.suffix not in readers:
        raise ValueError(f"training stats {path}: expected .nc, .csv or .md")
    return LoadedFile(path, None, readers[path.suffix](path))


def read_compare(path: Path, names: Sequence[str]) -> LoadedFile:
    """A compare table (.csv), its summary (.md) or its figure (.png, linked, not read)."""
    if path.suffix == ".png":
        content = None
    elif path.suffix == ".md":
        content = path.read_text()
    else:
        content = pd.read_csv(path)
    return LoadedFile(path, owner(path, names), content)


def _is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike)


def _listed(paths: Any) -> list[Path]:
    return [Path(path) for path in paths]
