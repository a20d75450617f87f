"""A system's method: how each cell was run and timed, the statistics, the roofline, how
steady the measurements were, the frameworks' versions and what each mode compiled."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from fwbench.io.dims import STATUS_OK
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.format import MISSING, fixed, latency_us
from fwbench.present.intervals import METHOD_DOC, METHOD_LINK
from fwbench.present.report.compilation import RECURRENT_EAGER, compile_rows
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.markdown import parse_json
from fwbench.present.tables import decision_rule, markdown_table

COMPILE_HEADER = [
    "framework",
    "mode",
    "how",
    "ran compiled",
    "graphs",
    "graph breaks",
    "fallbacks",
    "eager ops in the graph",
]
ROOFLINE = (
    "- Roofline: each cell's lower bound is max(FLOPs ÷ float32 peak, bytes ÷ bandwidth), "
    "where the peak is the best GEMM rate of any framework at any swept size and the "
    "bandwidth is that of the smallest memory level the cell's working set (weights, input, "
    "output and the largest pair of consecutive activations, from the cost model) fits in: "
    "L1/L2 capacities count one core's cache per thread, the last level is shared. Level "
    "bandwidths are plateaus of a working-set sweep (read, copy and triad kernels in C; the "
    "fastest kernel is the level's roof). `efficiency` is against that cache-aware roof, "
    "`dram_efficiency` against the STREAM triad for every cell; `invalid_fast` means "
    "faster than the cache-aware roof.\n"
)
CONTEXT_AND_GC = (
    "- The garbage collector is off during warm-up and timed calls (as in timeit) and the "
    "framework's context (torch inference mode, TensorFlow device scope) is entered once "
    "around them, not inside each timed call.\n"
)


def method_section(context: ReportContext, part: SystemPart) -> str:
    view, stats, settings = part.view, part.stats, context.settings
    return (
        "## Method\n\n"
        f"- Each cell (framework × mode × architecture × batch) runs in its own process, one "
        "timing job at a time on the host, with "
        f"{_thread_counts(stats.attrs.get('threads', ''))} thread(s) for every framework.\n"
        f"- {settings.get('warmup', MISSING)} untimed warm-up calls, then {_repeats(view)} "
        "timed samples. "
        + _samples_text(view, settings)
        + " Every call is synchronized before the next starts; the first call "
        "(tracing/compilation) is timed apart.\n"
        + _processes_line(view, settings)
        + _statistics_line(stats.attrs)
        + CONTEXT_AND_GC
        + ROOFLINE
        + _quality_line(view, settings)
        + _null_call_line(view)
        + f"- Versions: {'; '.join(_versions(stats)) or MISSING}.\n\n"
        + _compile_part(view)
    )


def _processes_line(view: StatsView, settings: Mapping[str, Any]) -> str:
    """Which cells ran in several fresh processes: the seeded share of each architecture's
    batches per framework and mode (bench.multi_process_share, fwbench.plan.processes), in
    bench.processes processes, the rest in one; counted from the cells' `process_count`."""
    processes = int(view.attrs.get("processes", 1) or 1)
    if processes <= 1:
        return ""
    ok = view.status() == STATUS_OK
    counts = view.values(V.process_count).astype(float)
    several, measured = int((ok & (counts >= 2)).sum()), int(ok.sum())
    share = settings.get("multi_process_share")
    if isinstance(share, int | float) and share < 1:
        which = (
            f"A seeded {share:.0%} of each architecture's batch sizes (at least one) per "
            f"framework and mode (`bench.multi_process_share`) is measured in {processes} "
            "fresh processes (`bench.processes`), the rest in one"
        )
    elif isinstance(share, int | float):
        which = f"Every cell is measured in {processes} fresh processes (`bench.processes`)"
    else:
        which = f"Some cells are measured in up to {processes} fresh processes, the rest in one"
    lows = ""
    if any(precision != view.precision for precision in view.precisions()):
        lows = f" ({view.precision} cells; every cell in a lower precision ran in one)"
    return (
        f"- {which}: {several} of {measured} measured cells here ran in more than one{lows}. All "
        "processes run in one seeded shuffled order (each after its cell's process 0); a cell's "
        "timed samples of all its processes are pooled. The first call reported is process "
        "0's, with an empty compile cache; later processes start from a copy of its on-disk "
        "compile cache (torch inductor's), so they do not pay the cold compile again.\n"
    )


def _repeats(view: StatsView) -> str:
    """The timed samples per cell among the cells that ran: one count, or its range."""
    low, high = view.of_system(V.samples_min), view.of_system(V.samples_max)
    if math.isnan(low):
        return MISSING
    return str(int(low)) if low == high else f"{int(low)}–{int(high)}"


