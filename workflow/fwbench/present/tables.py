"""The Markdown tables of results/summary/<system>/tables/, rendered from one system's stats.nc
(through its view) by the `tables` rule; the list of tables: fwbench.present.catalog.TABLES.

latency (median µs at the table batch, fastest per row in bold), compile_speedup, efficiency,
winners, failed, flagged. Failed cells show "failed" where a number would be (failed.md: why)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from fwbench.io.atomic import write_text
from fwbench.io.comparisons_file import FASTER, SLOWER
from fwbench.io.dims import EAGER_MODE, STATUS_ABSENT, STATUS_FAILED, STATUS_OK, CellKey, along
from fwbench.io.stats_file import VIEW_DIMS, StatsView
from fwbench.io.variables import ONLY, SCOPE, SCOPE_ALL, WINNER, V
from fwbench.present import catalog
from fwbench.present.figure_data import batch_note
from fwbench.present.format import MISSING, fixed, p_value, percent, speedup_with_ci

FAILED_MARK = "failed"
SPEEDUP_WITH_CI = (V.speedup_vs_eager, V.speedup_ci_low, V.speedup_ci_high)
TABLES = tuple(catalog.table_names())


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table; pipes and newlines in cells are escaped."""

    def cell(value: object) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ").strip()

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cells(view: StatsView, where: np.ndarray) -> list[CellKey]:
    """The cells where `where` (over VIEW_DIMS) holds, in table order: arch, batch, framework,
    mode (the order of the stats file's coordinates within each)."""
    order = {name: i for i, name in enumerate(view.archs())}
    frameworks = view.ds["framework"].values.tolist()
    modes = view.ds["mode"].values.tolist()
    return sorted(
        view.keys_where(where),
        key=lambda k: (order[k.arch], k.batch, frameworks.index(k.framework), modes.index(k.mode)),
    )


def latency_table(view: StatsView) -> str:
    batch = view.table_batch
    title = f"# Median latency (µs) at batch {batch}\n\n"
    if batch != view.wanted_batch:
        title += f"{batch_note(view)}\n\n"
    archs = view.archs()
    shown = [
        variant
        for variant in view.variants()
        if any(view.value(V.status, CellKey(*variant, a, batch)) != STATUS_ABSENT for a in archs)
    ]
    rows = [
        [
            arch,
            *_latency_cells(view, [CellKey(*variant, arch, batch) for variant in shown]),
            _verdict(view, arch, batch),
        ]
        for arch in archs
    ]
    header = ["arch", *(f"{framework}/{mode}" for framework, mode in shown), "verdict"]
    note = (
        "Fastest median per row in **bold** (flagged cells included: flagged.md); verdict: the "
        "winner among unflagged cells, or the contenders (winners.md). "
        f"{FAILED_MARK}: the cell failed "
        f"(failed.md); {MISSING}: no measurement.\n\n"
    )
    return title + note + markdown_table(header, rows)


def _latency_cells(view: StatsView, keys: list[CellKey]) -> list[str]:
    """One row's medians (one cell per variant shown), the fastest in bold."""
    medians = [view.value(V.median_s, key) for key in keys]
    fastest = int(np.nanargmin(medians)) if not np.all(np.isnan(medians)) else -1
    cells = []
    for i, key in enumerate(keys):
        if view.value(V.status, key) == STATUS_FAILED:
            cells.append(FAILED_MARK)
        elif i == fastest:
            cells.append(f"**{fixed(medians[i], 1e6)}**")
        else:
            cells.append(fixed(medians[i], 1e6))
    return cells


def _verdict(view: StatsView, arch: str, batch: int) -> str:
    row = view.ds.sel(arch=arch, batch=batch, **{SCOPE: SCOPE_ALL})
    verdict, named = row[V.winner_verdict].item(), _named(row)
    return f"{verdict}: {named}" if named else verdict


def _named(row) -> str:
    """The winner (winner, only), else the contenders: the fastest and every rival not
    decided slower."""
    verdict = row[V.winner_verdict].item()
    return row[V.winner].item() if verdict in (WINNER, ONLY) else row[V.winner_contenders].item()


def decision_rule(attrs: Mapping) -> str:
    """How every verdict (winners, compile, deployment, versions) is reached, in words, from
    stats.nc's settings (fwbench.analysis.comparisons)."""
    confidence = fixed(attrs.get("stats_confidence", math.nan), 100, 0)
    effect = f"{attrs.get('stats_min_effect_pct', math.nan):g}"
    return (
        f"Each comparison is a ratio of medians with its {confidence}% CI (between processes, "
        "Student's t, where cells ran in several; a bootstrap of one process's timings "
        f"otherwise): *faster* / *slower* where the CI excludes 1 and the ratio is at least "
        f"{effect}% from 1; *equivalent* where the whole CI lies within ±{effect}% (two "
        "one-sided tests); *undetermined* where the CI allows both: the data cannot tell, and "
        "the CI says how far apart the two may be."
        + rounds_rule(attrs)
        + wrong_verdicts_rule(attrs)
    )


