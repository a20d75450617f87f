"""How much a cell's median moves between fresh processes, and what the CIs make of it.

    .venv/bin/python self_measurement/process_variation.py results/aggregate/bench.nc

For each measured cell of an aggregate with more than one process: the spread of the
per-process medians (max / min), the median's CI from process 0's timings alone (what a
one-process sweep reports) and the hierarchical CI over all processes (what stats.nc reports),
and whether process 0's CI holds the median of all processes. A one-process CI that misses the
all-process median shows the between-process variation it cannot see.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from fwbench.analysis.estimators import hierarchical_median_ci, median_ci
from fwbench.io.bench_file import read_bench
from fwbench.io.dims import CELL_DIMS, STATUS_OK
from fwbench.rng import seeded_rng


def cell_rows(path: str, confidence: float, resamples: int) -> list[dict]:
    bench = read_bench(path)
    if bench.sizes.get("process", 1) < 2:
        raise SystemExit(f"{path} has {bench.sizes.get('process', 1)} process: nothing to compare")
    # Every cell position: the system too, where the aggregate has systems.
    dims = [d for d in ("system", *CELL_DIMS) if d in bench.dims]
    latency = bench["latency_s"].transpose(*dims, "process", "repeat")
    status = bench["status"].transpose(*dims, "process").values
    rows = []
    for index in np.ndindex(*latency.shape[:-2]):
        if not (status[index] == STATUS_OK).all():
            continue
        by_process = latency.values[index]
        name = "/".join(str(bench[d].values[i]) for d, i in zip(dims, index, strict=True))
        medians = np.nanmedian(by_process, axis=1)
        one = median_ci(by_process[0], confidence, resamples, seeded_rng(0, name))
        every = hierarchical_median_ci(by_process, confidence, resamples, seeded_rng(0, name))
        pooled = float(np.nanmedian(by_process))
        rows.append(
            {
                "cell": name,
                "spread": float(medians.max() / medians.min()),
                "one_width": (one[1] - one[0]) / pooled,
                "all_width": (every[1] - every[0]) / pooled,
                "one_holds_pooled": one[0] <= pooled <= one[1],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", help="results/aggregate/bench.nc of a run with processes > 1")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    rows = cell_rows(args.bench, args.confidence, args.resamples)
    print(f"{'cell':42} {'max/min':>8} {'CI p0 %':>8} {'CI all %':>9} {'p0 holds':>9}")
    for row in rows:
        print(
            f"{row['cell']:42} {row['spread']:8.3f} {100 * row['one_width']:8.2f} "
            f"{100 * row['all_width']:9.2f} {'yes' if row['one_holds_pooled'] else 'NO':>9}"
        )
    missed = sum(not row["one_holds_pooled"] for row in rows)
    print(
        f"\n{len(rows)} cells; median between-process spread "
        f"{np.median([r['spread'] for r in rows]):.3f}×; median CI width "
        f"{100 * np.median([r['one_width'] for r in rows]):.2f}% (process 0) vs "
        f"{100 * np.median([r['all_width'] for r in rows]):.2f}% (hierarchical); "
        f"process 0's CI misses the all-process median in {missed} of {len(rows)} cells"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
