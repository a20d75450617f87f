"""A system's measurement quality: per variant the cells' CV beside the speed canary's, the slow
samples and processes it caught and what was done with them, the spread between processes,
whose noise it was, and which variation the CIs cover."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fwbench.analysis.machine import MACHINE, MACHINE_RHO, OWN, SLOW_PROCESS
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.format import MISSING, fixed
from fwbench.present.intervals import coverage
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


def _variant_row(view: StatsView, framework: str, mode: str) -> list[Any]:
    def value(name: str) -> Any:
        return view.of_variant(name, framework, mode)

    def pair(first: str, second: str, digits: int) -> str:
        return f"{fixed(value(first), digits=digits)}, {fixed(value(second), digits=digits)}"

    return [
        f"{framework}/{mode}",
        fixed(value(V.variant_cells), digits=0),
        fixed(value(V.variant_multi_process_cells), digits=0),
        fixed(value(V.variant_cv_pct)),
        fixed(value(V.variant_canary_cv_pct)),
        pair(V.variant_canary_factor, V.variant_canary_factor_max, 2),
        fixed(value(V.variant_read_factor), digits=2),
        pair(V.variant_on_cpu, V.variant_on_cpu_min, 2),
        pair(V.variant_slow_samples, V.variant_slow_samples_dropped, 0),
        fixed(value(V.variant_slow_machine_cells), digits=0),
        pair(V.variant_slow_processes_machine, V.variant_slow_processes_own, 0),
        fixed(value(V.variant_contended_cells), digits=0),
        fixed(value(V.variant_process_spread_pct)),
        f"{fixed(value(V.variant_noise_machine_cells), digits=0)} / "
        f"{fixed(value(V.variant_noise_own_cells), digits=0)}",
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


def _slow_machine_cells(view: StatsView) -> str:
    names = [key.name for key in view.keys_where(view.values(V.slow_machine) == 1)]
    return f"\nCells flagged `slow_machine`: {', '.join(names)}.\n" if names else ""


NOISY_HEADER = ["cell", "CV %", "canary CV %", "ρ (samples, canary)", "noise"]


def _noisy_cells(view: StatsView) -> str:
    """Every high-CV cell with whose noise it was (stats.csv's `noise` has every cell's)."""
    noisy = np.char.find(view.values(V.flags).astype(str), "high_cv") >= 0
    rows = [
        [
            key.name,
            fixed(view.value(V.cv_pct, key)),
            fixed(view.value(V.canary_cv_pct, key)),
            fixed(view.value(V.canary_rho, key), digits=2),
            str(view.value(V.noise, key)) or MISSING,
        ]
        for key in view.keys_where(noisy)
    ]
    if not rows:
        return ""
    return "\nThe cells flagged `high_cv`, and whose noise it was:\n\n" + markdown_table(
        NOISY_HEADER, rows
    )


def quality_section(context: ReportContext, part: SystemPart) -> str:
    view = part.view
    rows = [_variant_row(view, framework, mode) for framework, mode in view.variants()]
    attrs = view.attrs
    return (
        "## Measurement quality\n\n"
        f"{CANARY} {_thresholds(context.settings)} Slow samples: "
        f"{attrs.get('slow_samples_choice', MISSING)}. A cell's noise is the machine's where "
        f"a process ran on a slow machine or its samples follow the canary (Spearman ρ ≥ "
        f"{MACHINE_RHO}), else the framework's own. A process more than "
        f"{100 * (SLOW_PROCESS - 1):.0f}% slower than its cell's median process is slow: "
        "the machine's where its canary ran slower by at least half as much (or it was "
        f"flagged), else its own. The medians' CIs: {coverage(attrs)} (the method section).\n\n"
        + markdown_table(HEADER, rows)
        + _slow_machine_cells(view)
        + _noisy_cells(view)
    )
