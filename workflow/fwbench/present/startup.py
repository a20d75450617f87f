"""Start-up costs: how long a fresh process waits for its first answer, per variant and
architecture at the table batch, as one table and one figure (stacked bars).

The parts, all process 0's (stats.nc): importing the framework or runtime, building the model
(an export mode: loading the artifact or creating the session), the export job's export or
conversion (export modes; paid once, offline), and the first call with a cold compile cache.
Beside them the first call of the cell's later processes and of the rounds' workers, each a
fresh process started from a copy of process 0's on-disk compile cache (warm), where the
framework keeps one. A cold cache is empty of the model, not of the host: the framework's probe
of the host (torch inductor's CPU ISA) is made once (fwbench.measure.compile_cache).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fwbench import frameworks
from fwbench.io.dims import STATUS_OK, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.figure_data import FigureInputs, failed_note
from fwbench.present.format import fixed
from fwbench.present.style import add_note, new_figure
from fwbench.present.tables import markdown_table

# (stats variable, label, colour) of each stacked part, in the order a process pays them.
PARTS = (
    (V.import_s, "import", "#BBBBBB"),
    (V.build_s, "build / load artifact", "#66CCEE"),
    (V.export_s, "export / convert (once, offline)", "#CCBB44"),
    (V.first_call_s, "first call, cold cache", "#EE6677"),
)
TABLE_HEADER = [
    "variant",
    "architecture",
    *(label + " s" for _, label, _ in PARTS),
    "first call, warm cache s",
    "time to first answer s",
    "on-disk compile cache",
]


def cache_kind(framework: str, mode: str) -> str:
    """The on-disk compile cache a mode's later processes start warm from; a runtime's cells
    (ONNX Runtime, LiteRT) compile nothing and keep none."""
    if frameworks.runtime_of(framework, mode) is not None:
        return "none (runtime)"
    names = frameworks.compile_cache_env(framework)
    return ", ".join(names) if names else "none kept"


def parts_of(view: StatsView, key: CellKey) -> dict[str, float]:
    """A measured cell's start-up parts in seconds (NaN where a part does not apply)."""
    return {name: float(view.value(name, key)) for name, _, _ in PARTS}


def _cells(view: StatsView, batch: int) -> list[CellKey]:
    keys = [
        CellKey(framework, mode, arch, batch)
        for arch in view.archs()
        for framework, mode in view.variants()
    ]
    return [key for key in keys if view.value(V.status, key) == STATUS_OK]


def startup_table(view: StatsView, batch: int) -> str:
    rows = []
    for key in _cells(view, batch):
        parts = parts_of(view, key)
        rows.append(
            [
                f"{key.framework}/{key.mode}",
                key.arch,
                *(fixed(parts.get(name), digits=3) for name, _, _ in PARTS),
                fixed(view.value(V.first_call_warm_s, key), digits=3),
                fixed(view.value(V.first_answer_s, key), digits=2),
                cache_kind(key.framework, key.mode),
            ]
        )
    return markdown_table(TABLE_HEADER, rows)


def draw_startup(inputs: FigureInputs) -> Figure:
    """Stacked bars of each variant's start-up parts, one panel per architecture at the
    table batch; a dot marks the time to first answer with a warm compile cache."""
    view, batch = inputs.view, inputs.batch
    archs = view.archs()
    pairs = view.variants()
    figure = new_figure(max(6.0, 2.4 * len(archs) + 1.5), 4.5)
    axes = figure.subplots(1, len(archs), squeeze=False, sharey=True)[0]
    for ax, arch in zip(axes, archs, strict=True):
        for v, (framework, mode) in enumerate(pairs):
            key = CellKey(framework, mode, arch, batch)
            if view.value(V.status, key) != STATUS_OK:
                continue
            _stack(ax, v, view, key)
        ax.set_xticks(range(len(pairs)), [f"{f} {m}" for f, m in pairs], fontsize=6)
        ax.tick_params(axis="x", labelrotation=90)
        ax.set_title(f"{arch}, batch {batch}", fontsize=9)
    axes[0].set_ylabel("seconds")
    handles = [Patch(color=color, label=label) for _, label, color in PARTS]
    figure.legend(handles=handles, loc="outside upper center", ncols=2, fontsize=7)
    add_note(figure, _notes(inputs))
    return figure


def _stack(ax, x: int, view: StatsView, key: CellKey) -> None:
    bottom = 0.0
    parts = parts_of(view, key)
    for name, _, color in PARTS:
        height = parts.get(name, math.nan)
        if np.isfinite(height) and height > 0:
            ax.bar(x, height, 0.7, bottom=bottom, color=color, edgecolor="0.2", linewidth=0.3)
            bottom += height
    ready = view.value(V.first_answer_warm_s, key)
    if np.isfinite(ready):
        ax.plot([x], [ready], "o", color="black", markersize=3)


def _notes(inputs: FigureInputs) -> list[str]:
    notes = [
        "Process 0 of each cell, cold compile caches; dot: import + build + the later "
        "processes' and rounds workers' first call, warm from process 0's on-disk cache "
        "(none: no dot). "
        "The export is paid once, offline: stacked, but not in the time to first answer."
    ]
    failed = failed_note(inputs.view, [inputs.batch])
    return notes + [note for note in (inputs.batch_note(), failed) if note]
