"""On what time scale does this machine's speed drift? The speed canary, probed back to back.

    .venv/bin/python self_measurement/drift_timescale.py results/hardware/local.json
        [--seconds 120] [--conditions quiet bandwidth_hog] [--level L3]

Pinned to the first core (where a one-thread cell runs), the canary of one memory level (the
hardware file's fixed work: a dependent add chain, the core's speed, and a read of the level's
buffer, the level's speed; about 400 µs a probe) runs for `--seconds` per condition (quiet; a
memory-bandwidth hog on the other core; a CPU hog on this core, as
canary_calibration.py makes them). Per time scale τ from one probe to a minute it prints, for
the chain's and the read's log factor (over its quiet median):

- sd: the standard deviation of the means over consecutive windows of τ (in %);
- white: what sd would be if probes were independent (the one-probe sd / √probes per window):
  sd far above white means the machine's state persists over τ;
- lag1: the correlation of each window's mean with the next one's: how much two samples τ
  apart share. A measurement design that alternates variants every τ cancels the drift that
  persists beyond τ (lag1 near 1) and none of what changes faster (lag1 near 0).

Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
from canary_calibration import hog

from fwbench.host.threads import physical_core_order
from fwbench.io.hardware_file import read_hardware
from fwbench.memory.canary import Canary, works_from_baseline

SCALES_S = (0.0, 0.01, 0.1, 1.0, 5.0, 20.0, 60.0)  # 0: one probe


def record(canary: Canary, seconds: float) -> np.ndarray:
    """(time since start, chain s, read s) per probe, back to back for `seconds`."""
    rows, start = [], time.perf_counter()
    while (now := time.perf_counter() - start) < seconds:
        rows.append((now, *canary.probe()))
    return np.array(rows)


def window_means(t: np.ndarray, values: np.ndarray, scale: float) -> np.ndarray:
    if scale == 0:
        return values
    index = np.floor(t / scale).astype(int)
    counts = np.bincount(index)
    sums = np.bincount(index, weights=values)
    full = counts > 0
    return (sums[full] / counts[full])[:-1]  # the last window is cut short


def timescale_rows(probes: np.ndarray) -> list[dict[str, float]]:
    t = probes[:, 0]
    rows = []
    for scale in SCALES_S:
        row = {"scale_s": scale}
        for column, name in ((1, "chain"), (2, "read")):
            factor = np.log(probes[:, column] / np.median(probes[:, column]))
            means = window_means(t, factor, scale)
            per_window = max(1.0, scale / float(np.median(np.diff(t)))) if scale else 1.0
            row[f"{name}_sd"] = float(np.std(means, ddof=1)) if len(means) > 2 else math.nan
            row[f"{name}_white"] = float(np.std(factor, ddof=1) / math.sqrt(per_window))
            row[f"{name}_lag1"] = (
                float(np.corrcoef(means[:-1], means[1:])[0, 1]) if len(means) > 3 else math.nan
            )
            row["windows"] = len(means)
        rows.append(row)
    return rows


def _pct(value: float) -> str:
    return f"{100 * math.expm1(value):6.2f}%" if math.isfinite(value) else "     —"


def print_rows(condition: str, probes: np.ndarray, rows: list[dict[str, float]]) -> None:
    print(f"\n{condition}: {len(probes)} probes in {probes[-1, 0]:.0f} s")
    print("   τ (s) windows | chain sd  white  lag1 | read sd   white  lag1")
    for r in rows:
        parts = [
            f"{_pct(r[f'{name}_sd'])} {_pct(r[f'{name}_white'])} {r[f'{name}_lag1']:5.2f}"
            for name in ("chain", "read")
        ]
        print(f"{r['scale_s']:8.2f} {r['windows']:7d} | {parts[0]} | {parts[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hardware", help="a hardware file with its canary section")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--conditions", nargs="+", default=["quiet", "bandwidth_hog"])
    parser.add_argument("--level", default="L3", help="the memory level whose canary runs")
    args = parser.parse_args()
    works = {w.level: w for w in works_from_baseline(read_hardware(args.hardware)["canary"])}
    if args.level not in works:
        raise SystemExit(f"no canary for level {args.level!r} (levels: {', '.join(works)})")
    every_core = os.sched_getaffinity(0)
    first = {physical_core_order(every_core)[0]}
    os.sched_setaffinity(0, first)
    canary = Canary(works[args.level])
    for condition in args.conditions:
        os.sched_setaffinity(0, every_core)  # the hog picks its core among them
        running = hog(condition)
        os.sched_setaffinity(0, first)
        try:
            probes = record(canary, args.seconds)
        finally:
            if running:
                running.kill()
                running.wait()
        print_rows(condition, probes, timescale_rows(probes))


if __name__ == "__main__":
    main()
