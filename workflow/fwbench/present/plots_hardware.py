"""The hardware figure: what the machine can do, as the hardware file measured it.

hardware    measured GEMM peaks per dtype and STREAM bandwidth, against the theoretical figures;
            its notes name the memory levels the roofline fills (fwbench.io.hardware_file's rule)
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fwbench.io.hardware_file import STREAM_KERNELS
from fwbench.present.figure_data import FigureInputs
from fwbench.present.style import (
    FLAG_COLOR,
    GIGA,
    NEUTRAL_COLOR,
    add_note,
    framework_color,
    group_offsets,
    message_axes,
    new_figure,
)


def _draw_gemm(ax: Axes, inputs: FigureInputs) -> None:
    peaks = inputs.hardware.peaks
    dtypes = [dtype for dtype, peak in peaks.items() if peak.gemm_flops_per_s]
    if not dtypes:
        message_axes(ax, "No GEMM peak was measured.")
        return
    legend: dict[str, object] = {}
    for d, dtype in enumerate(dtypes):
        rates = peaks[dtype].gemm_flops_per_s
        offsets, width = group_offsets(len(rates))
        for offset, (framework, rate) in zip(offsets, rates.items(), strict=True):
            color = NEUTRAL_COLOR if framework == "numpy" else framework_color(framework)
            bars = ax.bar(d + offset, rate / GIGA, width, color=color, edgecolor="black", lw=0.5)
            ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=2)
            legend.setdefault(framework, Patch(facecolor=color, edgecolor="black", label=framework))
        theory = peaks[dtype].theoretical_flops_per_s
        if theory:
            ax.hlines(theory / GIGA, d - 0.45, d + 0.45, colors="black", linestyles="--")
            ax.annotate(
                f"theoretical {theory / GIGA:.0f}",
                (d + 0.45, theory / GIGA),
                xytext=(0, 3),
                textcoords="offset points",
                ha="right",
                fontsize=7,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5, "alpha": 0.8},
            )
    # int8's rates count integer operations (a multiply-add is 2), the others FLOP
    ax.set_xticks(np.arange(len(dtypes)), [d if d != "int8" else "int8 (op/s)" for d in dtypes])
    ax.set_ylabel("GEMM throughput (GFLOP/s; int8: G op/s)")
    ax.set_title("Peak compute: best GEMM trial per framework")
    ax.margins(y=0.15)
    dashed = Line2D([], [], color="black", linestyle="--", label="theoretical")
    ax.legend(handles=[*legend.values(), dashed], fontsize=8, loc="upper left")


def _draw_stream(ax: Axes, inputs: FigureInputs) -> None:
    hardware = inputs.hardware
    kernels = [k for k in STREAM_KERNELS if k in hardware.stream_Bps]
    if not kernels:
        message_axes(ax, "No STREAM measurement in the hardware file.")
        return
    bars = ax.bar(
        kernels,
        [hardware.stream_Bps[k] / GIGA for k in kernels],
        color=[FLAG_COLOR if k == "triad" else NEUTRAL_COLOR for k in kernels],
        width=0.6,
    )
    ax.bar_label(bars, fmt="%.1f", fontsize=8, padding=2)
    if hardware.theoretical_bandwidth_Bps:
        ax.axhline(
            hardware.theoretical_bandwidth_Bps / GIGA,
            color="black",
            linestyle="--",
            label="theoretical",
        )
        ax.legend(fontsize=8, loc="lower right")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.margins(y=0.12)
    ax.set_title(f"STREAM, best trial ({hardware.stream_runner}); red: the roofline's")


def draw_hardware(inputs: FigureInputs) -> Figure:
    figure = new_figure(11, 4.2)
    gemm_ax, stream_ax = figure.subplots(1, 2, width_ratios=[1.3, 1])
    hardware = inputs.hardware
    if hardware is None:
        message_axes(gemm_ax, "No hardware file was given.")
        stream_ax.set_axis_off()
        return figure
    figure.suptitle(f"Hardware limits measured on {hardware.host} ({hardware.device_name})")
    _draw_gemm(gemm_ax, inputs)
    _draw_stream(stream_ax, inputs)
    notes = [
        f"{dtype}: not measured ({peak.skipped})."
        for dtype, peak in hardware.peaks.items()
        if peak.skipped
    ]
    notes += [
        f"{level.name}: no plateau of its own in the working-set sweep; the roofline takes "
        f"{level.filled_from}'s {level.bandwidth_Bps / GIGA:.1f} GB/s."
        for level in hardware.levels
        if level.filled_from
    ]
    if hardware.theoretical_bandwidth_Bps is None:
        notes.append(f"Theoretical bandwidth: {hardware.theoretical_bandwidth_source}.")
    add_note(figure, [*notes, *hardware.notes])
    return figure
