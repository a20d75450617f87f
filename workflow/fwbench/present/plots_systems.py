"""The systems side by side: the same cells' latency, and each cell's efficiency against its
own system's roofline (so a slow node that reaches its own limits reads as such).

One column per architecture at the table batch; in each, one group of bars per variant
(framework/mode) and one bar per system. Failed or absent cells are left out and named in the
note; flagged cells are hatched.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fwbench.io.dims import FLOAT32, STATUS_OK, variants_in
from fwbench.io.per_system import SYSTEM, SYSTEM_ATTRS, systems_of
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.style import add_note, group_offsets, new_figure, plain_log_ticks

SYSTEM_COLORS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB")
PANELS = (
    (V.median_s, "median latency (ms)", 1e3, True),
    (V.efficiency, "efficiency vs own roofline (%)", 100.0, True),
)


def _system_line(stats: xr.Dataset, name: str) -> str:
    attrs = json.loads(str(stats[SYSTEM_ATTRS].sel({SYSTEM: name}).values))
    return f"{name}: {attrs.get('device', '?')} on {attrs.get('host', '?')}; {attrs['roofline']}"


def draw_systems(stats: xr.Dataset) -> Figure:
    """Latency and own-roofline efficiency of every float32 cell at the table batch (the
    first system's), per system."""
    systems = systems_of(stats) or ["(one system)"]
    batch = StatsView(stats, systems_of(stats)[0] if systems_of(stats) else None).table_batch
    if SYSTEM not in stats.dims:
        stats = stats.expand_dims({SYSTEM: systems})
    at_batch = stats.sel(batch=batch)
    if "precision" in stats.dims:
        at_batch = at_batch.sel(precision=FLOAT32)
    archs = [str(a) for a in stats["arch"].values]
    pairs = variants_in(stats)
    figure = new_figure(max(6.0, 2.4 * len(archs) + 1.5), 6.5)
    axes = figure.subplots(len(PANELS), len(archs), squeeze=False, sharey="row")
    offsets, width = group_offsets(len(systems))
    left_out = []
    for column, arch in enumerate(archs):
        for row, (name, label, scale, log) in enumerate(PANELS):
            ax = axes[row][column]
            for s, system in enumerate(systems):
                for v, (framework, mode) in enumerate(pairs):
                    cell = at_batch.sel({SYSTEM: system, "arch": arch})
                    cell = cell.sel(framework=framework, mode=mode)
                    value = float(cell[name].values) * scale
                    if str(cell["status"].values) != STATUS_OK or not np.isfinite(value):
                        if row == 0:
                            left_out.append(f"{system}/{framework}/{mode}/{arch}")
                        continue
                    flagged = bool(str(cell["flags"].values))
                    ax.bar(
                        v + offsets[s],
                        value,
                        width,
                        color=SYSTEM_COLORS[s % len(SYSTEM_COLORS)],
                        hatch="//" if flagged else None,
                        edgecolor="0.2",
                        linewidth=0.4,
                    )
            ax.set_xticks(range(len(pairs)), [f"{f} {m}" for f, m in pairs], fontsize=6)
            ax.tick_params(axis="x", labelrotation=90)
            if log:
                ax.set_yscale("log")
                plain_log_ticks(ax)
            if column == 0:
                ax.set_ylabel(label)
            if row == 0:
                ax.set_title(f"{arch}, batch {batch}", fontsize=9)
    handles = [
        Patch(color=SYSTEM_COLORS[s % len(SYSTEM_COLORS)], label=system)
        for s, system in enumerate(systems)
    ]
    handles.append(Patch(facecolor="white", edgecolor="0.2", hatch="//", label="flagged"))
    figure.legend(handles=handles, loc="outside upper center", ncols=len(handles), fontsize=8)
    notes = [_system_line(stats, s) for s in systems if SYSTEM_ATTRS in stats]
    if left_out:
        notes.append(f"not drawn (failed or absent): {', '.join(left_out)}")
    add_note(figure, notes)
    return figure
