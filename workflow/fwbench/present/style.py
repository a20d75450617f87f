"""The figures' common look: one colour per variant, one marker per mode, value labels that
keep clear of each other, notes, saving.

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
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex, to_rgb, to_rgba  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FuncFormatter,
    LogFormatter,
    LogLocator,
    NullFormatter,
)

from fwbench import frameworks  # noqa: E402
from fwbench.io.atomic import atomic_path  # noqa: E402
from fwbench.io.dims import EAGER_MODE  # noqa: E402

# Okabe–Ito colours (distinguishable with every common colour-vision deficiency); the same
# framework has the same hue in every figure.
FRAMEWORK_COLORS = {"torch": "#D55E00", "jax": "#0072B2", "tensorflow": "#009E73"}
_SPARE_COLORS = ("#CC79A7", "#E69F00", "#56B4E9", "#000000")
# A variant's colour: its framework's hue family, one shade per non-eager mode in the order the
# framework registry lists them (compiled variants and unknown modes after them), neighbours
# apart in lightness so that they also differ in grey; eager is the framework colour, pale and
# hatched in bars, hollow in markers. The first shade is the framework colour.
FRAMEWORK_SHADES = {
    "torch": ("#D55E00", "#7F2704", "#E69F00", "#F4A582", "#CB181D"),
    "jax": ("#0072B2", "#56B4E9", "#6A51A3", "#08306B", "#BCBDDC"),
    "tensorflow": ("#009E73", "#00441B", "#A6D854", "#6B8E23", "#99D8C9"),
}
_SPARE_SHADES = (0.0, 0.6, 0.3, 0.75, 0.45)  # an unknown framework's: mixed towards white
SHADE_COUNT = 5
MODE_MARKERS = {EAGER_MODE: "o", "compiled": "s", "jit": "s", "function": "^", "xla": "D"}
EAGER_HATCH = "///"
FLAG_COLOR = "#C00000"
NEUTRAL_COLOR = "0.35"
MIN_DPI = 150
GIGA = 1e9  # FLOP/s → GFLOP/s, B/s → GB/s
LABEL_SIZE = 6.5  # value labels on bars (points)
LABEL_ROOM_PT = 10.0  # the least bar width that holds a vertical value label


def framework_color(framework: str) -> str:
    """The framework's colour; an unknown framework gets a stable spare one."""
    if framework in FRAMEWORK_COLORS:
        return FRAMEWORK_COLORS[framework]
    return _SPARE_COLORS[zlib.crc32(framework.encode()) % len(_SPARE_COLORS)]


def _shade_index(framework: str, mode: str) -> int:
    """Where a non-eager mode sits among its framework's shades: its place among the
    registry's modes, else after them (stable per name)."""
    known = [m for m in frameworks.MODES.get(framework, ()) if m != EAGER_MODE]
    if mode in known:
        return known.index(mode)
    return len(known) + zlib.crc32(mode.encode()) % max(1, SHADE_COUNT - len(known))


def variant_color(framework: str, mode: str) -> str:
    """The colour of a (framework, mode) in every figure: eager gets the framework colour,
    each other mode a shade of the framework's hue family (for a framework without one, its
    spare colour mixed towards white)."""
    if mode == EAGER_MODE:
        return framework_color(framework)
    index = _shade_index(framework, mode)
    if framework in FRAMEWORK_SHADES:
        shades = FRAMEWORK_SHADES[framework]
        return shades[index % len(shades)]
    amount = _SPARE_SHADES[index % len(_SPARE_SHADES)]
    return to_hex((1 - amount) * np.array(to_rgb(framework_color(framework))) + amount)


def mode_marker(mode: str) -> str:
    return MODE_MARKERS.get(mode, "P")


def variant_label(framework: str, mode: str) -> str:
    return f"{framework} {mode}"


def marker_style(framework: str, mode: str) -> dict[str, object]:
    """Scatter/line style of a variant: its colour (variant_color); eager hollow, the other
    modes filled."""
    color = variant_color(framework, mode)
    return {
        "marker": mode_marker(mode),
        "color": color,
        "markerfacecolor": "white" if mode == EAGER_MODE else color,
        "markeredgecolor": color,
        "markeredgewidth": 1.3,
    }


def bar_style(framework: str, mode: str) -> dict[str, object]:
    """Bar style of a variant: eager pale and hatched in its framework colour, the other modes
    solid in their own shade (variant_color) with a thin dark edge between neighbours."""
    color = variant_color(framework, mode)
    if mode == EAGER_MODE:
        return {
            "facecolor": to_rgba(color, 0.4),
            "edgecolor": color,
            "hatch": EAGER_HATCH,
            "linewidth": 1.0,
        }
    return {"facecolor": to_rgba(color), "edgecolor": "0.15", "linewidth": 0.5}


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


