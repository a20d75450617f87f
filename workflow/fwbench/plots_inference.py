"""The inference figures by name: each draws from stats.nc and the hardware JSON only.

A failed cell is never drawn as a number; each figure names what it left out in its note.
"""

from __future__ import annotations

from collections.abc import Callable

from matplotlib.figure import Figure

from fwbench.plots_data import FigureInputs
from fwbench.plots_latency import draw_latency, draw_scaling, draw_speedup, draw_stability
from fwbench.plots_roofline import draw_efficiency, draw_hardware, draw_roofline

__all__ = ["INFERENCE_FIGURES", "FigureInputs"]

INFERENCE_FIGURES: dict[str, Callable[[FigureInputs], Figure]] = {
    "hardware": draw_hardware,
    "roofline": draw_roofline,
    "latency": draw_latency,
    "speedup": draw_speedup,
    "efficiency": draw_efficiency,
    "scaling": draw_scaling,
    "stability": draw_stability,
}
