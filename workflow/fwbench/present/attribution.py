"""Where the time goes: each cell's median as its four parts (fwbench.analysis.attribution),
the frameworks side by side per architecture at the table batch, as one table and one figure
(stacked bars).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from fwbench.analysis.attribution import CLOSURE_TOLERANCE, PART_LABELS, PARTS, SHARE_OF
from fwbench.io.dims import EAGER_MODE, STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.figure_data import FigureInputs, failed_note
from fwbench.present.format import MISSING, fixed, latency_us, percent, short
from fwbench.present.style import FLAG_COLOR, NEUTRAL_COLOR, add_note, new_figure
from fwbench.present.tables import markdown_table

COLORS = dict(zip(PARTS, ("#4477AA", "#66CCEE", "#EE6677", "#BBBBBB"), strict=True))
TABLE_HEADER = [
    "variant",
    "architecture",
    "median µs",
    *(PART_LABELS[p] + " µs" for p in PARTS),
    "explained",
    "the rest outside the framework µs",
    "ops or launches / call",
    "floor µs",
    "α of the batch fit µs",
    "profiled stretch",
    "largest part",
]
GAIN_HEADER = [
    "variant",
    "architecture",
    "eager µs",
    "median µs",
    "dispatch removed µs",
    "kernel time saved µs",
    "the rest saved µs",
]


def attributed_cells(view: StatsView, batch: int) -> list[CellKey]:
    """The measured cells at `batch` that have the four parts, by arch then variant."""
    keys = [
        CellKey(framework, mode, arch, batch)
        for arch in view.archs()
        for framework, mode in view.variants()
    ]
    return [
        key
        for key in keys
        if view.value(V.status, key) == STATUS_OK and math.isfinite(view.value(V.roof_s, key))
    ]


def _row(view: StatsView, key: CellKey) -> list[str]:
    def value(name: str) -> float:
        return float(view.value(name, key))

    return [
        f"{key.framework}/{key.mode}",
        key.arch,
        latency_us(value(V.median_s)),
        *(latency_us(value(p)) if math.isfinite(value(p)) else MISSING for p in PARTS),
        percent(value(V.explained_share)),
        latency_us(value(V.rest_outside_s)),
        fixed(value(V.attr_dispatches), digits=0),
        latency_us(value(V.attr_floor_s)),
        latency_us(value(V.batch_fit_alpha_s)),
        fixed(value(V.attr_stretch), digits=2),
        str(view.value(V.dominant_part, key)),
    ]


def attribution_table(view: StatsView, batch: int) -> str:
    return markdown_table(TABLE_HEADER, [_row(view, k) for k in attributed_cells(view, batch)])


GAINS = (V.gain_dispatch_s, V.gain_kernel_s, V.gain_rest_s)


def gain_table(view: StatsView, batch: int) -> str:
    """Each non-eager mode's time against its framework's eager cell, split by part."""
    rows = []
    keys = attributed_cells(view, batch)
    for key in keys:
        eager = key.with_mode(EAGER_MODE)
        if key.mode == EAGER_MODE or eager not in keys:
            continue
        rows.append(
            [
                f"{key.framework}/{key.mode}",
                key.arch,
                latency_us(view.value(V.median_s, eager)),
                latency_us(view.value(V.median_s, key)),
                *(_signed_us(float(view.value(name, key))) for name in GAINS),
            ]
        )
    return markdown_table(GAIN_HEADER, rows) if rows else ""


STEP_HEADER = [
    "variant",
    "architecture",
    "steps / call",
    "µs / step",
    "ops or launches / step",
    "dispatch µs / step",
    "roof µs / step",
    "α µs / step",
    "(dispatch + roof) / step time",
]


def step_table(view: StatsView, batch: int) -> str:
    """Per recurrent step (rnn, lstm: the cell steps a call runs one after another), what a
    step costs against its ops' floor and its share of the roof; '' without such cells."""
    rows = []
    for key in attributed_cells(view, batch):

        def value(name: str, key=key) -> float:
            return float(view.value(name, key))

        if not math.isfinite(value(V.step_s)):
            continue
        rows.append(
            [
                f"{key.framework}/{key.mode}",
                key.arch,
                fixed(value(V.recurrent_steps), digits=0),
                latency_us(value(V.step_s)),
                fixed(value(V.step_dispatches), digits=2),
                latency_us(value(V.step_dispatch_s)),
                latency_us(value(V.step_roof_s)),
                latency_us(value(V.step_alpha_s)),
                percent(value(V.step_explained_share)),
            ]
        )
    return markdown_table(STEP_HEADER, rows) if rows else ""


def closure_note(view: StatsView) -> str:
    """How many cells' parts close on their median (kernel time and dispatch not above it by
    more than CLOSURE_TOLERANCE), and the range of the profiled runs' stretch, over every
    batch; '' without parts."""
    cells = int(view.of_system(V.closure_cells))
    if not cells:
        return ""
    held = int(view.of_system(V.closure_held))
    text = (
        f"The parts close on the median within {CLOSURE_TOLERANCE:.0%} in {held} of "
        f"{cells} cells with parts (every batch; `attribution_closure` in stats.csv)."
    )
    low, mid, high = (view.of_system(n) for n in (V.stretch_min, V.stretch_median, V.stretch_max))
    if math.isfinite(mid):
        text += (
            f" The profiled runs' work over the clean median (`attr_stretch`): median "
            f"{mid:.2f}, range {low:.2f}–{high:.2f}."
        )
    return text


