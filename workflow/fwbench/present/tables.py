"""The Markdown tables of results/summary/<system>/tables/, rendered from the stats Dataset.

latency (median µs at the table batch, fastest per row in bold), compile_speedup, efficiency,
winners, failed, flagged. Failed cells show "failed" where a number would be (failed.md: why)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import xarray as xr

from fwbench.analysis.significance import WINNER
from fwbench.io.atomic import write_text
from fwbench.io.dims import CELL_DIMS, EAGER_MODE, STATUS_ABSENT, STATUS_FAILED, STATUS_OK
from fwbench.io.variables import V
from fwbench.present.figure_data import cell_value
from fwbench.present.format import MISSING, fixed, percent

FAILED_MARK = "failed"
TABLES = ("latency", "compile_speedup", V.efficiency, "winners", "failed", "flagged")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table; pipes and newlines in cells are escaped."""

    def cell(value: object) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ").strip()

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cells(summary: xr.Dataset, where: np.ndarray) -> Iterable[tuple[str, str, str, int]]:
    """(framework, mode, arch, batch) of the positions where `where` holds, in table order:
    arch, batch, framework, mode."""
    frameworks, modes, archs, batches = (summary[d].values.tolist() for d in CELL_DIMS)
    for a, b, f, m in np.ndindex(len(archs), len(batches), len(frameworks), len(modes)):
        if where[f, m, a, b]:
            yield frameworks[f], modes[m], archs[a], batches[b]


def _status(summary: xr.Dataset) -> np.ndarray:
    return summary["status"].transpose(*CELL_DIMS).values


def latency_table(summary: xr.Dataset, batch: int) -> str:
    title = f"# Median latency (µs) at batch {batch}\n\n"
    if batch not in summary["batch"].values:
        measured = ", ".join(str(b) for b in summary["batch"].values)
        return title + f"No cells at batch {batch} (batches measured: {measured}).\n"
    at_batch = summary.sel(batch=batch)
    status = at_batch["status"].transpose("arch", "framework", "mode").values
    variants = [
        (f, m)
        for f, framework in enumerate(summary["framework"].values)
        for m, mode in enumerate(summary["mode"].values)
        if (status[:, f, m] != STATUS_ABSENT).any()
    ]
    median = at_batch[V.median_s].transpose("arch", "framework", "mode").values
    rows = []
    for a, arch in enumerate(summary["arch"].values):
        medians = [median[a, f, m] for f, m in variants]
        fastest = int(np.nanargmin(medians)) if not np.all(np.isnan(medians)) else -1
        row: list[object] = [arch]
        for i, (f, m) in enumerate(variants):
            if status[a, f, m] == STATUS_FAILED:
                row.append(FAILED_MARK)
            elif i == fastest:
                row.append(f"**{fixed(medians[i], 1e6)}**")
            else:
                row.append(fixed(medians[i], 1e6))
        verdict = at_batch["winner_verdict"].sel(arch=arch, scope="all").item()
        tied = at_batch["winner_tied"].sel(arch=arch, scope="all").item()
        winner = at_batch["winner"].sel(arch=arch, scope="all").item()
        row.append(
            f"{WINNER}: {winner}"
            if verdict == WINNER
            else f"{verdict}: {tied}"
            if tied
            else verdict
        )
        rows.append(row)
    header = (
        ["arch"]
        + [f"{summary['framework'].values[f]}/{summary['mode'].values[m]}" for f, m in variants]
        + ["verdict"]
    )
    note = (
        "Fastest median per row in **bold** (flagged cells included: flagged.md); verdict: the "
        "winner among unflagged cells, or the tie (winners.md). "
        f"{FAILED_MARK}: the cell failed "
        f"(failed.md); {MISSING}: no measurement.\n\n"
    )
    return title + note + markdown_table(header, rows)


