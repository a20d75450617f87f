"""Calibrate the contention detector: the same cells measured on a quiet machine and beside a
CPU hog, and what each signal read.

Each trial runs one real cell (fwbench.measure.bench.run_cell, the code a `bench` job runs) in
a fresh process. Disturbed trials start a busy-looping process first (unpinned: the scheduler
puts it wherever it likes, as any other job's process would be). The script prints, per signal
(PSI CPU pressure, others' CPU before and during the loop), the largest quiet and smallest
disturbed reading, and the share of quiet and disturbed cells the configured thresholds flag.

    .venv/bin/python self_measurement/contention_calibration.py [--trials 6] [--threads 2]

Run it with nothing else on the machine: the quiet trials are the point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from configured import request_for

REPO = Path(__file__).resolve().parents[1]
CELLS = [
    ("torch", "eager", "mlp", 32),
    ("jax", "jit", "lstm", 8),
    ("tensorflow", "function", "mlp", 8),
]
SIGNALS = ("cpu_pressure", "other_cores_probe", "other_cores_during", "busy_cpu_other")
HOG = "import time\nend = time.time() + 600\nwhile time.time() < end: pass\n"
CELL_SCRIPT = """
import json, sys
from fwbench.io.cell_file import read_cell
from fwbench.measure.bench import run_cell
from fwbench.plan.request import CellRequest
output = sys.argv[3]
run_cell(CellRequest.from_json(sys.argv[1], lock=sys.argv[2]), output)
ds = read_cell(output)
names = {names!r}
print(json.dumps({{n: float(ds[n]) for n in names}} | {{"contended": int(ds.attrs["contended"])}}))
"""


def run_trial(cell: tuple, threads: int, hog: bool, scratch: Path, index: int) -> dict:
    request = request_for(*cell, {"threads": threads, "bench": {"retries": 0}})
    hog_process = subprocess.Popen([sys.executable, "-c", HOG]) if hog else None
    try:
        code = CELL_SCRIPT.format(names=SIGNALS)
        output = scratch / f"cell{index}.nc"
        result = subprocess.run(
            [sys.executable, "-c", code, request.to_json(), str(scratch / "lock"), str(output)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        if hog_process:
            hog_process.kill()
            hog_process.wait()
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=6, help="per cell and condition")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rows = {"quiet": [], "hog": []}
    with tempfile.TemporaryDirectory(prefix="fwbench-calibration-") as tmp:
        index = 0
        for _ in range(args.trials):
            for cell in CELLS:
                for condition in ("quiet", "hog"):  # alternated: drift hits both alike
                    index += 1
                    row = run_trial(cell, args.threads, condition == "hog", Path(tmp), index)
                    rows[condition].append(row)
                    print(condition, "/".join(map(str, cell)), json.dumps(row), flush=True)
    print(f"\n{len(rows['quiet'])} quiet and {len(rows['hog'])} disturbed cells")
    for name in SIGNALS:
        quiet = np.array([r[name] for r in rows["quiet"]])
        hog = np.array([r[name] for r in rows["hog"]])
        print(
            f"{name:20s} quiet median {np.nanmedian(quiet):6.3f} max {np.nanmax(quiet):6.3f} | "
            f"disturbed median {np.nanmedian(hog):6.3f} min {np.nanmin(hog):6.3f}"
        )
    for condition, found in rows.items():
        share = np.mean([r["contended"] for r in found])
        print(f"flagged by the configured thresholds, {condition}: {share:.0%}")


if __name__ == "__main__":
    main()