def ci_yerr(median: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Asymmetric error bars; zero where the CI is unknown (fewer than two samples)."""
    return np.nan_to_num(np.vstack([median - low, high - median]), nan=0.0).clip(min=0.0)


def mark_failed(ax: Axes, x: float) -> None:
    """A red × at the foot of the slot where a failed cell's bar would be."""
    transform = ax.get_xaxis_transform()
    ax.plot(x, 0.02, marker="x", color=FLAG_COLOR, transform=transform, ms=7, clip_on=False)


def place_legend(figure: Figure, handles: Sequence[object], spare: Sequence[Axes] = ()) -> None:
    """The legend in the first unused panel of a grid when there is one (turned off), else
    outside the axes on the right, clear of a suptitle."""
    if spare:
        spare[0].legend(handles=handles, loc="center", fontsize=8, frameon=False)
        return
    location = "outside right center" if figure.get_suptitle() else "outside right upper"
    figure.legend(handles=handles, loc=location, fontsize=8)


def new_figure(width_in: float, height_in: float) -> Figure:
    """A constrained-layout figure on an Agg canvas (whose renderer measures text)."""
    figure = Figure(figsize=(width_in, height_in), layout="constrained")
    figure.get_layout_engine().set(h_pad=0.06, w_pad=0.06)
    FigureCanvasAgg(figure)
    return figure


def bar_figure_width(groups: int, bars: int, group_in: float = 1.7, min_in: float = 8.0) -> float:
    """A grouped bar figure's width (inches): `group_in` per group, or more where `bars` bars
    side by side (group_offsets: 0.8 of a group) would be narrower than a vertical value label
    is tall (LABEL_ROOM_PT), plus room for the axis label and the legend."""
    per_group = max(group_in, bars * LABEL_ROOM_PT / 72 / 0.8)
    return max(min_in, per_group * groups + 3.0)


def value_labels(
    ax: Axes, x: np.ndarray, ends: np.ndarray, texts: Sequence[str], up: np.ndarray, colors=None
) -> list[Text]:
    """One vertical label per bar, at x, just beyond `ends` (the bar's end or its whisker's,
    whichever is further out): above where `up`, below elsewhere. Vertical labels in bars at
    least LABEL_ROOM_PT wide cannot meet a neighbour's; keep_labels_inside then makes room."""
    colors = colors if colors is not None else ["0.1"] * len(texts)
    return [
        ax.annotate(
            text,
            (xi, end),
            xytext=(0, 2 if is_up else -2),
            textcoords="offset points",
            rotation=90,
            ha="center",
            va="bottom" if is_up else "top",
            fontsize=LABEL_SIZE,
            color=color,
        )
        for xi, end, text, is_up, color in zip(x, ends, texts, up, colors, strict=True)
    ]


def keep_labels_inside(ax: Axes, labels: Sequence[Text], rounds: int = 12) -> None:
    """Widen the y range (log or linear) until every label lies inside the axes; call it last,
    once the legend and notes are placed, since the layout moves the axes."""
    if not labels:
        return
    figure = ax.get_figure()
    log = ax.get_yscale() == "log"
    forward, back = (np.log10, lambda v: 10.0**v) if log else (np.asarray, np.asarray)
    for _ in range(rounds):
        figure.draw_without_rendering()
        renderer = figure.canvas.get_renderer()
        box = ax.get_window_extent(renderer)
        extents = [label.get_window_extent(renderer) for label in labels]
        over = max(e.y1 for e in extents) - (box.y1 - 3)
        under = (box.y0 + 3) - min(e.y0 for e in extents)
        if over <= 0.5 and under <= 0.5:
            return
        low, high = forward(np.array(ax.get_ylim(), dtype=float))
        per_px = 1.2 * (high - low) / box.height
        ax.set_ylim(back(low - max(under, 0) * per_px), back(high + max(over, 0) * per_px))


def plain_log_ticks(ax: Axes, axis: str = "y") -> None:
    """Log-axis ticks as plain numbers (100, 1000, 0.5) rather than powers of ten; on an axis
    spanning under one decade, some minor ticks are labelled too (2, 3, 5)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}" if v < 1000 else f"{v:,.0f}"))
    target.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))


def ratio_log_ticks(ax: Axes, axis: str = "y") -> None:
    """A log axis of ratios labelled as ratios, 0.5×, 1×, 2× (never 5×10⁻¹): ticks at 1, 2 and
    5 of each decade, at every step of one where the axis (its limits already set) spans under
    a factor of 4; the other minor ticks unlabelled."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = sorted(ax.get_ylim() if axis == "y" else ax.get_xlim())
    subs = (1.0, 2.0, 5.0) if high >= 4 * low else tuple(float(step) for step in range(1, 10))
    target.set_major_locator(LogLocator(subs=subs))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    target.set_minor_formatter(NullFormatter())


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
