"""Compile speedups: each compiled mode against its framework's eager cell in the same row, as
a ratio of medians with a CI, a verdict (fwbench.analysis.comparisons) and the break-even
iteration count; each export mode (a deployment path) against the best of its framework's
own modes there; and each low-precision cell against the same variant in float32. Arrays over
CELL_DIMS for stats.nc, and the comparisons themselves for comparisons.csv.
"""

from __future__ import annotations

import numpy as np

from fwbench.analysis.comparisons import (
    Cells,
    Comparison,
    Levels,
    compare,
    compile_pairs,
    deployment_pairs,
    precision_pairs,
)
from fwbench.analysis.estimators import break_even_iterations
from fwbench.io.comparisons_file import COMPILE, DEPLOYMENT, PRECISION
from fwbench.io.dims import CellKey
from fwbench.io.variables import V

COMPILE_VARIABLES = (V.speedup_vs_eager, V.speedup_ci_low, V.speedup_ci_high, V.speedup_verdict)
DEPLOYMENT_VARIABLES = (
    V.speedup_vs_best,
    V.speedup_vs_best_ci_low,
    V.speedup_vs_best_ci_high,
    V.deployment_verdict,
)
PRECISION_VARIABLES = (
    V.speedup_vs_float32,
    V.speedup_vs_float32_ci_low,
    V.speedup_vs_float32_ci_high,
    V.precision_verdict,
)
TEXT = (V.speedup_verdict, V.deployment_verdict, V.precision_verdict, V.best_own_mode)


def _empty(shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    names = (*COMPILE_VARIABLES, *DEPLOYMENT_VARIABLES, *PRECISION_VARIABLES)
    names += (V.best_own_mode, V.break_even_iterations)
    return {
        name: np.full(shape, "", dtype=object) if name in TEXT else np.full(shape, np.nan)
        for name in names
    }


def _put(out: dict[str, np.ndarray], names: tuple, found: Comparison, at: tuple) -> None:
    values = (found.speedup, found.ci_low, found.ci_high, found.verdict)
    for name, value in zip(names, values, strict=True):
        out[name][at] = value


def speedups(
    cells: Cells, ok: list[CellKey], first_call_s: np.ndarray, levels: Levels
) -> tuple[dict[str, np.ndarray], list[Comparison]]:
    """The speedup variables of stats.nc (NaN / '' where a cell has none) and the compile,
    deployment and precision comparisons they come from."""
    out = _empty(cells.median_s.shape)
    found = []
    for eager, key in compile_pairs(ok):
        comparison = compare(cells, COMPILE, eager, key, levels)
        at, base = key.position(cells.coords), eager.position(cells.coords)
        _put(out, COMPILE_VARIABLES, comparison, at)
        out[V.break_even_iterations][at] = break_even_iterations(
            first_call_s[base], cells.median_s[base], first_call_s[at], cells.median_s[at]
        )
        found.append(comparison)
    for best, key in deployment_pairs(ok, cells.pace):
        comparison = compare(cells, DEPLOYMENT, best, key, levels)
        at = key.position(cells.coords)
        _put(out, DEPLOYMENT_VARIABLES, comparison, at)
        out[V.best_own_mode][at] = best.mode
        found.append(comparison)
    for fp32, key in precision_pairs(ok):
        comparison = compare(cells, PRECISION, fp32, key, levels)
        _put(out, PRECISION_VARIABLES, comparison, key.position(cells.coords))
        found.append(comparison)
    return out, found
