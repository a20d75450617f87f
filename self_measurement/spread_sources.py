"""Where the spread between processes comes from: the cells measured in two processes
(bench.processes 2, a share of the cells: the default sweep before 2026-12) against the rounds'
sets (a fresh worker per variant and set, the sets spread over the sweep: the default since).

    PYTHONPATH=workflow .venv/bin/python self_measurement/spread_sources.py WORKDIR

From one sweep that has both (results/aggregate/bench.nc with a `process` dimension, and
results/rounds/), prints each source's pooled σ of log process medians and its degrees of
freedom (fwbench.analysis.process_spread.pooled_sigma), and, over the cells measured in two
processes, how often the CI that process 0's median gets at k = 1 with each σ holds process
1's median: a second process's median differs from the first by σ·√2, so an honest σ holds it
in about 84% of cells at 95%.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from fwbench.analysis.process_spread import log_process_medians, pooled_sigma, spread_ci
from fwbench.analysis.rounds import Rounds
from fwbench.io.bench_file import read_bench
from fwbench.io.dims import CELL_DIMS, STATUS_OK
from fwbench.io.rounds_file import joined_rows

CONFIDENCE = 0.95


def two_process_cells(workdir: Path) -> list[np.ndarray]:
    """Every cell of the aggregate measured in two processes, as process × iteration."""
    bench = read_bench(workdir / "results/aggregate/bench.nc")
    if "system" in bench.dims:
        bench = bench.isel(system=0)
    latency = bench["latency_s"].transpose(*CELL_DIMS, "process", "repeat").values
    status = bench["status"].transpose(*CELL_DIMS, "process").values
    ok = (status == STATUS_OK).all(axis=-1)
    return [latency[index] for index in zip(*np.nonzero(ok), strict=True)]


def coverage(cells: list[np.ndarray], sigma: float, dof: int) -> float:
    held = 0
    for cell in cells:
        first, second = np.exp(log_process_medians(cell)[:2])
        low, high = spread_ci(first, sigma, 1, dof, CONFIDENCE)
        held += low <= second <= high
    return held / len(cells)


def main(workdir: Path) -> None:
    cells = two_process_cells(workdir)
    rounds = Rounds(
        joined_rows([str(p) for p in sorted((workdir / "results/rounds").rglob("*.nc"))])
    )
    sources = {
        "cells in two processes": pooled_sigma(cells),
        "rounds' sets": pooled_sigma(rounds.process_tables()),
        "both": pooled_sigma(cells + rounds.process_tables()),
    }
    print(f"{len(cells)} cells in two processes; {len(rounds.process_tables())} rounds variants")
    print(f"{'σ from':<24}{'σ (log)':>9}{'dof':>6}{'p1 held by p0 CI at k=1':>26}")
    for name, (sigma, dof) in sources.items():
        print(f"{name:<24}{sigma:>9.4f}{dof:>6}{coverage(cells, sigma, dof):>25.0%}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