def wrong_verdicts_rule(attrs: Mapping) -> str:
    """How many comparisons were decided and the most a calibrated design calls the wrong way
    (stats.nc's `wrong_verdicts`, fwbench.analysis.comparisons.wrong_verdicts); '' without."""
    found = json.loads(attrs.get("wrong_verdicts", "{}") or "{}")
    if not found.get("comparisons"):
        return ""
    return (
        f" Of the {found['comparisons']} comparisons, {found['decided']} were called faster or "
        f"slower; with CIs that hold their level, at most {fixed(found['wrong_at_most'], 1, 1)} "
        "of them point the wrong way on average (each CI misses on one side in at most "
        "half its complement; the A/A control checks that the CIs hold)."
    )


def rounds_rule(attrs: Mapping) -> str:
    """Where the ratios come from the rounds (stats.nc's `rounds`, fwbench.analysis.rounds),
    in words, with the cost of a turn they measured; '' where none ran."""
    rounds = json.loads(attrs.get("rounds", "{}") or "{}")
    if not rounds:
        return ""
    batches, sets = rounds["batches"], rounds["sets"]
    return (
        f" At batch {', '.join(map(str, batches))} the ratios between variants come from the "
        "rounds, not from the cells: every variant of an architecture measured in alternation "
        "by its own worker process, one turn each per round in a shuffled order, in "
        f"{'/'.join(map(str, sets))} sets of fresh processes (the sets are blocks; each "
        "variant's spread between them is its own, pooled over the architectures); a turn's "
        f"first sample, right after another variant ran, is "
        f"{fixed(rounds['turn_cost_median'] - 1, 100, 1)}% slower than the next (median over "
        "variants), and the ratios use the next." + _state(rounds) + aa_control_rule(attrs)
    )


def aa_control_rule(attrs: Mapping) -> str:
    """The rounds' A/A controls (stats.nc's `aa_control`) in words: how many tables' CIs
    exclude 1 against the rate a calibrated design gives, how many were called faster or
    slower; '' where none ran."""
    controls = json.loads(attrs.get("aa_control", "[]") or "[]")
    if not controls:
        return ""
    tables, level = len(controls), 1 - float(attrs.get("stats_confidence", 0.95))
    differ = sum(c["ci_low"] > 1 or c["ci_high"] < 1 for c in controls)
    called = sum(c["verdict"] in (FASTER, SLOWER) for c in controls)
    return (
        f" A/A control: in {tables} table{'s' * (tables > 1)} one variant was measured by a "
        "second worker of its own and compared with itself like any pair: "
        f"{differ} of {tables} CIs exclude 1 (a calibrated design: about "
        f"{fixed(level * tables, 1, 1)}), {called} called faster or slower."
    )


def _state(rounds: Mapping) -> str:
    """The machine's state between the rounds' sets, in words; '' where none was fitted."""
    sigma = rounds.get("state_sigma_log")
    if sigma is None:
        return ""
    return (
        f" Between the sets the machine's state moved a typical variant's latency by σ "
        f"{fixed(math.exp(sigma) - 1, 100, 1)}%, each variant by its own sensitivity: a pair "
        "that responds unalike gets that in its CI, and every median's CI holds it once "
        "(`state_sigma` says how far it moved the variant)."
    )


WINNER_HEADER = [
    "verdict",
    "winner / contenders",
    "fastest",
    "median µs",
    "runner-up",
    "median µs",
    "runner-up ÷ fastest [CI]",
    "p",
]


def winner_cells(row) -> list[str]:
    """One contest (stats.nc at an arch, batch and scope) as the cells of WINNER_HEADER."""
    return [
        row[V.winner_verdict].item(),
        _named(row) or MISSING,
        row[V.winner_fastest].item() or MISSING,
        fixed(row[V.winner_fastest_median_s].item(), 1e6),
        row[V.winner_runner_up].item() or MISSING,
        fixed(row[V.winner_runner_up_median_s].item(), 1e6),
        speedup_with_ci(*(row[n].item() for n in RATIO_WITH_CI)),
        p_value(row[V.winner_p_value].item()),
    ]


RATIO_WITH_CI = (V.winner_runner_up_ratio, V.winner_ratio_ci_low, V.winner_ratio_ci_high)


def compile_speedup_table(view: StatsView) -> str:
    compiled_modes = view.ds["mode"].values != EAGER_MODE
    where = (view.status() != STATUS_ABSENT) & along(compiled_modes, "mode", VIEW_DIMS)
    has_eager = EAGER_MODE in view.ds["mode"].values
    rows = []
    for key in _cells(view, where):
        eager = key.with_mode(EAGER_MODE)
        eager_status = view.value(V.status, eager) if has_eager else ""
        if view.value(V.status, key) != STATUS_OK or eager_status != STATUS_OK:
            failed = "compiled" if view.value(V.status, key) != STATUS_OK else "eager"
            rows.append([*view.columns(key), f"{failed} {FAILED_MARK}"] + [""] * 5)
            continue
        rows.append(
            [
                *view.columns(key),
                speedup_with_ci(*(view.value(name, key) for name in SPEEDUP_WITH_CI)),
                fixed(view.value(V.median_s, eager), 1e6),
                fixed(view.value(V.median_s, key), 1e6),
                fixed(view.value(V.first_call_s, key), digits=3),
                fixed(view.value(V.compile_overhead_s, key), digits=3),
                fixed(view.value(V.break_even_iterations, key), digits=0),
            ]
        )
    confidence = view.attrs.get("stats_confidence", math.nan)
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
        "Where the rounds measured both (the table batch by default), the speedup is the "
        "rounds' ratio, their two medians measured moments apart; the medians shown are the "
        "cells'. Overhead = first call − median. Break-even: the smallest number of calls "
        "after which compiling and running took no longer than running eagerly (never: it "
        "does not pay).\n\n" + markdown_table(header, rows)
    )