def compile_speedup_table(summary: xr.Dataset) -> str:
    compiled_modes = summary["mode"].values != EAGER_MODE
    status = _status(summary)
    where = (status != STATUS_ABSENT) & compiled_modes[None, :, None, None]
    rows = []
    for cell in _cells(summary, where):
        framework, mode, arch, batch = cell
        eager = (framework, EAGER_MODE, arch, batch)
        has_eager = EAGER_MODE in summary["mode"].values
        eager_status = cell_value(summary, "status", eager) if has_eager else ""
        if cell_value(summary, "status", cell) != STATUS_OK or eager_status != STATUS_OK:
            failed = "compiled" if cell_value(summary, "status", cell) != STATUS_OK else "eager"
            rows.append([framework, mode, arch, batch] + [f"{failed} {FAILED_MARK}"] + [""] * 5)
            continue
        low = cell_value(summary, "speedup_ci_low", cell)
        high = cell_value(summary, "speedup_ci_high", cell)
        rows.append(
            [
                framework,
                mode,
                arch,
                batch,
                f"{fixed(cell_value(summary, V.speedup_vs_eager, cell), digits=2)} "
                f"[{fixed(low, digits=2)}, {fixed(high, digits=2)}]",
                fixed(cell_value(summary, V.median_s, eager), 1e6),
                fixed(cell_value(summary, V.median_s, cell), 1e6),
                fixed(cell_value(summary, V.first_call_s, cell), digits=3),
                fixed(cell_value(summary, "compile_overhead_s", cell), digits=3),
                fixed(cell_value(summary, "break_even_iterations", cell), digits=0),
            ]
        )
    confidence = summary.attrs.get("stats_confidence", math.nan)
    header = [
        "framework",
        "mode",
        "arch",
        "batch",
        f"speedup [{percent(confidence)} CI]",
        "eager median µs",
        "compiled median µs",
        "first call s",
        "overhead s",
        "break-even calls",
    ]
    return (
        "# Compile speedup: eager median / compiled median\n\n"
        "Overhead = first call − median. Break-even: the smallest number of calls after which "
        "compiling and running took no longer than running eagerly (never: it does not pay).\n\n"
        + markdown_table(header, rows)
    )


def efficiency_table(summary: xr.Dataset) -> str:
    rows = []
    for cell in _cells(summary, _status(summary) == STATUS_OK):
        efficiency = cell_value(summary, V.efficiency, cell)
        rows.append(
            [
                cell[2],
                cell[3],
                f"{cell[0]}/{cell[1]}",
                fixed(cell_value(summary, "arithmetic_intensity", cell), digits=2),
                fixed(cell_value(summary, "achieved_flops_per_s", cell), 1e-9, 2),
                fixed(cell_value(summary, "lower_bound_s", cell), 1e6, 2),
                fixed(cell_value(summary, V.median_s, cell), 1e6),
                fixed(efficiency, digits=3),
                cell_value(summary, "memory_level", cell) if "memory_level" in summary else "",
                cell_value(summary, "bound", cell),
                fixed(cell_value(summary, "dram_efficiency", cell), digits=3)
                if "dram_efficiency" in summary
                else "",
                "invalid_fast" if efficiency > 1 else "",
            ]
        )
    header = [
        "arch",
        "batch",
        "variant",
        "FLOP/B",
        "achieved GFLOP/s",
        "lower bound µs",
        "median µs",
        V.efficiency,
        "level",
        "bound",
        "DRAM-roof efficiency",
        "flag",
    ]
    return (
        "# Roofline efficiency: lower bound / median\n\n"
        f"Limits: {summary.attrs.get('roofline', 'unknown')}.\n"
        "Lower bound = max(FLOPs / peak, bytes / bandwidth of the memory level the cell's "
        "working set fits in, `level`); the DRAM-roof efficiency uses the STREAM triad for "
        "every cell. Efficiency is not clamped: above 1 (against the level's roof) means faster "
        "than the hardware allows (missing sync or wrong cost model).\n\n"
        + markdown_table(header, rows)
    )


