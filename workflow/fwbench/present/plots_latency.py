"""The figures about time: latency, compile speedup, batch scaling and measurement stability.

latency    median latency at the table batch per architecture and variant, with its CI
speedup    eager ÷ compiled median per architecture and compiled variant, with its CI
scaling    latency vs batch per architecture, compiled variants, log–log
stability  CV per cell against the threshold, noisy cells named
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from fwbench.analysis.flags import FLAG_HIGH_CV, has_flag
from fwbench.io.dims import EAGER_MODE, STATUS_ABSENT, STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.variables import V
from fwbench.present import catalog
from fwbench.present.figure_data import FigureInputs, failed_note, listed
from fwbench.present.format import short
from fwbench.present.intervals import whiskers_note
from fwbench.present.style import (
    FLAG_COLOR,
    NEUTRAL_COLOR,
    add_note,
    bar_figure_width,
    bar_style,
    ci_yerr,
    group_offsets,
    keep_labels_inside,
    mark_failed,
    marker_style,
    message_axes,
    new_figure,
    place_legend,
    plain_log_ticks,
    ratio_log_ticks,
    value_labels,
    variant_handles,
)

US = 1e6  # seconds → µs
ERROR_BARS = {"capsize": 2, "error_kw": {"elinewidth": 0.8, "ecolor": "black"}}


def _one_source(view, framework: str, mode: str, batch: int) -> tuple[np.ndarray, ...]:
    """Per architecture: the median and its CI (µs) from the rounds where they measured the
    variant (paired_median_s: the ratios' and the winners' source), else the cell's (a
    stats.nc written before paired medians: the cell's)."""
    found = []
    for paired, cell in (
        (V.paired_median_s, V.median_s),
        (V.paired_median_ci_low_s, V.median_ci_low_s),
        (V.paired_median_ci_high_s, V.median_ci_high_s),
    ):
        values = view.series(cell, framework, mode, batch=batch)
        if paired in view.ds:
            rounds = view.series(paired, framework, mode, batch=batch)
            values = np.where(np.isfinite(rounds), rounds, values)
        found.append(values * US)
    return tuple(found)


def _whiskers(inputs: FigureInputs, figure: str) -> str:
    """The figure's sentence on its whiskers (fwbench.present.intervals)."""
    return whiskers_note(inputs.view.attrs, catalog.whiskers_of(figure))


def draw_latency(inputs: FigureInputs) -> Figure:
    view, stats, batch = inputs.view, inputs.stats, inputs.batch
    archs = [str(a) for a in stats["arch"].values]
    present = view.variants()
    figure = new_figure(bar_figure_width(len(archs), len(present)), 4.8)
    ax = figure.subplots()
    if not (stats[V.status].sel(batch=batch) == STATUS_OK).any():
        message_axes(ax, f"No cell at batch {batch} was measured.")
        add_note(figure, [inputs.batch_note(), failed_note(inputs.view, [batch])])
        return figure
    offsets, width = group_offsets(len(present))
    any_failed, labels = False, []
    for i, (framework, mode) in enumerate(present):
        median, low, high = _one_source(view, framework, mode, batch)
        status = view.series(V.status, framework, mode, batch=batch)
        x = np.arange(len(archs)) + offsets[i]
        ok = (status == STATUS_OK) & np.isfinite(median)
        yerr = ci_yerr(median, low, high)[:, ok]
        ax.bar(x[ok], median[ok], width, yerr=yerr, **ERROR_BARS, **bar_style(framework, mode))
        ends = np.fmax(high, median)[ok]
        labels += value_labels(ax, x[ok], ends, [short(v) for v in median[ok]], ok[ok])
        for xi in x[status == STATUS_FAILED]:
            mark_failed(ax, xi)
            any_failed = True
    ax.set_yscale("log")
    ax.margins(y=0.05)
    plain_log_ticks(ax)
    ax.set_xticks(np.arange(len(archs)), archs)
    ax.set_ylabel("median latency per call (µs, log)")
    ax.set_title(f"Inference latency at batch {batch}: lower is better")
    ax.grid(True, axis="y", which="major", alpha=0.25)
    handles = variant_handles(present, bars=True)
    if any_failed:
        failed = Line2D([], [], marker="x", color=FLAG_COLOR, linestyle="none", label="failed")
        handles.append(failed)
    place_legend(figure, handles)
    add_note(
        figure,
        [
            "Bars: the rounds' median where the rounds measured the variant (the samples its"
            " ratios and its rank come from), else its cell's median of the warm iterations"
            " (µs, labelled).",
            _whiskers(inputs, "latency"),
            inputs.batch_note(),
            failed_note(inputs.view, [batch]),
        ],
    )
    keep_labels_inside(ax, labels)
    return figure


