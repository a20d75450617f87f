"""Compile speedups: each compiled mode against its framework's eager cell at the same (arch,
batch), as a ratio of medians with a bootstrap CI and the break-even iteration count.

Each ratio's resampling is seeded from (seed, "speedup/<framework>/<mode>/<arch>/<batch>"), so
a CI does not depend on the other cells.
"""

from __future__ import annotations

import math

import numpy as np

from fwbench.analysis.estimators import (
    break_even_iterations,
    hierarchical_ratio_ci,
    ratio_of_medians_ci,
)
from fwbench.io.dims import EAGER_MODE
from fwbench.rng import seeded_rng

SPEEDUP_VARIABLES = (
    "speedup_vs_eager",
    "speedup_ci_low",
    "speedup_ci_high",
    "break_even_iterations",
)


def compile_speedups(
    latency: np.ndarray,
    median_s: np.ndarray,
    first_call_s: np.ndarray,
    coords: tuple[list[str], list[str], list[str], list[int]],
    *,
    confidence: float,
    resamples: int,
    seed: int,
    by_process: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The SPEEDUP_VARIABLES, arrays in CELL_DIMS order (NaN for eager and unmeasured cells);
    `latency` has the repeats last, `coords` are the values along CELL_DIMS. With
    `by_process` (CELL_DIMS × process × iteration) the CIs resample processes first."""
    frameworks, modes, archs, batches = coords
    out = {name: np.full(median_s.shape, np.nan) for name in SPEEDUP_VARIABLES}
    if EAGER_MODE not in modes:
        return out
    eager = modes.index(EAGER_MODE)
    median, first = median_s, first_call_s
    for f, a, b in np.ndindex(len(frameworks), len(archs), len(batches)):
        if math.isnan(median[f, eager, a, b]):
            continue
        for m, mode in enumerate(modes):
            if m == eager or math.isnan(median[f, m, a, b]):
                continue
            name = f"speedup/{frameworks[f]}/{mode}/{archs[a]}/{batches[b]}"
            out["speedup_vs_eager"][f, m, a, b] = median[f, eager, a, b] / median[f, m, a, b]
            samples = latency if by_process is None else by_process
            ci = ratio_of_medians_ci if by_process is None else hierarchical_ratio_ci
            low, high = ci(
                samples[f, eager, a, b],
                samples[f, m, a, b],
                confidence,
                resamples,
                seeded_rng(seed, name),
            )
            out["speedup_ci_low"][f, m, a, b] = low
            out["speedup_ci_high"][f, m, a, b] = high
            out["break_even_iterations"][f, m, a, b] = break_even_iterations(
                first[f, eager, a, b], median[f, eager, a, b], first[f, m, a, b], median[f, m, a, b]
            )
    return out