def _statistics_line(attrs: Mapping[str, Any]) -> str:
    return (
        f"- Statistics: median with a {fixed(attrs.get('stats_confidence', math.nan), 100, 0)}% "
        f"CI ({attrs.get('median_ci_level', 'over the timings of one process')}; bootstraps "
        f"are percentile, {attrs.get('stats_bootstrap_resamples', MISSING)} resamples; each "
        f"interval and what it covers: [{METHOD_DOC}]({METHOD_LINK})). "
        f"A CV above {attrs.get('stats_cv_threshold_pct', MISSING)}% and above "
        f"{attrs.get('stats_cv_machine_factor', MISSING)}× the speed canary's CV beside it "
        "(the machine's own noise on that core) is flagged high_cv: the framework's own noise, "
        "unusual here; it widens the cell's CIs and the cell still competes. Contended, "
        "slow-machine, faster-than-roofline and other-node cells do not compete for a winner. "
        + decision_rule(attrs)
        + " No correction for the many comparisons: each verdict is at the level above "
        "(results/summary/comparisons.csv lists every one).\n"
    )


def _versions(stats: xr.Dataset) -> list[str]:
    """Each framework's version, with its library versions."""
    versions = []
    for framework in stats["framework"].values:
        version = stats["framework_version"].sel(framework=framework).item()
        detail = parse_json(stats["versions"].sel(framework=framework).item())
        extra = ""
        if isinstance(detail, dict) and detail:
            extra = " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"
        versions.append(f"{framework} {version}{extra}")
    return versions


def _compile_part(view: StatsView) -> str:
    """What each mode means and whether it really ran compiled, with the compile table."""
    flagged = _uncompiled_cells(view)
    return (
        "What each mode means, in the adapters' own words, and whether it really ran compiled "
        "(the framework's own evidence: graphs traced, breaks, fallbacks):\n\n"
        + markdown_table(COMPILE_HEADER, compile_rows(view))
        + (f"\nCompiled modes that ran uncompiled: {', '.join(flagged)}.\n" if flagged else "")
        + RECURRENT_EAGER
    )


def _samples_text(view: StatsView, settings: Mapping[str, Any]) -> str:
    """What one timed sample is: one call, or the mean of several consecutive calls."""
    low, high = view.of_system(V.calls_per_sample_min), view.of_system(V.calls_per_sample_max)
    if math.isnan(high) or high <= 1:
        return "Each sample is one call, timed alone."
    span = f"{int(low)}" if low == high else f"{int(low)}–{int(high)}"
    minimum = settings.get("min_sample_s", MISSING)
    minimum = f"{1e3 * minimum:g} ms" if isinstance(minimum, int | float) else minimum
    return (
        f"Each sample is the mean of as many consecutive calls as last {minimum} at the "
        f"later warm-up calls' pace ({span} calls per sample across the cells; one where a call "
        "lasts that long): σ, CV and the CIs are over these samples, so they are the "
        "spread of a mean over a sample's calls, not of single calls."
    )


def _quality_line(view: StatsView, settings: Mapping[str, Any]) -> str:
    """How steady the measurements were: the sweep's median CV, per variant, and how many
    cells the contention detector flagged, with its thresholds."""
    measured = int(view.of_system(V.cells_ok))
    if not measured:
        return ""
    parts = [
        f"{framework}/{mode} {fixed(view.of_variant(V.variant_cv_pct, framework, mode))}%"
        for framework, mode in view.variants()
    ]
    contended = int(view.of_system(V.system_contended_cells))
    pressure = settings.get("pressure_threshold")
    rule = f"other processes above {settings.get('busy_threshold_cores', MISSING)} cores"
    if pressure is not None:
        rule += f", or CPU pressure above {pressure} of the timed loop"
    return (
        f"- Measurement quality: median CV {fixed(view.of_system(V.system_cv_pct))}% over "
        f"{measured} measured cells ({', '.join(parts)}); {contended} cell(s) contended "
        f"({rule}).\n"
    )


def _null_call_line(view: StatsView) -> str:
    """Each framework's dispatch floor: its null call's median over the cells that ran."""
    parts = [
        f"{framework} {latency_us(floor)} µs"
        for framework in view.ds["framework"].values
        if math.isfinite(floor := view.of_framework(V.framework_null_call_s, framework))
    ]
    if not parts:
        return ""
    return (
        "- Null call (one elementwise op on a 1-element tensor, synced: the framework's "
        f"dispatch floor, below which no cell can go), median over cells: {', '.join(parts)}.\n"
    )


def _thread_counts(text: str) -> str:
    """The thread count from the aggregate's `threads` attribute: one settings JSON, or a JSON
    list of them when cells differ."""
    value = parse_json(text)
    counts = set()
    for item in value if isinstance(value, list) else [value]:
        item = parse_json(item) if isinstance(item, str) else item
        counts.add(str(item.get("threads", MISSING)) if isinstance(item, dict) else str(item))
    return " or ".join(sorted(counts)) or MISSING


def _uncompiled_cells(view: StatsView) -> list[str]:
    """The cells of a compiled mode that ran uncompiled (flag `not_compiled`)."""
    uncompiled = np.char.find(view.values(V.flags).astype(str), "not_compiled") >= 0
    return [key.name for key in view.keys_where(uncompiled)]
