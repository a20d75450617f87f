"""Does lower precision pay: per low precision, each variant and architecture's speedup over
float32 (its CI) against what it cost in accuracy (the checks' normwise error against float64).

One panel per low precision, at the batch its cells ran at (the table batch by default). A
point is a (variant, architecture) cell: its marker the variant's, its size the
architecture's order; crossed where its kernels mostly ran in another dtype (flag upcast),
ringed red where its error lies beyond its bound (the checks' `pass`). A cell without an error (its
check did not run) or without a speedup (it or float32 failed) is not drawn and is named in the
note.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from fwbench.analysis.flags import FLAG_UPCAST, has_flag
from fwbench.io.dims import FLOAT32, STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present import catalog
from fwbench.present.figure_data import FigureInputs, listed, precision_accuracy
from fwbench.present.intervals import whiskers_note
from fwbench.present.style import (
    FLAG_COLOR,
    add_note,
    marker_style,
    message_axes,
    new_figure,
    place_legend,
    ratio_log_ticks,
    variant_handles,
)

SPEEDUP = (V.speedup_vs_float32, V.speedup_vs_float32_ci_low, V.speedup_vs_float32_ci_high)
ARCH_SIZES = (5.0, 6.5, 8.0, 9.5, 11.0)  # marker size by the architecture's place
UPCAST_COLOR = "0.1"  # the cross over an upcast cell's marker


def draw_precision(inputs: FigureInputs) -> Figure:
    lows = [p for p in inputs.view.precisions() if p != FLOAT32]
    figure = new_figure(5.2 * max(len(lows), 1) + 2.2, 4.6)
    axes = np.atleast_1d(figure.subplots(1, max(len(lows), 1), squeeze=False)[0])
    if not lows:
        message_axes(axes[0], "No cell ran in a precision below float32 (config `precision`).")
        return figure
    notes, variants = [], []
    for ax, precision in zip(axes, lows, strict=True):
        view = inputs.view.in_precision(precision)
        accuracy = precision_accuracy(inputs.equivalence, inputs.view.system, precision)
        left_out, drawn = _panel(ax, view, accuracy, precision)
        variants += [v for v in drawn if v not in variants]
        if left_out:
            notes.append(f"{precision}, not drawn: {listed(left_out)}.")
    place_legend(figure, variant_handles(variants))
    notes.append(whiskers_note(inputs.view.attrs, catalog.whiskers_of("precision")))
    notes.append(
        "Crossed: the cell's kernels mostly ran in another dtype (flag upcast); ringed red: its "
        "error lies beyond its bound. Marker size: the architecture's place, "
        + ", ".join(inputs.view.archs())
        + "."
    )
    add_note(figure, notes)
    return figure


def _batch(view: StatsView) -> int | None:
    """The table batch where the precision ran there, else its smallest batch with a cell."""
    batches = [int(b) for b in view.ds["batch"].values]
    ran = [b for b in batches if (view.ds[V.status].sel(batch=b).values == STATUS_OK).any()]
    if not ran:
        return None
    return view.table_batch if view.table_batch in ran else min(ran)


def _panel(ax, view: StatsView, accuracy, precision: str) -> tuple[list[str], list]:
    """One precision's points; the cells left out and the variants drawn."""
    batch = _batch(view)
    if batch is None or accuracy is None:
        message_axes(ax, f"No {precision} cell ran, or its checks are missing.")
        return [], []
    errors = {(r.framework, r.mode, r.arch): r for r in accuracy.itertuples()}
    left_out, drawn, ys = [], [], [1.0]
    for framework, mode in view.variants():
        for place, arch in enumerate(view.archs()):
            key = CellKey(framework, mode, arch, batch, precision)
            point = _point(view, key, errors.get((framework, mode, arch)))
            if point is None:
                if view.value(V.status, key) in (STATUS_OK, STATUS_FAILED):
                    left_out.append(key.name)
                continue
            x, (y, low, high), upcast, beyond = point
            style = marker_style(framework, mode)
            yerr = [[max(y - low, 0.0)], [max(high - y, 0.0)]] if math.isfinite(low) else None
            ax.errorbar(x, y, yerr=yerr, markersize=ARCH_SIZES[place % 5], elinewidth=0.8, **style)
            if upcast:
                ax.plot(x, y, "x", ms=ARCH_SIZES[place % 5] - 1, color=UPCAST_COLOR)
            if beyond:
                ax.plot(x, y, "o", ms=ARCH_SIZES[place % 5] + 6, mfc="none", mec=FLAG_COLOR)
            ys += [y, low, high]
            if (framework, mode) not in drawn:
                drawn.append((framework, mode))
    _axes(ax, precision, batch, [v for v in ys if math.isfinite(v)])
    return left_out, drawn


def _point(view: StatsView, key: CellKey, check) -> tuple | None:
    """(error, (speedup, CI low, CI high), upcast, beyond its bound), or None where either
    the cell's speedup or its check's error is missing."""
    if view.value(V.status, key) != STATUS_OK or check is None:
        return None
    speedup = tuple(float(view.value(name, key)) for name in SPEEDUP)
    error = float(check.max_rel_err)
    if not (math.isfinite(speedup[0]) and math.isfinite(error) and error > 0):
        return None
    upcast = bool(has_flag(np.array([view.value(V.flags, key)]), FLAG_UPCAST)[0])
    return error, speedup, upcast, not check.passed


def _axes(ax, precision: str, batch: int, ys: list[float]) -> None:
    ax.axhline(1, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(min(ys) / 1.2, max(ys) * 1.2)
    ratio_log_ticks(ax)
    ax.set_xlabel("accuracy cost: normwise relative error against float64")
    ax.set_ylabel(f"speedup over float32 (float32 ÷ {precision} median)")
    ax.set_title(f"{precision} at batch {batch}: above 1× it is faster")
    ax.grid(True, which="major", alpha=0.25)
