"""How long aggregation takes for 10,000 cells (goal: 30 s or less on a laptop-class CPU).

Writes 10,000 synthetic cells in the real format (fwbench.io.cell_file.write_cell) into a
temporary directory, untimed, then times fwbench.analysis.aggregate.write_aggregate on them and
prints the wall time and the process's peak RSS.

    .venv/bin/python self_measurement/aggregate_10k.py [--cells 10000] [--repeats 40] [--jobs 1]

Writing the cells takes about as long as 10,000 cell jobs' writes (minutes on one core);
--jobs spreads the writing over processes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fwbench.analysis.aggregate import write_aggregate
from fwbench.frameworks import MODES
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.dims import STATUS_FAILED
from fwbench.model.specs import ARCHITECTURES


def synthetic_cells(count: int, repeats: int, seed: int = 0) -> list[Cell]:
    """`count` cells over every (framework, mode) and architecture, batches 1, 2, 3, ...;
    one cell in fifty failed, as in a real sweep with a few broken modes."""
    rng = np.random.default_rng(seed)
    variants = [
        (fw, mode, arch) for fw, modes in MODES.items() for mode in modes for arch in ARCHITECTURES
    ]
    cells = []
    for i in range(count):
        framework, mode, arch = variants[i % len(variants)]
        batch = 1 + i // len(variants)
        cell = Cell(framework, mode, arch, batch, repeats)
        cell.attrs = {
            "framework_version": "1.0",
            "versions": {framework: "1.0"},
            "host": "synthetic",
            "device": "cpu",
            "threads": {"threads": 1},
            "config_hash": "0" * 16,
            "git_commit": "synthetic",
        }
        if i % 50 == 49:
            cell.attrs |= {
                "status": STATUS_FAILED,
                "error_type": "RuntimeError",
                "error_message": "synthetic failure",
            }
        else:
            cell.latency_s = 1e-4 * rng.lognormal(0.0, 0.05, repeats)
            cell.scalars = {
                "first_call_s": 0.5,
                "flops": 1e6 * batch,
                "bytes": 1e5 * batch,
                "compiled": float(mode != "eager"),
            }
        cells.append(cell)
    return cells


def _write(cell_and_path: tuple[Cell, Path]) -> None:
    cell, path = cell_and_path
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cell(cell, path)


def peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=1, help="processes writing the cells")
    parser.add_argument("--keep", type=Path, help="write the cells here and keep them")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="fwbench-agg-") as tmp:
        root = args.keep or Path(tmp)
        start = time.perf_counter()
        work = [
            (cell, root / cell.framework / "1.0" / cell.mode / cell.arch / f"b{cell.batch}.nc")
            for cell in synthetic_cells(args.cells, args.repeats)
        ]
        with multiprocessing.Pool(args.jobs) as pool:
            pool.map(_write, work, chunksize=64)
        paths = [path for _, path in work]
        print(f"wrote {len(paths)} cells in {time.perf_counter() - start:.1f} s (not timed)")
        rss_before = peak_rss_mib()

        start = time.perf_counter()
        ds = write_aggregate(paths, root / "bench.nc")
        wall_s = time.perf_counter() - start
        size_mib = (root / "bench.nc").stat().st_size / 2**20
        print(f"aggregated {ds.attrs['cells']} cells into {dict(ds.sizes)} ({size_mib:.1f} MiB)")
        print(f"aggregation wall time: {wall_s:.2f} s")
        print(f"peak RSS: {peak_rss_mib():.0f} MiB (before aggregating: {rss_before:.0f} MiB)")


if __name__ == "__main__":
    main()