def _signed_us(seconds: float) -> str:
    return f"{seconds * 1e6:+.1f}" if math.isfinite(seconds) else MISSING


def unattributed(view: StatsView, batch: int) -> list[tuple[str, str]]:
    """(variant, why) for the measured variants at `batch` without the parts: the pass's own
    reason (a runtime with no profiler wired in, a failure), one per variant."""
    found: dict[str, str] = {}
    have = set(attributed_cells(view, batch))
    for arch in view.archs():
        for framework, mode in view.variants():
            key = CellKey(framework, mode, arch, batch)
            if key in have or view.value(V.status, key) != STATUS_OK:
                continue
            why = str(view.value(V.attribution, key))
            why = why.split(": ", 1)[0] if why.startswith(("not measured", "failed")) else why
            found.setdefault(f"{framework}/{mode}", why or "no attribution pass ran")
    return sorted(found.items())


def draw_attribution(inputs: FigureInputs) -> Figure:
    """Per architecture at the table batch, each variant's parts as shares of its own median:
    horizontal bars, 100% = the median, the median printed at the bar's end. A 30 µs cell and
    a 150 ms one read alike; which variant is faster is the latency figure's question."""
    view, batch = inputs.view, inputs.batch
    archs = view.archs()
    have = set(attributed_cells(view, batch))
    # The variants with parts somewhere; without any, every variant, each row saying why.
    rows = [p for p in view.variants() if any(CellKey(*p, a, batch) in have for a in archs)]
    rows = rows or view.variants()
    figure = new_figure(max(7.0, 2.2 * len(archs) + 1.8), 0.25 * max(len(rows), 6) + 1.8)
    axes = figure.subplots(1, len(archs), squeeze=False, sharey=True)[0]
    right = max([1.0, *(sum(_shares(view, key).values()) for key in have)])
    for ax, arch in zip(axes, archs, strict=True):
        for y, (framework, mode) in enumerate(rows):
            key = CellKey(framework, mode, arch, batch)
            if key in have:
                _stack(ax, y, view, key)
            else:
                _no_parts(ax, y, view.value(V.status, key) == STATUS_FAILED)
        _share_axes(ax, f"{arch}, batch {batch}", right)
    axes[0].set_yticks(range(len(rows)), [f"{f} {m}" for f, m in rows], fontsize=7)
    axes[0].set_ylim(len(rows) - 0.5, -0.5)  # the first variant on top
    handles = [Patch(color=COLORS[p], label=PART_LABELS[p]) for p in PARTS]
    figure.legend(handles=handles, loc="outside upper center", ncols=4, fontsize=7)
    add_note(figure, _notes(inputs))
    return figure


def _stack(ax, y: int, view: StatsView, key: CellKey) -> None:
    """One cell's parts left to right as shares of its median, and the median at the end."""
    left = 0.0
    for part, share in _shares(view, key).items():
        ax.barh(y, share, 0.7, left=left, color=COLORS[part], edgecolor="0.2", lw=0.3)
        left += share
    ax.annotate(
        _duration(float(view.value(V.median_s, key))),
        (max(left, 1.0), y),
        xytext=(3, 0),
        textcoords="offset points",
        va="center",
        fontsize=6.5,
    )


def _no_parts(ax, y: int, failed: bool) -> None:
    text, color = ("failed", FLAG_COLOR) if failed else ("no parts", NEUTRAL_COLOR)
    ax.text(0.02, y, text, va="center", fontsize=6.5, color=color)


def _shares(view: StatsView, key: CellKey) -> dict[str, float]:
    """A cell's known, positive parts over its median (stats.nc's shares), in PARTS order."""
    shares = {part: float(view.value(SHARE_OF[part], key)) for part in PARTS}
    return {part: share for part, share in shares.items() if np.isfinite(share) and share > 0}


def _share_axes(ax, title: str, right: float) -> None:
    """Shares of the median from 0 to the largest overshoot, room for the printed medians,
    and the 100% line (the median)."""
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlim(0, right * 1.4)
    ax.set_xticks([0, 0.5, 1.0])
    ax.xaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0))
    ax.grid(True, axis="x", alpha=0.25)
    ax.tick_params(axis="y", length=0)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("share of the median", fontsize=7)


def _duration(seconds: float) -> str:
    """A median as µs below a millisecond, ms above."""
    micro = seconds * 1e6
    return f"{short(micro)} µs" if micro < 1000 else f"{short(micro / 1000)} ms"


def _notes(inputs: FigureInputs) -> list[str]:
    spread = inputs.view.of_system(V.parts_median_spread)
    span = f"the medians drawn span {short(spread)}×, and " if math.isfinite(spread) else ""
    notes = [
        "Bars: each cell's clean median split into roofline bound, kernel excess (kernel time "
        "the profiler saw beyond the bound), dispatch (ops or launches × the mode's floor) and "
        "the rest, as shares of that median (the black line at 100%; the median is printed at "
        f"the bar's end). Shares rather than µs: {span}on one µs axis the slowest cell "
        "flattens the others' parts to slivers, while on a log axis stacked parts are out of "
        "proportion; the latency figure compares the medians. Parts past 100% overshoot the "
        "median (the rest is 0 there; `attribution_closure`)."
    ]
    missing = unattributed(inputs.view, inputs.batch)
    if missing:
        notes.append("Without parts: " + "; ".join(f"{v} ({why})" for v, why in missing))
    failed = failed_note(inputs.view, [inputs.batch])
    return notes + [note for note in (inputs.batch_note(), failed) if note]
