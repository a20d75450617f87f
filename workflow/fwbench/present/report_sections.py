"""The report's sections made from stats.nc, the aggregate and the hardware file: the header,
hardware, method, figures and winners (fwbench.present.report puts them in order).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from fwbench.io.dims import CELL_DIMS, STATUS_OK
from fwbench.present.figure_data import FigureInputs, cell_name, cells_where, variants
from fwbench.present.format import MISSING, fixed, latency_us, ratio, significant
from fwbench.present.hardware_summary import HardwareSummary
from fwbench.present.report_compile import RECURRENT_EAGER, compile_rows
from fwbench.present.tables import markdown_table

# The order and titles of the figures the report shows; a figure not listed comes last.
FIGURE_TITLES = {
    "hardware": "Hardware limits: GEMM peaks and STREAM bandwidth",
    "roofline": "Roofline per batch",
    "latency": "Latency at the table batch",
    "speedup": "Compile speedup",
    "efficiency": "Roofline efficiency",
    "scaling": "Batch scaling",
    "stability": "Measurement stability",
    "training_time": "Training cost",
    "training_curves": "Training curves",
}


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) and text else {}
    except json.JSONDecodeError:
        return text


def header_section(stats: xr.Dataset, hardware: HardwareSummary | None) -> str:
    attrs = stats.attrs
    versions = _json(attrs.get("framework_versions", ""))
    versions_text = ", ".join(f"{fw} {v}" for fw, v in versions.items()) if versions else MISSING
    device = hardware.device_name if hardware else attrs.get("device", MISSING)
    return (
        "# fwbench report\n\n"
        f"PyTorch vs JAX vs TensorFlow on **{device}** (host `{attrs.get('host', MISSING)}`, "
        f"device `{attrs.get('device', MISSING)}`): {attrs.get('cells', MISSING)} cells; "
        f"{versions_text}. Code `{attrs.get('git_commit', MISSING)}`; each cell's settings "
        "hash is in `results/aggregate/bench.nc` (`config_hash`).\n"
    )


def _samples_text(stats: xr.Dataset, settings: Mapping[str, Any]) -> str:
    """What one timed sample is: one call, or the mean of several consecutive calls."""
    calls = np.array([])
    if "calls_per_sample" in stats:
        calls = stats["calls_per_sample"].where(stats["status"] == STATUS_OK).values
        calls = calls[np.isfinite(calls)]
    if calls.size == 0 or calls.max() <= 1:
        return "Each sample is one call, timed alone."
    low, high = int(calls.min()), int(calls.max())
    span = f"{low}" if low == high else f"{low}–{high}"
    minimum = settings.get("min_sample_s", MISSING)
    minimum = f"{1e3 * minimum:g} ms" if isinstance(minimum, int | float) else minimum
    return (
        f"Each sample is the mean of as many consecutive calls as last {minimum} at the "
        f"warm-up calls' pace ({span} calls per sample across the cells; one where a call "
        "lasts that long): σ, CV and the CIs are over these samples, so they are the "
        "spread of a mean over a sample's calls, not of single calls."
    )


def method_section(stats: xr.Dataset, bench: xr.Dataset | None, settings: Mapping[str, Any]) -> str:
    attrs = stats.attrs
    thread_count = _thread_counts(attrs.get("threads", ""))
    n = stats["n"].where(stats["status"] == STATUS_OK).values
    n = n[np.isfinite(n)]
    repeats = (
        MISSING
        if n.size == 0
        else str(int(n.min()))
        if n.min() == n.max()
        else f"{int(n.min())}–{int(n.max())}"
    )
    warmup = settings.get("warmup", MISSING)
    versions = []
    if "framework_version" in stats:
        for framework in stats["framework"].values:
            version = stats["framework_version"].sel(framework=framework).item()
            extra = ""
            if bench is not None and "versions" in bench:
                detail = _json(bench["versions"].sel(framework=framework).item())
                if isinstance(detail, dict) and detail:
                    extra = " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"
            versions.append(f"{framework} {version}{extra}")
    compile_table = markdown_table(
        [
            "framework",
            "mode",
            "how",
            "ran compiled",
            "graphs",
            "graph breaks",
            "fallbacks",
            "eager ops in the graph",
        ],
        compile_rows(stats, bench),
    )
    flagged = _uncompiled_cells(stats)
    return (
        "## Method\n\n"
        f"- Each cell (framework × mode × architecture × batch) runs in its own process, one "
        f"timing job at a time on the host, with {thread_count} thread(s) for every framework.\n"
        f"- {warmup} untimed warm-up calls, then {repeats} timed samples. "
        + _samples_text(stats, settings)
        + " Every call is synchronized before the next starts; the first call "
        "(tracing/compilation) is timed apart.\n"
        f"- Statistics: median with a {fixed(attrs.get('stats_confidence', math.nan), 100, 0)}% "
        f"percentile-bootstrap CI ({attrs.get('stats_bootstrap_resamples', MISSING)} "
        f"resamples; {attrs.get('median_ci_level', 'over the timings of one process')}). "
        f"CV above {attrs.get('stats_cv_threshold_pct', MISSING)}% is flagged "
        "noisy. A winner is declared only when every other variant is slower both "
        "significantly (one-sided, in the medians' direction: Mann–Whitney U on the timings, or "
        "with several processes a z-test on hierarchical bootstrap replicates; p doubled, "
        "Holm-corrected across the table, "
        f"p < {attrs.get('stats_alpha', MISSING)}) and by at least "
        f"{attrs.get('stats_min_effect_pct', MISSING)}% in median; otherwise the result is a "
        "tie. Flagged cells do not compete.\n"
        "- The garbage collector is off during warm-up and timed calls (as in timeit) and the "
        "framework's context (torch inference mode, TensorFlow device scope) is entered once "
        "around them, not inside each timed call.\n"
        "- Roofline: each cell's lower bound is max(FLOPs ÷ float32 peak, bytes ÷ bandwidth), "
        "where the peak is the best GEMM rate of any framework at any swept size and the "
        "bandwidth is that of the smallest memory level the cell's working set (weights, input, "
        "output and the largest pair of consecutive activations, from the cost model) fits in: "
        "L1/L2 capacities count one core's cache per thread, the last level is shared. Level "
        "bandwidths are plateaus of a working-set sweep (read, copy and triad kernels in C; the "
        "fastest kernel is the level's roof). `efficiency` is against that cache-aware roof, "
        "`dram_efficiency` against the STREAM triad for every cell; `invalid_fast` means "
        "faster than the cache-aware roof.\n"
        + _quality_line(stats, settings)
        + _null_call_line(stats)
        + f"- Versions: {'; '.join(versions) or MISSING}.\n\n"
        "What each mode means, in the adapters' own words, and whether it really ran compiled "
        "(the framework's own evidence: graphs traced, breaks, fallbacks"
        + ("" if bench is not None else "; not available: the aggregate was not given")
        + "):\n\n"
        + compile_table
        + (f"\nCompiled modes that ran uncompiled: {', '.join(flagged)}.\n" if flagged else "")
        + RECURRENT_EAGER
    )


def _quality_line(stats: xr.Dataset, settings: Mapping[str, Any]) -> str:
    """How steady the measurements were: the sweep's median CV, per variant, and how many
    cells the contention detector flagged, with its thresholds."""
    ok = stats["status"] == STATUS_OK
    cv = stats["cv_pct"].where(ok)
    measured = int(ok.sum())
    if not measured:
        return ""
    per_variant = cv.median(dim=["arch", "batch"], skipna=True)
    parts = [
        f"{framework}/{mode} {fixed(per_variant.sel(framework=framework, mode=mode).item())}%"
        for framework, mode in variants(stats)
    ]
    contended = int((stats["contended"].where(ok) == 1).sum())
    pressure = settings.get("pressure_threshold")
    rule = f"other processes above {settings.get('busy_threshold_cores', MISSING)} cores"
    if pressure is not None:
        rule += f", or CPU pressure above {pressure} of the timed loop"
    return (
        f"- Measurement quality: median CV {fixed(float(cv.median(skipna=True)))}% over "
        f"{measured} measured cells ({', '.join(parts)}); {contended} cell(s) contended "
        f"({rule}).\n"
    )


def _null_call_line(stats: xr.Dataset) -> str:
    """Each framework's dispatch floor: its null call's median over the cells that ran."""
    if "null_call_s" not in stats:
        return ""
    ok = stats["status"] == STATUS_OK
    parts = []
    for framework in stats["framework"].values:
        null = stats["null_call_s"].where(ok).sel(framework=framework).values
        null = null[np.isfinite(null)]
        if null.size:
            parts.append(f"{framework} {latency_us(float(np.median(null)))} µs")
    if not parts:
        return ""
    return (
        "- Null call (one elementwise op on a 1-element tensor, synced: the framework's "
        f"dispatch floor, below which no cell can go), median over cells: {', '.join(parts)}.\n"
    )


def _thread_counts(text: str) -> str:
    """The thread count from the aggregate's `threads` attribute: one settings JSON, or a JSON
    list of them when cells differ."""
    value = _json(text)
    counts = set()
    for item in value if isinstance(value, list) else [value]:
        item = _json(item) if isinstance(item, str) else item
        counts.add(str(item.get("threads", MISSING)) if isinstance(item, dict) else str(item))
    return " or ".join(sorted(counts)) or MISSING


def _uncompiled_cells(stats: xr.Dataset) -> list[str]:
    """The cells of a compiled mode that ran uncompiled (flag `not_compiled`)."""
    flags = stats["flags"].transpose(*CELL_DIMS).values.astype(str)
    uncompiled = np.char.find(flags, "not_compiled") >= 0
    return [cell_name(*cell) for cell in cells_where(stats, uncompiled)]


def figures_section(figures: Sequence[Path], report_dir: Path) -> str:
    if not figures:
        return ""
    order = list(FIGURE_TITLES)
    ranked = sorted(
        figures, key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem)
    )
    parts = ["## Figures\n"]
    for figure in ranked:
        title = FIGURE_TITLES.get(figure.stem, figure.stem)
        link = Path(os.path.relpath(figure, report_dir)).as_posix()
        parts.append(f"### {title}\n\n![{title}]({link})\n")
    return "\n".join(parts)


def winners_section(stats: xr.Dataset) -> str:
    batch = FigureInputs(stats).batch  # the table batch, or the nearest one measured
    rows = []
    for arch in stats["arch"].values:
        for scope in stats["scope"].values:
            row = stats.sel(arch=arch, batch=batch, scope=scope)
            fastest = row["winner_fastest_median_s"].item()
            runner_up = row["winner_runner_up_median_s"].item()
            verdict = row["winner_verdict"].item()
            named = (
                row["winner"].item() if verdict in ("winner", "only") else row["winner_tied"].item()
            )
            rows.append(
                [
                    arch,
                    scope,
                    verdict,
                    named or MISSING,
                    row["winner_fastest"].item() or MISSING,
                    latency_us(fastest),
                    row["winner_runner_up"].item() or MISSING,
                    latency_us(runner_up),
                    ratio(runner_up, fastest),
                    significant(row["winner_p_holm"].item(), 2),
                ]
            )
    return (
        f"## Winners at batch {batch}\n\n"
        "Among all variants and among compiled ones only, flagged cells left out. A *winner* "
        "is faster than every other unflagged variant both significantly and by at least "
        f"{stats.attrs.get('stats_min_effect_pct', MISSING)}% in median; a *tie* names the "
        "variants for which either is not so. Every batch, and which cells were left out: "
        "the winners table below.\n\n"
        + markdown_table(
            [
                "arch",
                "among",
                "verdict",
                "winner / tied",
                "fastest",
                "median µs",
                "runner-up",
                "median µs",
                "runner-up ÷ fastest",
                "p (Holm)",
            ],
            rows,
        )
    )
