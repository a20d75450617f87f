"""The figures about the hardware's limits against the cells: how close each cell comes.

roofline    achieved FLOP/s vs arithmetic intensity under every measured roof (one bandwidth per
            memory level, float32 and bfloat16 peaks), one panel per batch; each column names
            the memory level that bounds it
efficiency  roofline efficiency per (architecture, batch) and variant; flagged cells marked
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter

from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.figure_data import FigureInputs, Roofs, failed_note, roofs
from fwbench.present.format import percent
from fwbench.present.style import (
    FLAG_COLOR,
    GIGA,
    NEUTRAL_COLOR,
    add_note,
    marker_style,
    message_axes,
    new_figure,
    place_legend,
    plain_log_ticks,
    variant_handles,
    variant_label,
)

# ---- roofline ------------------------------------------------------------------------------


LEVEL_SHADES = {"L1": "0.55", "L2": "0.4", "L3": "0.25", "DRAM": "black"}


def _label(ax: Axes, text: str, xy: tuple[float, float], offset, align: str) -> None:
    ax.annotate(
        text, xy, xytext=offset, textcoords="offset points", ha=align, fontsize=7, color="0.25"
    )


def _draw_roofs(ax: Axes, limits: Roofs, x_range: tuple[float, float]) -> None:
    """One slanted roof per memory level under the float32 peak; the bfloat16 peak dotted
    (the models run in float32: it is the ceiling a bf16 model could reach)."""
    x = np.geomspace(*x_range, 200)
    peak = limits.peak_flops_per_s / GIGA
    for level in limits.levels or ():
        bandwidth = level.bandwidth_Bps / GIGA
        width = 1.8 if level.name == "DRAM" else 1.1
        color = LEVEL_SHADES.get(level.name, "0.4")
        ax.plot(x, np.minimum(peak, bandwidth * x), color=color, linewidth=width)
        _label(ax, f"{level.name} {bandwidth:.0f} GB/s", (x[0], bandwidth * x[0]), (3, 4), "left")
    if math.isfinite(limits.bf16_peak_flops_per_s):
        bf16 = limits.bf16_peak_flops_per_s / GIGA
        ax.axhline(bf16, color="black", linestyle="-.", linewidth=1)
        _label(ax, f"bf16 {bf16:.0f} GFLOP/s", (x_range[1], bf16), (-2, 3), "right")
    if limits.theoretical_peak_flops_per_s:
        ax.axhline(limits.theoretical_peak_flops_per_s / GIGA, color="black", ls="--", lw=1)
    if limits.theoretical_bandwidth_Bps:
        ax.plot(x, limits.theoretical_bandwidth_Bps / GIGA * x, color="black", ls="--", lw=1)
    ridge = limits.ridge_flop_per_byte
    ax.axvline(ridge, color=NEUTRAL_COLOR, linestyle=":", linewidth=1)
    _label(ax, f"DRAM ridge {ridge:.3g} FLOP/B", (ridge, peak), (4, -12), "left")
    _label(ax, f"fp32 {peak:.0f} GFLOP/s", (x_range[1], peak), (-2, 3), "right")


def _label_columns(ax: Axes, columns: list[tuple[float, float, float, str]]) -> None:
    """Name each architecture once, above its column of points; a column too close to the
    previous one on the log x axis is named below its points instead."""
    previous_x = None
    for x, low, high, arch in sorted(columns):
        crowded = previous_x is not None and math.log10(x / previous_x) < 0.25
        y, offset, va = (low, -8, "top") if crowded else (high, 8, "bottom")
        ax.annotate(
            arch,
            (x, y),
            xytext=(0, offset),
            textcoords="offset points",
            ha="center",
            va=va,
            fontsize=8,
        )
        previous_x = x


def _column_label(stats, arch: str, batch: int) -> str:
    """The architecture and the memory level that bounds it at this batch (one working set
    per column, so one level)."""
    levels = {str(v) for v in stats[V.memory_level].sel(arch=arch, batch=batch).values.ravel()}
    levels.discard("")
    return f"{arch} · {'/'.join(sorted(levels))}" if levels else arch


def draw_roofline(inputs: FigureInputs) -> Figure:
    view, stats = inputs.view, inputs.stats
    limits = roofs(view, inputs.hardware)
    batches = [int(b) for b in stats["batch"].values]
    cols = min(len(batches), 2)
    rows = math.ceil(len(batches) / cols)
    figure = new_figure(5.2 * cols + 1.8, 4.0 * rows + 0.6)
    axes = figure.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).flatten()
    figure.suptitle("Roofline: achieved throughput vs arithmetic intensity, per batch")
    ok = stats["status"] == STATUS_OK
    intensity = stats["arithmetic_intensity"].where(ok)
    achieved = stats["achieved_flops_per_s"].where(ok) / GIGA
    finite = intensity.values[np.isfinite(intensity.values)]
    if not limits.known or finite.size == 0:
        for ax in axes:
            message_axes(ax, f"No roofline: {stats.attrs.get('roofline', 'no hardware limits')}")
        return figure
    present = view.variants()
    x_range = (
        min(finite.min(), limits.ridge_flop_per_byte) / 3,
        max(finite.max(), limits.ridge_flop_per_byte) * 3,
    )
    for ax, batch in zip(axes, batches, strict=False):
        _draw_roofline_panel(ax, view, limits, x_range, batch, intensity, achieved)
    spare = list(axes[len(batches) :])
    for ax in spare:
        ax.set_axis_off()
    figure.supxlabel("arithmetic intensity (FLOP/byte, analytic)")
    figure.supylabel("achieved throughput (GFLOP/s)")
    place_legend(figure, [*variant_handles(present), *_roof_handles()], spare)
    add_note(figure, _roofline_notes(view, limits, batches))
    return figure


def _draw_roofline_panel(
    ax, view: StatsView, limits: Roofs, x_range, batch: int, intensity, achieved
) -> None:
    """One batch's panel: the roofs, one column of points per architecture, log axes."""
    _draw_roofs(ax, limits, x_range)
    columns = []
    for arch in view.archs():
        x = float(intensity.sel(arch=arch, batch=batch).max())
        ys = achieved.sel(arch=arch, batch=batch)
        if not np.isfinite(x) or not np.isfinite(ys.values).any():
            continue
        label = _column_label(view.ds, str(arch), batch)
        columns.append((x, float(ys.min()), float(ys.max()), label))
        for framework, mode in view.variants():
            y = ys.sel(framework=framework, mode=mode).item()
            if np.isfinite(y):
                style = marker_style(framework, mode)
                ax.plot(x, y, linestyle="none", markersize=7, alpha=0.9, **style)
    _label_columns(ax, columns)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax, "x")
    plain_log_ticks(ax, "y")
    ax.set_title(f"batch {batch}")
    ax.grid(True, which="major", alpha=0.25)


