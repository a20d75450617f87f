"""The figures' common look: one colour per framework, one marker per mode, notes, saving.

Every figure is a `matplotlib.figure.Figure` with constrained layout, made without pyplot (no
global state, the Agg canvas), and saved as PNG and SVG by `save_figure`, atomically. The
figures themselves live in the `plots_*` modules; `fwbench.present.figures` names them.
"""

from __future__ import annotations

import os
import textwrap
import zlib
from collections.abc import Sequence

import matplotlib
import numpy as np

matplotlib.use("Agg")

from matplotlib.axes import Axes  # noqa: E402 (after the backend is chosen)
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

from fwbench.io.atomic import atomic_path  # noqa: E402
from fwbench.io.dims import EAGER_MODE  # noqa: E402

# Okabe–Ito colours (distinguishable with every common colour-vision deficiency); the same
# framework has the same colour in every figure.
FRAMEWORK_COLORS = {"torch": "#D55E00", "jax": "#0072B2", "tensorflow": "#009E73"}
_SPARE_COLORS = ("#CC79A7", "#E69F00", "#56B4E9", "#000000")
MODE_MARKERS = {EAGER_MODE: "o", "compiled": "s", "jit": "s", "function": "^", "xla": "D"}
MODE_HATCHES = {EAGER_MODE: "///", "function": ".."}
FLAG_COLOR = "#C00000"
NEUTRAL_COLOR = "0.35"
MIN_DPI = 150
GIGA = 1e9  # FLOP/s → GFLOP/s, B/s → GB/s


def framework_color(framework: str) -> str:
    """The framework's colour; an unknown framework gets a stable spare one."""
    if framework in FRAMEWORK_COLORS:
        return FRAMEWORK_COLORS[framework]
    return _SPARE_COLORS[zlib.crc32(framework.encode()) % len(_SPARE_COLORS)]


def mode_marker(mode: str) -> str:
    return MODE_MARKERS.get(mode, "P")


def variant_label(framework: str, mode: str) -> str:
    return f"{framework} {mode}"


def marker_style(framework: str, mode: str) -> dict[str, object]:
    """Scatter/line style of a variant: eager hollow, compiled modes filled."""
    color = framework_color(framework)
    return {
        "marker": mode_marker(mode),
        "color": color,
        "markerfacecolor": "white" if mode == EAGER_MODE else color,
        "markeredgecolor": color,
        "markeredgewidth": 1.3,
    }


def bar_style(framework: str, mode: str) -> dict[str, object]:
    """Bar style of a variant: eager pale and hatched, compiled modes solid."""
    color = framework_color(framework)
    eager = mode == EAGER_MODE
    return {
        "facecolor": to_rgba(color, 0.3 if eager else 0.9),
        "edgecolor": color,
        "hatch": MODE_HATCHES.get(mode, ""),
        "linewidth": 1.0,
    }


def variant_handles(variants: Sequence[tuple[str, str]], bars: bool = False) -> list[object]:
    """Legend handles, one per (framework, mode), matching bar_style or marker_style."""
    if bars:
        return [Patch(label=variant_label(f, m), **bar_style(f, m)) for f, m in variants]
    return [
        Line2D(
            [], [], linestyle="none", markersize=7, label=variant_label(f, m), **marker_style(f, m)
        )
        for f, m in variants
    ]


def place_legend(figure: Figure, handles: Sequence[object], spare: Sequence[Axes] = ()) -> None:
    """The legend in the first unused panel of a grid when there is one (turned off), else
    outside the axes on the right, clear of a suptitle."""
    if spare:
        spare[0].legend(handles=handles, loc="center", fontsize=8, frameon=False)
        return
    location = "outside right center" if figure.get_suptitle() else "outside right upper"
    figure.legend(handles=handles, loc=location, fontsize=8)


def new_figure(width_in: float, height_in: float) -> Figure:
    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    figure.get_layout_engine().set(h_pad=0.06, w_pad=0.06)
    return figure


def plain_log_ticks(ax: Axes, axis: str = "y") -> None:
    """Log-axis ticks as plain numbers (100, 1000, 0.5) rather than powers of ten; on an axis
    spanning under one decade, some minor ticks are labelled too (2, 3, 5)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def add_note(figure: Figure, lines: Sequence[str]) -> None:
    """Small text under the axes (skipped cells, limits used); wrapped to the figure width.
    It sits below the layout, so `save_figure`'s tight bounding box grows to include it."""
    lines = [line for line in lines if line]
    if not lines:
        return
    width = max(40, int(figure.get_figwidth() * 15))
    text = "\n".join(textwrap.fill(line, width) for line in lines)
    figure.text(0.005, -0.01, text, ha="left", va="top", fontsize=8, color="0.2")


def message_axes(ax: Axes, message: str) -> None:
    """An axes that only says why there is nothing to draw."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(message, 60), ha="center", va="center", transform=ax.transAxes)


def group_offsets(count: int, width: float = 0.8) -> tuple[np.ndarray, float]:
    """x offsets of `count` bars side by side in a group `width` wide, and each bar's width."""
    bar = width / max(count, 1)
    return (np.arange(count) - (count - 1) / 2) * bar, bar


def save_figure(
    figure: Figure, png: str | os.PathLike, svg: str | os.PathLike | None, dpi: int = MIN_DPI
) -> None:
    """Write the PNG (at `dpi` ≥ 150) and the SVG, each under a temporary name then renamed."""
    if dpi < MIN_DPI:
        raise ValueError(f"dpi must be at least {MIN_DPI}, got {dpi}")
    for path, kind in ((png, "png"), (svg, "svg")):
        if path is None:
            continue
        # No timestamps in the files: the same data gives the same bytes.
        metadata = {"Date": None} if kind == "svg" else {"Software": None}
        with atomic_path(path) as tmp:
            figure.savefig(
                tmp, format=kind, dpi=dpi, bbox_inches="tight", pad_inches=0.1, metadata=metadata
            )
