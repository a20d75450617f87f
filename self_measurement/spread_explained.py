"""How much of a cell's between-process spread does the speed canary explain?

    python self_measurement/spread_explained.py results/aggregate/bench.nc

For every cell measured in at least two processes (status ok in each), the deviation of each
process's log median latency from the cell's mean, against the same deviation of the process's
median canary chain factor (the core's speed, canary_chain_s) and read factor (the level's
speed, canary_read_s). Prints the Pearson correlation and R² of each against the latency's
deviations, the slope (the cells' sensitivity to the machine's state: 1 = a cell slows exactly
as the canary does), and the pooled between-process σ of log medians before and after dividing
each process's median by its chain or read factor to the fitted power, and to the power 1
(deviations from the cell's own mean: the read's level moves with the framework's own cache
footprint, its deviations between a cell's processes do not). The fit is
over the same cells it is applied to: read the σ after it as the most the canary can remove.
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import xarray as xr

DIMS = ("system", "framework", "mode", "arch", "batch")


def process_deviations(bench: xr.Dataset) -> dict[str, np.ndarray]:
    """Per process of every cell with ≥ 2 usable processes: its deviation from its cell's mean
    of log median latency, log median chain factor and log median read factor."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        logs = {
            "latency": np.log(bench["latency_s"].median("repeat")),
            "chain": np.log(
                (bench["canary_chain_s"] / bench["canary_chain_baseline_s"]).median("repeat")
            ),
            "read": np.log(
                (bench["canary_read_s"] / bench["canary_read_baseline_s"]).median("repeat")
            ),
        }
    arrays = {
        k: v.transpose(*DIMS, "process").values.reshape(-1, bench.sizes["process"])
        for k, v in logs.items()
    }
    usable = np.all([np.isfinite(a) for a in arrays.values()], axis=0)
    keep = usable.sum(axis=1) >= 2
    out = {}
    for name, values in arrays.items():
        rows = np.where(usable, values, np.nan)[keep]
        out[name] = (rows - np.nanmean(rows, axis=1, keepdims=True))[usable[keep]]
    out["cells"] = np.array([int(keep.sum())])
    out["dof"] = np.array([int(usable[keep].sum() - keep.sum())])
    return out


def pooled_sigma(deviations: np.ndarray, dof: int) -> float:
    return math.sqrt(float(np.sum(deviations**2)) / dof) if dof else math.nan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", help="results/aggregate/bench.nc")
    args = parser.parse_args()
    with xr.open_dataset(args.bench) as bench:
        found = process_deviations(bench.load())
    y, dof = found["latency"], int(found["dof"][0])
    print(f"{int(found['cells'][0])} cells in ≥ 2 processes, {len(y)} processes, dof {dof}")
    for name in ("chain", "read"):
        x = found[name]
        r = float(np.corrcoef(x, y)[0, 1]) if np.std(x) > 0 else math.nan
        slope = float(np.sum(x * y) / np.sum(x * x)) if np.sum(x * x) > 0 else math.nan
        print(f"{name}: Pearson {r:.2f}, R² {r * r:.2f}, slope {slope:.2f}")
    print(f"pooled σ of log process medians: {pooled_sigma(y, dof):.3f}")
    for name in ("chain", "read"):
        x = found[name]
        slope = float(np.sum(x * y) / np.sum(x * x)) if np.sum(x * x) else 0.0
        after = pooled_sigma(y - slope * x, dof)
        print(f"  divided by the {name} factor^{slope:.2f} (fitted): {after:.3f}")
        print(f"  divided by the {name} factor^1: {pooled_sigma(y - x, dof):.3f}")


if __name__ == "__main__":
    main()