def _roof_handles() -> list[Line2D]:
    """The legend entries of the roofs (the variants' come from variant_handles)."""
    return [
        Line2D([], [], color="black", linewidth=1.8, label="DRAM roof (measured)"),
        Line2D([], [], color="0.4", linewidth=1.1, label="cache-level roofs"),
        Line2D([], [], color="black", linestyle="-.", label="bf16 peak (measured)"),
        Line2D([], [], color="black", linestyle="--", label="theoretical"),
        Line2D([], [], color=NEUTRAL_COLOR, linestyle=":", label="DRAM ridge point"),
    ]


def _roofline_notes(view: StatsView, limits: Roofs, batches: list[int]) -> list[str]:
    notes = [
        f"Roofs: measured float32 GEMM peak {limits.peak_flops_per_s / GIGA:.1f} GFLOP/s, one "
        "bandwidth per memory level from the working-set sweep (DRAM: the faster of its "
        f"plateau and the STREAM triad), from {limits.source}. Each column names the level its "
        "working set fits in: a point is bound by that level's roof, and a point above it ran "
        "faster than the hardware allows (efficiency > 1).",
        failed_note(view, batches),
    ]
    if not limits.theoretical_peak_flops_per_s and not limits.theoretical_bandwidth_Bps:
        notes.append("No theoretical ceiling is known for this device.")
    return notes