def winners_table(summary: xr.Dataset) -> str:
    rows = []
    for arch in summary["arch"].values:
        for batch in summary["batch"].values:
            for scope in summary["scope"].values:
                row = summary.sel(arch=arch, batch=batch, scope=scope)
                rows.append(
                    [
                        arch,
                        batch,
                        scope,
                        row["winner_verdict"].item(),
                        row["winner"].item(),
                        row["winner_fastest"].item(),
                        fixed(row["winner_fastest_median_s"].item(), 1e6),
                        row["winner_runner_up"].item(),
                        fixed(row["winner_runner_up_median_s"].item(), 1e6),
                        fixed(row["winner_p_holm"].item(), digits=4),
                        row["winner_tied"].item(),
                        row["winner_excluded"].item() if "winner_excluded" in row else "",
                    ]
                )
    header = [
        "arch",
        "batch",
        "among",
        "verdict",
        "winner",
        "fastest",
        "median µs",
        "runner-up",
        "median µs",
        "p (Holm)",
        "tied set",
        "excluded (flagged)",
    ]
    alpha = summary.attrs.get("stats_alpha", math.nan)
    effect = summary.attrs.get("stats_min_effect_pct", math.nan)
    return (
        "# Winners\n\n"
        "Fastest by median; a winner only when every other variant is slower both "
        "significantly (one-sided in the medians' direction: Mann–Whitney U, or over processes "
        "Student's t on log median ratios, σ between processes; p doubled as that direction "
        f"was read off the data; Holm-adjusted p < {alpha}, the table's comparisons corrected "
        f"together) and by at least {effect}% in median. Otherwise a tie among the variants "
        "that are not. Failed cells do not compete (failed.md); flagged cells (noisy, "
        "contended, faster than the roofline) do not either and are listed in the last column "
        "(flagged.md).\n\n" + markdown_table(header, rows)
    )


def failed_table(summary: xr.Dataset) -> str:
    rows = [
        [*cell, cell_value(summary, "error_type", cell), cell_value(summary, "error", cell)]
        for cell in _cells(summary, _status(summary) == STATUS_FAILED)
    ]
    if not rows:
        return "# Failed cells\n\nNo cell failed.\n"
    header = ["framework", "mode", "arch", "batch", "error type", "message"]
    return "# Failed cells\n\n" + markdown_table(header, rows)


def flagged_table(summary: xr.Dataset) -> str:
    flags = summary["flags"].transpose(*CELL_DIMS).values
    rows = [
        [
            *cell,
            cell_value(summary, "flags", cell),
            fixed(cell_value(summary, "cv_pct", cell)),
            fixed(cell_value(summary, "busy_cpu_other", cell), digits=2),
            fixed(cell_value(summary, V.efficiency, cell), digits=3),
        ]
        for cell in _cells(summary, flags != "")
    ]
    legend = "\n".join(f"- {line}" for line in summary.attrs.get("flags", "").split("; "))
    if not rows:
        return f"# Flagged cells\n\nNo cell is flagged.\n\n{legend}\n"
    header = ["framework", "mode", "arch", "batch", "flags", "CV %", "busy cores", V.efficiency]
    return f"# Flagged cells\n\n{legend}\n\n" + markdown_table(header, rows)


def render_tables(summary: xr.Dataset) -> dict[str, str]:
    """Every table as Markdown text, keyed by the names in TABLES."""
    return {
        "latency": latency_table(summary, int(summary.attrs["stats_table_batch"])),
        "compile_speedup": compile_speedup_table(summary),
        V.efficiency: efficiency_table(summary),
        "winners": winners_table(summary),
        "failed": failed_table(summary),
        "flagged": flagged_table(summary),
    }


def write_tables(summary: xr.Dataset, paths: Mapping[str, str | os.PathLike]) -> None:
    """Every table of TABLES to its path (tables/*.md of the stats rule)."""
    missing = [name for name in TABLES if name not in paths]
    if missing:
        raise ValueError(f"no output path for the tables {', '.join(missing)}")
    for name, text in render_tables(summary).items():
        write_text(text, paths[name])
