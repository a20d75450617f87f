"""How much a cell's median moves between fresh processes, and whether the CIs cover it.

    python -m fwbench variation results/aggregate/bench.nc [--default-stats saved/stats.nc]
        [--processes 2]

For each measured cell of an aggregate with more than one process (a run of
config/rigorous.yaml laid over a default sweep): the spread of the per-process medians (max /
min) and whether each CI holds the median of all the aggregate's processes (the "truth" a
second and third process would move towards):
  - p0 boot: the bootstrap CI of process 0's timings alone (the CI of a one-process sweep
    without rounds);
  - first k: the spread CI from the first k processes (`--processes`, the default sweep's), σ
    pooled over the aggregate's cells (fwbench.analysis.process_spread), so with an aggregate
    of a few cells it is wide; without the machine's state term γ²τ², which the statistics add
    from the rounds where these fitted it (this tool reads no rounds);
  - default: the CI a default sweep reported for the cell, read from its stats.nc
    (`--default-stats`, saved before the rigorous processes were added): the figure the
    issue asks for, σ pooled over the default sweep's cells.
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from fwbench.analysis.estimators import median_ci
from fwbench.analysis.process_spread import cell_sigma, pooled_sigma, spread_ci
from fwbench.io.bench_file import read_bench
from fwbench.io.dims import CELL_DIMS, STATUS_OK, CellKey
from fwbench.io.stats_file import read_stats
from fwbench.rng import seeded_rng

CONFIDENCE = 0.95
KINDS = ("p0", "first_k", "default")


def _cells(bench: xr.Dataset) -> tuple[list[str], xr.DataArray, np.ndarray]:
    dims = [d for d in ("system", *CELL_DIMS) if d in bench.dims]
    latency = bench["latency_s"].transpose(*dims, "process", "repeat")
    status = bench["status"].transpose(*dims, "process").values
    return dims, latency, status


def _first_k_cis(latency: xr.DataArray, status: np.ndarray, k: int) -> dict[tuple, tuple]:
    """Per measured cell: the spread CI from its first k processes, σ pooled per system."""
    values = latency.values
    groups: dict[tuple, list[tuple]] = {}
    for index in np.ndindex(*values.shape[:-2]):
        if (status[index] == STATUS_OK).all():
            groups.setdefault(index[:-4], []).append(index)
    cis = {}
    for members in groups.values():
        sigma, dof = pooled_sigma([values[index][:k] for index in members])
        for index in members:
            seen = values[index][:k]
            cell, usable = cell_sigma(seen, sigma)
            cis[index] = spread_ci(float(np.nanmedian(seen)), cell, usable, dof, CONFIDENCE)
    return cis


def cell_rows(path: str, processes: int, default_stats: str | None) -> list[dict]:
    """Per measured cell: its name, the spread of its process medians, the all-process median
    (`truth`) and the three CIs (KINDS; `default` None without `default_stats`)."""
    bench = read_bench(path)
    if bench.sizes.get("process", 1) < 2:
        raise SystemExit(f"{path} has {bench.sizes.get('process', 1)} process: nothing to compare")
    dims, latency, status = _cells(bench)
    stats = read_stats(default_stats) if default_stats else None
    first_k = _first_k_cis(latency, status, processes)
    rows = []
    for index, ci in first_k.items():
        by_process = latency.values[index]
        coords = {d: bench[d].values[i] for d, i in zip(dims, index, strict=True)}
        system = [str(coords["system"])] if "system" in coords else []
        name = "/".join([*system, CellKey.of(coords).name])
        truth = float(np.nanmedian(by_process))
        medians = np.nanmedian(by_process, axis=1)
        boot = median_ci(by_process[0], CONFIDENCE, 2000, seeded_rng(0, name))
        row = {"cell": name, "spread": float(medians.max() / medians.min()), "truth": truth}
        row |= {"p0": boot, "first_k": ci, "default": _default_ci(stats, coords)}
        rows.append(row)
    return rows


def _default_ci(stats: xr.Dataset | None, coords: dict) -> tuple[float, float] | None:
    if stats is None:
        return None
    cell = stats.sel({d: v for d, v in coords.items() if d in stats.dims})
    return float(cell["median_ci_low_s"]), float(cell["median_ci_high_s"])


def _holds(ci: tuple[float, float] | None, truth: float) -> str:
    if ci is None:
        return "-"
    return "yes" if ci[0] <= truth <= ci[1] else "NO"


def _width(ci: tuple[float, float] | None, truth: float) -> str:
    return "-" if ci is None else f"{100 * (ci[1] - ci[0]) / truth:.1f}"


def print_rows(rows: list[dict]) -> None:
    """One line per cell: its spread, and per CI whether it holds the truth and its width."""
    print(
        f"{'cell':44} {'max/min':>8}"
        + "".join(f" {k + ' holds':>14} {'width %':>8}" for k in KINDS)
    )
    for row in rows:
        print(
            f"{row['cell']:44} {row['spread']:8.3f}"
            + "".join(
                f" {_holds(row[k], row['truth']):>14} {_width(row[k], row['truth']):>8}"
                for k in KINDS
            )
        )


def print_summary(rows: list[dict]) -> None:
    """The median and largest spread, and per CI how often it holds the truth."""
    print(
        f"\n{len(rows)} cells; median between-process spread "
        f"{np.median([r['spread'] for r in rows]):.3f}×, max {max(r['spread'] for r in rows):.3f}×"
    )
    for kind in KINDS:
        found = [r for r in rows if r[kind] is not None]
        if found:
            held = sum(_holds(r[kind], r["truth"]) == "yes" for r in found)
            width = np.median([(r[kind][1] - r[kind][0]) / r["truth"] for r in found])
            print(
                f"{kind:8s}: holds the all-process median in {held} of {len(found)} cells "
                f"({held / len(found):.0%}), median width {100 * width:.1f}%"
            )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "bench", metavar="BENCH_NC", help="results/aggregate/bench.nc of a run with processes > 1"
    )
    parser.add_argument("--processes", type=int, default=2, help="the default sweep's")
    parser.add_argument("--default-stats", help="stats.nc of the default sweep, saved")


def run(args: argparse.Namespace) -> int:
    rows = cell_rows(args.bench, args.processes, args.default_stats)
    print_rows(rows)
    print_summary(rows)
    return 0
