"""Compile speedups: each compiled mode against its framework's eager cell at the same (arch,
batch), as a ratio of medians with a CI and the break-even iteration count.

One process per cell: a bootstrap CI, each ratio's resampling seeded from (seed,
"speedup/<framework>/<mode>/<arch>/<batch>"), so a CI does not depend on the other cells.
Several: from both cells' spread between processes (fwbench.analysis.process_spread).
"""

from __future__ import annotations

import math

import numpy as np

from fwbench.analysis.estimators import break_even_iterations, ratio_of_medians_ci
from fwbench.analysis.process_spread import ratio_ci, spread_at
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
    spreads: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """The SPEEDUP_VARIABLES, arrays in CELL_DIMS order (NaN for eager and unmeasured cells);
    `latency` has the repeats last, `coords` are the values along CELL_DIMS. With `spreads`
    (process_spread.cell_spreads of cells in several processes) the CIs come from them."""
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
            ratio = median[f, eager, a, b] / median[f, m, a, b]
            out["speedup_vs_eager"][f, m, a, b] = ratio
            if spreads is None:
                low, high = ratio_of_medians_ci(
                    latency[f, eager, a, b],
                    latency[f, m, a, b],
                    confidence,
                    resamples,
                    seeded_rng(seed, name),
                )
            else:
                pair = [spread_at(spreads, (f, mode_index, a, b)) for mode_index in (eager, m)]
                low, high = ratio_ci(ratio, pair, confidence)
            out["speedup_ci_low"][f, m, a, b] = low
            out["speedup_ci_high"][f, m, a, b] = high
            out["break_even_iterations"][f, m, a, b] = break_even_iterations(
                first[f, eager, a, b], median[f, eager, a, b], first[f, m, a, b], median[f, m, a, b]
            )
    return out