def efficiency_table(view: StatsView) -> str:
    rows = []
    for key in _cells(view, view.status() == STATUS_OK):
        efficiency = view.value(V.efficiency, key)
        rows.append(
            [
                key.arch,
                key.batch,
                f"{key.framework}/{key.mode}",
                fixed(view.value(V.arithmetic_intensity, key), digits=2),
                fixed(view.value(V.achieved_flops_per_s, key), 1e-9, 2),
                fixed(view.value(V.lower_bound_s, key), 1e6, 2),
                fixed(view.value(V.median_s, key), 1e6),
                fixed(efficiency, digits=3),
                view.value(V.memory_level, key),
                view.value(V.bound, key),
                fixed(view.value(V.dram_efficiency, key), digits=3),
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
        f"Limits: {view.attrs.get('roofline', 'unknown')}.\n"
        "Lower bound = max(FLOPs / peak, bytes / bandwidth of the memory level the cell's "
        "working set fits in, `level`); the DRAM-roof efficiency uses the STREAM triad for "
        "every cell. Efficiency is not clamped: above 1 (against the level's roof) means faster "
        "than the hardware allows (missing sync or wrong cost model).\n\n"
        + markdown_table(header, rows)
    )


def winners_table(view: StatsView) -> str:
    summary = view.ds
    rows = [
        [
            arch,
            batch,
            scope,
            *winner_cells(row := summary.sel(arch=arch, batch=batch, **{SCOPE: scope})),
            row[V.winner_excluded].item(),
        ]
        for arch in summary["arch"].values
        for batch in summary["batch"].values
        for scope in summary[SCOPE].values
    ]
    header = ["arch", "batch", "among", *WINNER_HEADER, "excluded (flagged)"]
    return (
        "# Winners\n\n"
        "The fastest unflagged variant by median against each other one. A *winner* is faster "
        "than every rival; *equivalent*: every rival is slower or equivalent, the contenders "
        "being the fastest and the equivalent ones; *undetermined*: some rival is neither, "
        "the contenders being the fastest and every rival not decided slower (the runner-up's "
        "ratio CI says what the data allow). "
        + decision_rule(summary.attrs)
        + " p: two-sided, of no difference between the fastest and the runner-up, at no "
        "correction for the table's many comparisons (comparisons.csv lists each). Failed "
        "cells do not compete (failed.md); flagged cells (noisy, contended, faster than the "
        "roofline) do not either and are listed in the last column (flagged.md).\n\n"
        + markdown_table(header, rows)
    )


def failed_table(view: StatsView) -> str:
    rows = [
        [*view.columns(key), view.value(V.error_type, key), view.value(V.error, key)]
        for key in _cells(view, view.status() == STATUS_FAILED)
    ]
    if not rows:
        return "# Failed cells\n\nNo cell failed.\n"
    header = ["framework", "mode", "arch", "batch", "error type", "message"]
    return "# Failed cells\n\n" + markdown_table(header, rows)


def flagged_table(view: StatsView) -> str:
    rows = [
        [
            *view.columns(key),
            view.value(V.flags, key),
            fixed(view.value(V.cv_pct, key)),
            fixed(view.value(V.busy_cpu_other, key), digits=2),
            fixed(view.value(V.efficiency, key), digits=3),
        ]
        for key in _cells(view, view.values(V.flags) != "")
    ]
    legend = "\n".join(f"- {line}" for line in view.attrs.get("flags", "").split("; "))
    if not rows:
        return f"# Flagged cells\n\nNo cell is flagged.\n\n{legend}\n"
    header = ["framework", "mode", "arch", "batch", "flags", "CV %", "busy cores", V.efficiency]
    return f"# Flagged cells\n\n{legend}\n\n" + markdown_table(header, rows)


def render_tables(view: StatsView) -> dict[str, str]:
    """Every table of the catalog as Markdown text, by name."""
    return {entry.name: entry.resolve()(view) for entry in catalog.TABLES}


def write_tables(view: StatsView, paths: Mapping[str, str | os.PathLike]) -> None:
    """Every table of TABLES to its path (tables/*.md of the tables rule)."""
    missing = [name for name in TABLES if name not in paths]
    if missing:
        raise ValueError(f"no output path for the tables {', '.join(missing)}")
    for name, text in render_tables(view).items():
        write_text(text, paths[name])