def draw_speedup(inputs: FigureInputs) -> Figure:
    view, stats, batch = inputs.view, inputs.stats, inputs.batch
    archs = [str(a) for a in stats["arch"].values]
    present = view.variants(compiled_only=True)
    figure = new_figure(bar_figure_width(len(archs), len(present), group_in=1.5), 4.8)
    ax = figure.subplots()
    if not present:
        message_axes(ax, "No compiled variant was measured.")
        return figure
    offsets, width = group_offsets(len(present))
    missing, uncompiled, drawn, labels = [], [], [1.0], []
    for i, (framework, mode) in enumerate(present):
        speedup = view.series(V.speedup_vs_eager, framework, mode, batch=batch)
        low = view.series(V.speedup_ci_low, framework, mode, batch=batch)
        high = view.series(V.speedup_ci_high, framework, mode, batch=batch)
        flags = view.series(V.flags, framework, mode, batch=batch)
        status = view.series(V.status, framework, mode, batch=batch)
        x = np.arange(len(archs)) + offsets[i]
        ok = np.isfinite(speedup) & (status == STATUS_OK)
        drawn += [*speedup[ok], *low[ok & np.isfinite(low)], *high[ok & np.isfinite(high)]]
        # Bars start at 1×, so a slowdown hangs below the line; its label hangs below it too.
        yerr = ci_yerr(speedup, low, high)[:, ok]
        style = bar_style(framework, mode)
        ax.bar(x[ok], speedup[ok] - 1, width, bottom=1, yerr=yerr, **ERROR_BARS, **style)
        fell_back = np.array(["not_compiled" in str(f) for f in flags]) & ok
        up = speedup >= 1
        ends = np.where(up, np.fmax(high, speedup), np.fmin(low, speedup))
        texts = [
            f"{short(v)}×" + ("†" if f else "") for v, f in zip(speedup, fell_back, strict=True)
        ]
        colors = np.where(fell_back, FLAG_COLOR, "0.1")
        labels += value_labels(ax, x[ok], ends[ok], np.array(texts)[ok], up[ok], colors[ok])
        for a, arch in enumerate(archs):
            if status[a] != STATUS_ABSENT and not ok[a]:
                missing.append(CellKey(framework, mode, arch, batch).name)
                mark_failed(ax, x[a])
            elif fell_back[a]:
                uncompiled.append(CellKey(framework, mode, arch, batch).name)
    _speedup_axes(ax, drawn, archs, batch)
    place_legend(figure, variant_handles(present, bars=True))
    add_note(figure, _speedup_notes(inputs, missing, uncompiled))
    keep_labels_inside(ax, labels)
    return figure


def _speedup_axes(ax, drawn: list[float], archs: list[str], batch: int) -> None:
    """The 1× line, a log axis spanning every bar and whisker drawn, ticks and labels."""
    ax.axhline(1, color="black", linewidth=1)
    ax.set_yscale("log")
    ax.set_ylim(min(drawn) / 1.15, max(drawn) * 1.15)  # keep_labels_inside adds the labels' room
    ratio_log_ticks(ax)
    ax.set_xticks(np.arange(len(archs)), archs)
    ax.set_ylabel("speedup over eager (eager ÷ compiled median)")
    ax.set_title(f"Compile speedup at batch {batch}: above 1× the compiled call is faster")
    ax.grid(True, axis="y", which="major", alpha=0.25)


def _speedup_notes(inputs: FigureInputs, missing: list[str], uncompiled: list[str]) -> list[str]:
    notes = [
        _whiskers(inputs, "speedup"),
        "Warm calls only: the compile-speedup table gives the first call's overhead and the "
        "break-even call count.",
        inputs.batch_note(),
    ]
    if missing:
        notes.append(f"No speedup (this or its eager cell failed): {listed(missing)}.")
    if uncompiled:
        notes.append(
            f"† (in red) ran uncompiled (the framework fell back to eager): {listed(uncompiled)}."
        )
    return notes


