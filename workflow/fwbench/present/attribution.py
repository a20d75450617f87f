"""Where the time goes: each cell's median as its four parts (fwbench.analysis.attribution),
the frameworks side by side per architecture at the table batch, as one table and one figure
(stacked bars).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fwbench.analysis.attribution import CLOSURE_TOLERANCE, PART_LABELS, PARTS
from fwbench.io.dims import EAGER_MODE, STATUS_OK
from fwbench.present.figure_data import FigureInputs, cell_value, failed_note, variants
from fwbench.present.format import MISSING, fixed, latency_us, percent
from fwbench.present.style import add_note, new_figure
from fwbench.present.tables import markdown_table

COLORS = {
    "roof_s": "#4477AA",
    "kernel_excess_s": "#66CCEE",
    "dispatch_s": "#EE6677",
    "residual_s": "#BBBBBB",
}
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


def attributed_cells(stats: xr.Dataset, batch: int) -> list[tuple]:
    """The measured cells at `batch` that have the four parts."""
    if "roof_s" not in stats:
        return []
    return [
        (framework, mode, str(arch), batch)
        for arch in stats["arch"].values
        for framework, mode in variants(stats)
        if cell_value(stats, "status", (framework, mode, str(arch), batch)) == STATUS_OK
        and math.isfinite(float(cell_value(stats, "roof_s", (framework, mode, str(arch), batch))))
    ]


def _row(stats: xr.Dataset, cell: tuple) -> list[str]:
    value = lambda name: float(cell_value(stats, name, cell))  # noqa: E731
    return [
        f"{cell[0]}/{cell[1]}",
        cell[2],
        latency_us(value("median_s")),
        *(latency_us(value(p)) if math.isfinite(value(p)) else MISSING for p in PARTS),
        percent(value("explained_share")),
        latency_us(value("rest_outside_s")),
        fixed(value("attr_dispatches"), digits=0),
        latency_us(value("attr_floor_s")),
        latency_us(value("batch_fit_alpha_s")),
        fixed(value("attr_stretch"), digits=2),
        str(cell_value(stats, "dominant_part", cell)),
    ]


def attribution_table(stats: xr.Dataset, batch: int) -> str:
    return markdown_table(TABLE_HEADER, [_row(stats, c) for c in attributed_cells(stats, batch)])


def gain_table(stats: xr.Dataset, batch: int) -> str:
    """Each non-eager mode's time against its framework's eager cell, split by part."""
    rows = []
    cells = attributed_cells(stats, batch)
    for cell in cells:
        eager = (cell[0], EAGER_MODE, cell[2], cell[3])
        if cell[1] == EAGER_MODE or eager not in cells:
            continue
        value = lambda name, at=cell: float(cell_value(stats, name, at))  # noqa: E731
        rows.append(
            [
                f"{cell[0]}/{cell[1]}",
                cell[2],
                latency_us(float(cell_value(stats, "median_s", eager))),
                latency_us(value("median_s")),
                *(_signed_us(value(f"gain_{k}_s")) for k in ("dispatch", "kernel", "rest")),
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


def step_table(stats: xr.Dataset, batch: int) -> str:
    """Per recurrent step (rnn, lstm: the cell steps a call runs one after another), what a
    step costs against its ops' floor and its share of the roof; '' without such cells."""
    rows = []
    for cell in attributed_cells(stats, batch):
        value = lambda name, at=cell: float(cell_value(stats, name, at))  # noqa: E731
        if "step_s" not in stats or not math.isfinite(value("step_s")):
            continue
        rows.append(
            [
                f"{cell[0]}/{cell[1]}",
                cell[2],
                fixed(value("recurrent_steps"), digits=0),
                latency_us(value("step_s")),
                fixed(value("step_dispatches"), digits=2),
                latency_us(value("step_dispatch_s")),
                latency_us(value("step_roof_s")),
                latency_us(value("step_alpha_s")),
                percent((value("step_dispatch_s") + value("step_roof_s")) / value("step_s")),
            ]
        )
    return markdown_table(STEP_HEADER, rows) if rows else ""