# ---- efficiency heatmap --------------------------------------------------------------------


def _grid(stats, present) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """efficiency, status and flags as (arch × batch rows, variant columns)."""
    ordered = stats[[V.efficiency, "status", "flags"]].transpose(
        "arch", "batch", "framework", "mode"
    )
    columns = [ordered.sel(framework=f, mode=m) for f, m in present]
    return tuple(
        np.stack([c[name].values.reshape(-1) for c in columns], axis=1)
        for name in (V.efficiency, "status", "flags")
    )


def _mark_cell(ax: Axes, r: int, c: int, efficiency: float, flags: str) -> None:
    if efficiency > 1:
        ax.add_patch(
            Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor=FLAG_COLOR, linewidth=2.2)
        )
    elif "high_cv" in flags or "contended" in flags:
        ax.add_patch(
            Rectangle((c - 0.45, r - 0.45), 0.9, 0.9, fill=False, ec="black", lw=1.2, ls="--")
        )


def draw_efficiency(inputs: FigureInputs) -> Figure:
    view, stats = inputs.view, inputs.stats
    present = view.variants()
    rows = [(str(a), int(b)) for a in stats["arch"].values for b in stats["batch"].values]
    figure = new_figure(max(7.5, 1.05 * len(present) + 4), max(3.5, 0.36 * len(rows) + 2.2))
    ax = figure.subplots()
    efficiency, status, flags = _grid(stats, present)
    shown = np.where(status == STATUS_OK, efficiency.astype(float), np.nan)
    positive = shown[np.isfinite(shown) & (shown > 0)]
    if positive.size == 0:
        message_axes(ax, f"No efficiency to show: {stats.attrs.get('roofline', 'no limits')}")
        add_note(figure, [failed_note(view, None, "Failed")])
        return figure
    norm = LogNorm(vmin=min(positive.min(), 0.5), vmax=max(positive.max(), 1.0))
    image = ax.imshow(
        np.ma.masked_invalid(shown), cmap=colormaps["viridis"], norm=norm, aspect="auto"
    )
    ax.set_facecolor("0.92")
    for r, c in np.ndindex(*shown.shape):
        if status[r, c] == STATUS_FAILED:
            ax.text(c, r, "failed", ha="center", va="center", fontsize=7, color=FLAG_COLOR)
        elif np.isfinite(shown[r, c]):
            text = percent(shown[r, c]) + (" †" if "not_compiled" in flags[r, c] else "")
            color = "black" if norm(shown[r, c]) > 0.55 else "white"
            ax.text(c, r, text, ha="center", va="center", fontsize=7, color=color)
            _mark_cell(ax, r, c, shown[r, c], flags[r, c])
    labels = [variant_label(f, m) for f, m in present]
    ax.set_xticks(range(len(present)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), [f"{arch}  b{batch}" for arch, batch in rows])
    per_arch = stats.sizes["batch"]
    for boundary in range(per_arch, len(rows), per_arch):
        ax.axhline(boundary - 0.5, color="white", linewidth=2)
    colorbar = figure.colorbar(image, ax=ax, shrink=0.8, pad=0.02)
    colorbar.set_label("efficiency: lower bound ÷ median (log)")
    colorbar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:g}%"))
    ax.set_title("Roofline efficiency per cell: 100% = at the hardware's measured limit")
    legend = [
        Patch(facecolor="none", edgecolor=FLAG_COLOR, linewidth=2, label="above 100%: a bug"),
        Patch(facecolor="none", edgecolor="black", linestyle="--", label="noisy or contended"),
    ]
    place_legend(figure, legend)
    add_note(
        figure,
        [
            f"Limits: {stats.attrs.get('roofline', 'unknown')}.",
            "Above 100% (red box): faster than the roofline allows, i.e. a missing "
            "synchronization or a cost-model error. Dashed box: CV above the threshold or "
            "another process used the CPU. †: a compiled mode that ran uncompiled. Grey: no "
            "measurement.",
            failed_note(view, None, "Shown as failed"),
        ],
    )
    return figure
