"""Every figure by name, and drawing the ones a job asks for.

The inference figures draw one system's cells from stats.nc, that system's hardware JSON and
(the precision figure) the merged equivalence checks; the systems figure every system's cells
from stats.nc; the training figures one system's runs from the stacked training runs only. A
failed cell or run is never drawn as a number; each figure names what it left out in its note.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import xarray as xr
from matplotlib.figure import Figure

from fwbench.io.checks_file import read_equivalence
from fwbench.io.common import read_netcdf
from fwbench.io.hardware_file import read_hardware_record
from fwbench.io.stats_file import StatsView, read_stats
from fwbench.present import catalog
from fwbench.present.figure_data import FigureInputs
from fwbench.present.plots_systems import draw_systems
from fwbench.present.style import MIN_DPI, save_figure

# Each figure's drawing function, by name (the list: fwbench.present.catalog.FIGURES).
INFERENCE_FIGURES: dict[str, Callable[[FigureInputs], Figure]] = {
    entry.name: entry.resolve() for entry in catalog.FIGURES if entry.kind == catalog.INFERENCE
}
SYSTEMS_FIGURES = tuple(catalog.figure_names(catalog.SYSTEMS))
TRAINING_FIGURES: dict[str, Callable[[xr.Dataset], Figure]] = {
    entry.name: entry.resolve() for entry in catalog.FIGURES if entry.kind == catalog.TRAINING
}


def draw_requested(
    outputs: Mapping[str, str | os.PathLike],
    stats: str | os.PathLike | None = None,
    hardware: str | os.PathLike | None = None,
    train_stats: str | os.PathLike | None = None,
    dpi: int = MIN_DPI,
    system: str | None = None,
    equivalence: str | os.PathLike | None = None,
) -> list[str]:
    """Draw every figure named in `outputs` (name → PNG path; `<name>_svg` → SVG path) from
    the given files, save them, and return the names drawn. The inference and training figures
    draw `system`'s cells (None: files without systems). An output name that is no figure, or a
    figure whose input is not given, raises naming it."""
    names = [name for name in outputs if not name.endswith("_svg")]
    figures = (*INFERENCE_FIGURES, *TRAINING_FIGURES, *SYSTEMS_FIGURES)
    unknown = [n for n in names if n not in figures]
    unknown += [n for n in outputs if n.endswith("_svg") and n.removesuffix("_svg") not in names]
    if unknown:
        known = ", ".join(figures)
        raise ValueError(f"no figure named {', '.join(unknown)}; figures: {known}")
    all_stats = inputs = None
    if any(name in INFERENCE_FIGURES or name in SYSTEMS_FIGURES for name in names):
        if stats is None:
            raise ValueError(f"figures {names} need the stats file (input 'stats')")
        all_stats = read_stats(stats)
    if any(name in INFERENCE_FIGURES for name in names):
        checks = None if equivalence is None else read_equivalence(equivalence)
        inputs = FigureInputs(StatsView(all_stats, system), read_hardware_record(hardware), checks)
    train = None
    if any(name in TRAINING_FIGURES for name in names):
        if train_stats is None:
            raise ValueError(f"figures {names} need the training runs (input 'train_stats')")
        train = read_netcdf(train_stats)
        if system and "system" in train.dims:
            train = train.sel(system=system, drop=True)
    for name in names:
        if name in INFERENCE_FIGURES:
            figure = INFERENCE_FIGURES[name](inputs)
        elif name in SYSTEMS_FIGURES:
            figure = draw_systems(all_stats)
        else:
            figure = TRAINING_FIGURES[name](train)
        save_figure(figure, outputs[name], outputs.get(f"{name}_svg"), dpi)
    return names