def closure_note(stats: xr.Dataset) -> str:
    """How many cells' parts close on their median (kernel time and dispatch not above it by
    more than CLOSURE_TOLERANCE), and the range of the profiled runs' stretch, over every
    batch; '' without parts."""
    if "attribution_closure" not in stats:
        return ""
    closure = stats["attribution_closure"].values.ravel()
    closure = closure[np.isfinite(closure)]
    if not closure.size:
        return ""
    stretch = stats["attr_stretch"].values.ravel()
    stretch = stretch[np.isfinite(stretch)]
    held = int((closure <= 1 + CLOSURE_TOLERANCE).sum())
    text = (
        f"The parts close on the median within {CLOSURE_TOLERANCE:.0%} in {held} of "
        f"{closure.size} cells with parts (every batch; `attribution_closure` in stats.csv)."
    )
    if stretch.size:
        low, mid, high = np.percentile(stretch, [0, 50, 100])
        text += (
            f" The profiled runs' work over the clean median (`attr_stretch`): median "
            f"{mid:.2f}, range {low:.2f}–{high:.2f}."
        )
    return text


def _signed_us(seconds: float) -> str:
    return f"{seconds * 1e6:+.1f}" if math.isfinite(seconds) else MISSING


def unattributed(stats: xr.Dataset, batch: int) -> list[tuple[str, str]]:
    """(variant, why) for the measured variants at `batch` without the parts: the pass's own
    reason (a runtime with no profiler wired in, a failure), one per variant."""
    found: dict[str, str] = {}
    have = set(attributed_cells(stats, batch))
    for arch in stats["arch"].values:
        for framework, mode in variants(stats):
            cell = (framework, mode, str(arch), batch)
            if cell in have or cell_value(stats, "status", cell) != STATUS_OK:
                continue
            why = str(cell_value(stats, "attribution", cell)) if "attribution" in stats else ""
            why = why.split(": ", 1)[0] if why.startswith(("not measured", "failed")) else why
            found.setdefault(f"{framework}/{mode}", why or "no attribution pass ran")
    return sorted(found.items())


def draw_attribution(inputs: FigureInputs) -> Figure:
    """Per architecture at the table batch, each variant's median stacked as its four parts,
    in µs on a linear axis per panel (the panels' scales differ)."""
    stats, batch = inputs.stats, inputs.batch
    archs = [str(a) for a in stats["arch"].values]
    pairs = variants(stats)
    figure = new_figure(max(6.0, 2.4 * len(archs) + 1.5), 4.5)
    axes = figure.subplots(1, len(archs), squeeze=False)[0]
    have = set(attributed_cells(stats, batch))
    for ax, arch in zip(axes, archs, strict=True):
        for x, (framework, mode) in enumerate(pairs):
            if (framework, mode, arch, batch) in have:
                _stack(ax, x, stats, (framework, mode, arch, batch))
        ax.set_xticks(range(len(pairs)), [f"{f} {m}" for f, m in pairs], fontsize=6)
        ax.tick_params(axis="x", labelrotation=90)
        ax.set_title(f"{arch}, batch {batch}", fontsize=9)
    axes[0].set_ylabel("µs per call")
    handles = [Patch(color=COLORS[p], label=PART_LABELS[p]) for p in PARTS]
    figure.legend(handles=handles, loc="outside upper center", ncols=4, fontsize=7)
    add_note(figure, _notes(inputs))
    return figure


def _stack(ax, x: int, stats: xr.Dataset, cell: tuple) -> None:
    bottom = 0.0
    for part in PARTS:
        height = float(cell_value(stats, part, cell)) * 1e6
        if np.isfinite(height) and height > 0:
            ax.bar(x, height, 0.7, bottom=bottom, color=COLORS[part], edgecolor="0.2", lw=0.3)
            bottom += height
    ax.plot([x], [float(cell_value(stats, "median_s", cell)) * 1e6], "_", color="black", ms=9)


def _notes(inputs: FigureInputs) -> list[str]:
    notes = [
        "Bars: the clean median split into roofline bound, kernel excess (kernel time the "
        "profiler saw beyond the bound), dispatch (ops or launches × the mode's floor) and the "
        "rest; a tick marks the median (below the bars' top where the parts overshoot it)."
    ]
    missing = unattributed(inputs.stats, inputs.batch)
    if missing:
        notes.append("Without parts: " + "; ".join(f"{v} ({why})" for v, why in missing))
    failed = failed_note(inputs.stats, [inputs.batch])
    return notes + [note for note in (inputs.batch_note(), failed) if note]
