"""A system's measurement quality: per variant the cells' CV beside the speed canary's, the slow
samples and processes it caught and what was done with them, the spread between processes,
whose noise it was, and which variation the CIs cover."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from fwbench.analysis.machine import MACHINE, MACHINE_RHO, OWN, SLOW_PROCESS
from fwbench.io.dims import STATUS_OK
from fwbench.io.variables import V
from fwbench.present.figure_data import cell_name, cells_where, variants
from fwbench.present.format import MISSING, fixed
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.tables import markdown_table

HEADER = [
    "variant",
    "cells",
    "cells in several processes",
    "median CV %",
    "canary CV %",
    "canary factor (median, max)",
    "read factor (median)",
    "on-CPU share (median, min)",
    "slow samples (marked, dropped)",
    "slow_machine cells",
    "slow processes (machine, own)",
    "contended cells",
    "between processes σ %",
    f"noise: {MACHINE} / {OWN}",
]
CANARY = (
    "The speed canary is fixed work (a dependent add chain and a read sized to the cell's "
    "memory level, in C) timed after every timed sample, never inside one; its factor is the "
    "chain's time over the hardware stage's quiet median (1: the core ran at its baseline "
    "speed). The read's factor is shown beside it and decides no sample: it reads a level the "
    "framework's sample has just partly evicted, so it moves with the framework's footprint. "
    "Between the processes of one cell the footprint is the same, and there the read decides "
    "whose a slow process is: the machine's when its read (or chain) ran slower than in the "
    "cell's other processes by at least half as much, in log, as its samples did (on a shared "
    "VM the last-level cache's speed moves by up to 1.4× for seconds at a time). "
    "Beside it, each sample's on-CPU share: the process's CPU time over the sample's wall time "
    "(1: nothing took the cell's core; counted in one-thread cells on CPU)."
)


def _median(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")


def _variant_row(stats: xr.Dataset, framework: str, mode: str) -> list[Any]:
    cell = stats.sel(framework=framework, mode=mode)
    ok = cell["status"].values == STATUS_OK

    def values(name: str) -> np.ndarray:
        found = cell[name].values[ok] if name in cell else np.full(int(ok.sum()), np.nan)
        return found.astype(float)

    factor = values(V.canary_factor)
    on_cpu = values("on_cpu_median")
    noise = cell["noise"].values[ok] if "noise" in cell else np.array([])
    sigma = _median(values("process_sigma"))
    return [
        f"{framework}/{mode}",
        int(ok.sum()),
        int(np.sum(values("process_count") >= 2)),
        fixed(_median(values("cv_pct"))),
        fixed(_median(values("canary_cv_pct"))),
        f"{fixed(_median(factor), digits=2)}, "
        f"{fixed(float(np.nanmax(factor)) if np.isfinite(factor).any() else np.nan, digits=2)}",
        fixed(_median(values("canary_read_factor")), digits=2),
        f"{fixed(_median(on_cpu), digits=2)}, "
        f"{fixed(float(np.nanmin(on_cpu)) if np.isfinite(on_cpu).any() else np.nan, digits=2)}",
        f"{fixed(np.nansum(values('slow_samples')), digits=0)}, "
        f"{fixed(np.nansum(values('slow_samples_dropped')), digits=0)}",
        int(np.sum(values("slow_machine") == 1)),
        f"{fixed(np.nansum(values('slow_processes_machine')), digits=0)}, "
        f"{fixed(np.nansum(values('slow_processes_own')), digits=0)}",
        int(np.sum(values("contended") == 1)),
        fixed(100 * (np.exp(sigma) - 1)) if np.isfinite(sigma) else MISSING,
        f"{int(np.sum(noise == MACHINE))} / {int(np.sum(noise == OWN))}",
    ]


def _thresholds(settings: Mapping[str, Any]) -> str:
    return (
        f"A sample is slow when its canary ran more than "
        f"{settings.get('slow_sample_factor', MISSING)} × its baseline or its on-CPU share "
        f"was below {settings.get('slow_on_cpu', MISSING)}; a process ran on a slow "
        f"machine when its canary's median factor is above "
        f"{settings.get('slow_machine_factor', MISSING)} or more than "
        f"{settings.get('slow_sample_share', MISSING)} of its samples are slow: it is measured "
        f"again up to {settings.get('retries', MISSING)} time(s), then flagged `slow_machine` "
        "(kept out of the winners). A slow process whose canary was normal is kept: it is "
        "between-process variation, part of what a user gets."
    )


def _slow_machine_cells(stats: xr.Dataset) -> str:
    if "slow_machine" not in stats:
        return ""
    mask = (stats["slow_machine"] == 1).transpose("framework", "mode", "arch", "batch").values
    names = [cell_name(*cell) for cell in cells_where(stats, mask)]
    return f"\nCells flagged `slow_machine`: {', '.join(names)}.\n" if names else ""


NOISY_HEADER = ["cell", "CV %", "canary CV %", "ρ (samples, canary)", "noise"]


def _noisy_cells(stats: xr.Dataset) -> str:
    """Every high-CV cell with whose noise it was (stats.csv's `noise` has every cell's)."""
    flags = stats["flags"].transpose("framework", "mode", "arch", "batch").values.astype(str)
    rows = []
    for framework, mode, arch, batch in cells_where(stats, np.char.find(flags, "high_cv") >= 0):
        cell = stats.sel(framework=framework, mode=mode, arch=arch, batch=batch)
        rows.append(
            [
                cell_name(framework, mode, arch, batch),
                fixed(cell["cv_pct"].item()),
                fixed(cell["canary_cv_pct"].item()),
                fixed(cell["canary_rho"].item(), digits=2) if "canary_rho" in cell else MISSING,
                str(cell["noise"].item()) or MISSING if "noise" in cell else MISSING,
            ]
        )
    if not rows:
        return ""
    return "\nThe cells flagged `high_cv`, and whose noise it was:\n\n" + markdown_table(
        NOISY_HEADER, rows
    )


def quality_section(context: ReportContext, part: SystemPart) -> str:
    stats = part.stats
    if V.canary_factor not in stats:
        return ""
    rows = [_variant_row(stats, framework, mode) for framework, mode in variants(stats)]
    attrs = stats.attrs
    return (
        "## Measurement quality\n\n"
        f"{CANARY} {_thresholds(context.settings)} Slow samples: "
        f"{attrs.get('slow_samples_choice', MISSING)}. A cell's noise is the machine's where "
        f"a process ran on a slow machine or its samples follow the canary (Spearman ρ ≥ "
        f"{MACHINE_RHO}), else the framework's own. A process more than "
        f"{100 * (SLOW_PROCESS - 1):.0f}% slower than its cell's median process is slow: "
        "the machine's where its canary ran slower by at least half as much (or it was "
        "flagged), else its own. The medians' CIs: "
        f"{attrs.get('median_ci_level', MISSING)}.\n\n"
        + markdown_table(HEADER, rows)
        + _slow_machine_cells(stats)
        + _noisy_cells(stats)
    )