def draw_scaling(inputs: FigureInputs) -> Figure:
    view, stats = inputs.view, inputs.stats
    archs = [str(a) for a in stats["arch"].values]
    present = view.variants(compiled_only=True) or view.variants()
    cols = min(len(archs), 3)
    rows = math.ceil(len(archs) / cols)
    figure = new_figure(4.2 * cols + 2.2, 3.4 * rows + 0.8)
    axes = figure.subplots(rows, cols, squeeze=False, sharex=True).flatten()
    kind = "compiled variants" if present and present[0][1] != EAGER_MODE else "all variants"
    figure.suptitle(f"Batch scaling: median latency vs batch ({kind})")
    batches = stats["batch"].values.astype(float)
    for ax, arch in zip(axes, archs, strict=False):
        at_smallest = []
        for framework, mode in present:
            cell = stats.sel(framework=framework, mode=mode, arch=arch)
            median = cell[V.median_s].values * US
            ok = (cell[V.status].values == STATUS_OK) & np.isfinite(median)
            if not ok.any():
                continue
            low, high = cell[V.median_ci_low_s].values * US, cell[V.median_ci_high_s].values * US
            # NaN where a cell failed: the line breaks there rather than bridging the gap.
            shown = np.where(ok, median, np.nan)
            yerr = ci_yerr(shown, low, high)
            style = marker_style(framework, mode)
            ax.errorbar(batches, shown, yerr=yerr, capsize=2, ms=6, lw=1.3, **style)
            at_smallest.append(median[0] if ok[0] else np.nan)
        if np.isfinite(at_smallest).any():
            anchor = float(np.nanmin(at_smallest))
            ax.plot(batches, anchor * batches / batches[0], color=NEUTRAL_COLOR, ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax, "x")
        plain_log_ticks(ax, "y")
        ax.set_xticks(batches, [f"{b:g}" for b in batches])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(arch)
        ax.grid(True, which="major", alpha=0.25)
    spare = list(axes[len(archs) :])
    for ax in spare:
        ax.set_axis_off()
    figure.supxlabel("batch size (log)")
    figure.supylabel("median latency per call (µs, log)")
    linear = Line2D([], [], color=NEUTRAL_COLOR, linestyle=":", label="∝ batch (no batching gain)")
    place_legend(figure, [*variant_handles(present), linear], spare)
    add_note(
        figure,
        [
            _whiskers(inputs, "scaling"),
            "The dotted line grows in proportion to the batch from the fastest variant at the "
            "smallest batch: below it, batching pays.",
            failed_note(inputs.view, None),
        ],
    )
    return figure


def draw_stability(inputs: FigureInputs) -> Figure:
    view, stats, threshold = inputs.view, inputs.stats, inputs.threshold_pct
    factor = float(view.attrs["stats_cv_machine_factor"])
    archs = [str(a) for a in stats["arch"].values]
    batches = [int(b) for b in stats["batch"].values]
    present = view.variants()
    figure = new_figure(max(8, 1.7 * len(archs) + 2.5), 4.8)
    ax = figure.subplots()
    offsets, slot = group_offsets(len(present))
    # Within a variant's slot, batches sit side by side, smallest on the left.
    spread = (np.arange(len(batches)) - (len(batches) - 1) / 2) * slot / (len(batches) + 1)
    noisy = []
    for i, (framework, mode) in enumerate(present):
        cell = stats[[V.cv_pct, V.status, V.flags]].sel(framework=framework, mode=mode)
        cv = cell[V.cv_pct].transpose("arch", "batch").values
        ok = (cell[V.status].transpose("arch", "batch").values == STATUS_OK) & np.isfinite(cv)
        x = np.arange(len(archs))[:, None] + offsets[i] + spread[None, :]
        ax.plot(x[ok], cv[ok], linestyle="none", ms=6, alpha=0.85, **marker_style(framework, mode))
        above = ok & has_flag(cell[V.flags].transpose("arch", "batch").values, FLAG_HIGH_CV)
        ax.plot(x[above], cv[above], "o", ms=12, mfc="none", mec=FLAG_COLOR, linestyle="none")
        for a, b in zip(*np.nonzero(above), strict=True):
            noisy.append((cv[a, b], CellKey(framework, mode, archs[a], batches[b]).name))
    ax.axhline(threshold, color=FLAG_COLOR, linestyle="--", linewidth=1.2)
    ax.annotate(
        f"threshold {threshold:g}%",
        (1, threshold),
        xycoords=("axes fraction", "data"),
        xytext=(-4, 3),
        textcoords="offset points",
        ha="right",
        fontsize=8,
        color=FLAG_COLOR,
    )
    ax.set_yscale("log")
    plain_log_ticks(ax)
    ax.set_xticks(range(len(archs)), archs)
    ax.set_ylabel("coefficient of variation (%, log)")
    ax.set_title("Measurement stability: CV of the warm iterations, one point per cell")
    ax.grid(True, axis="y", which="major", alpha=0.25)
    place_legend(figure, variant_handles(present))
    names = [f"{name} ({cv:.0f}%)" for cv, name in sorted(noisy, reverse=True)]
    add_note(
        figure,
        [
            f"Noisy (high_cv, circled: CV above {threshold:g}% and above "
            f"{factor:g}× the speed canary's CV beside it): {listed(names)}."
            if names
            else f"No cell is flagged high_cv (CV above {threshold:g}% and above {factor:g}× "
            "the speed canary's CV beside it).",
            f"Within each variant, batches {', '.join(map(str, batches))} from left to right.",
            failed_note(inputs.view, None),
        ],
    )
    return figure
