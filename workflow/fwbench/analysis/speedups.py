"""Compile speedups: each compiled mode against its framework's eager cell at the same (arch,
batch), as a ratio of medians with a CI and the break-even iteration count; and each export
mode (a deployment path) against the best of its framework's own modes there.

One process per cell: a bootstrap CI, each ratio's resampling seeded from (seed,
"speedup/<framework>/<mode>/<arch>/<batch>"), so a CI does not depend on the other cells.
Several: from both cells' spread between processes (fwbench.analysis.process_spread).
"""

from __future__ import annotations

import math

import numpy as np

from fwbench import frameworks
from fwbench.analysis.estimators import break_even_iterations, ratio_of_medians_ci
from fwbench.analysis.process_spread import ratio_ci, spread_at
from fwbench.io.dims import EAGER_MODE
from fwbench.io.variables import V
from fwbench.rng import seeded_rng

SPEEDUP_VARIABLES = (
    V.speedup_vs_eager,
    "speedup_ci_low",
    "speedup_ci_high",
    "break_even_iterations",
    "speedup_vs_best",
    "speedup_vs_best_ci_low",
    "speedup_vs_best_ci_high",
)


def best_in_framework(framework: str, modes: list[str], medians: np.ndarray) -> int | None:
    """The index of the fastest of a framework's own modes (not its export modes) by median,
    `medians` along `modes`; None where none was measured."""
    own = [m for m, mode in enumerate(modes) if not frameworks.is_export_mode(framework, mode)]
    measured = [m for m in own if not math.isnan(medians[m])]
    return min(measured, key=lambda m: medians[m]) if measured else None


def _ratio_ci(
    latency: np.ndarray,
    spreads: dict[str, np.ndarray] | None,
    cells: tuple[tuple, tuple],
    ratio: float,
    name: str,
    settings: tuple[float, int, int],
) -> tuple[float, float]:
    """The CI of median(cells[0]) / median(cells[1]): from both cells' spread between
    processes, or a bootstrap over one process's timings seeded by `name`."""
    confidence, resamples, seed = settings
    if spreads is not None:
        return ratio_ci(ratio, [spread_at(spreads, cell) for cell in cells], confidence)
    rng = seeded_rng(seed, name)
    return ratio_of_medians_ci(latency[cells[0]], latency[cells[1]], confidence, resamples, rng)


def compile_speedups(
    latency: np.ndarray,
    median_s: np.ndarray,
    first_call_s: np.ndarray,
    coords: tuple[list[str], list[str], list[str], list[int]],
    *,
    confidence: float,
    resamples: int,
    seed: int,
    spreads: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """The SPEEDUP_VARIABLES, arrays in CELL_DIMS order (NaN for eager and unmeasured cells);
    `latency` has the repeats last, `coords` are the values along CELL_DIMS. With `spreads`
    (process_spread.cell_spreads of cells in several processes) the CIs come from them."""
    framework_names, modes, archs, batches = coords
    out = {name: np.full(median_s.shape, np.nan) for name in SPEEDUP_VARIABLES[:4]}
    settings = (confidence, resamples, seed)
    out |= _deployment_speedups(latency, median_s, coords, settings, spreads)
    if EAGER_MODE not in modes:
        return out
    eager = modes.index(EAGER_MODE)
    median, first = median_s, first_call_s
    for f, a, b in np.ndindex(len(framework_names), len(archs), len(batches)):
        if math.isnan(median[f, eager, a, b]):
            continue
        for m, mode in enumerate(modes):
            if m == eager or math.isnan(median[f, m, a, b]):
                continue
            name = f"speedup/{framework_names[f]}/{mode}/{archs[a]}/{batches[b]}"
            ratio = median[f, eager, a, b] / median[f, m, a, b]
            out[V.speedup_vs_eager][f, m, a, b] = ratio
            pair = ((f, eager, a, b), (f, m, a, b))
            low, high = _ratio_ci(latency, spreads, pair, ratio, name, settings)
            out["speedup_ci_low"][f, m, a, b] = low
            out["speedup_ci_high"][f, m, a, b] = high
            out["break_even_iterations"][f, m, a, b] = break_even_iterations(
                first[f, eager, a, b], median[f, eager, a, b], first[f, m, a, b], median[f, m, a, b]
            )
    return out


def _deployment_speedups(
    latency: np.ndarray,
    median_s: np.ndarray,
    coords: tuple[list[str], list[str], list[str], list[int]],
    settings: tuple[float, int, int],
    spreads: dict[str, np.ndarray] | None,
) -> dict[str, np.ndarray]:
    """speedup_vs_best (> 1: the deployment path is faster) and its CI, for export modes."""
    framework_names, modes, archs, batches = coords
    names = SPEEDUP_VARIABLES[4:]
    out = {name: np.full(median_s.shape, np.nan) for name in names}
    for f, m, a, b in np.ndindex(*median_s.shape):
        framework = framework_names[f]
        if not frameworks.is_export_mode(framework, modes[m]) or math.isnan(median_s[f, m, a, b]):
            continue
        best = best_in_framework(framework, modes, median_s[f, :, a, b])
        if best is None:
            continue
        ratio = median_s[f, best, a, b] / median_s[f, m, a, b]
        name = f"deployment/{framework}/{modes[m]}/{archs[a]}/{batches[b]}"
        pair = ((f, best, a, b), (f, m, a, b))
        low, high = _ratio_ci(latency, spreads, pair, ratio, name, settings)
        for key, value in zip(names, (ratio, low, high), strict=True):
            out[key][f, m, a, b] = value
    return out


def best_own_modes(
    median_s: np.ndarray, coords: tuple[list[str], list[str], list[str], list[int]]
) -> np.ndarray:
    """Per export-mode cell that ran, the name of its framework's fastest own mode at the same
    arch and batch (speedup_vs_best's reference); '' elsewhere."""
    framework_names, modes = coords[0], coords[1]
    names = np.full(median_s.shape, "", dtype=object)
    for f, m, a, b in np.ndindex(*median_s.shape):
        framework = framework_names[f]
        if not frameworks.is_export_mode(framework, modes[m]) or math.isnan(median_s[f, m, a, b]):
            continue
        best = best_in_framework(framework, modes, median_s[f, :, a, b])
        names[f, m, a, b] = modes[best] if best is not None else ""
    return names
