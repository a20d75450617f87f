"""Calibrate the speed canary: real cells on a quiet machine, beside a CPU hog on the measured
core and beside a memory-bandwidth hog on the other core, and what the canary read.

The canary's baseline is measured first, as the hardware stage measures it (the same worker
task, the hardware file's memory capacities). Each trial then runs one real cell
(fwbench.measure.bench.run_cell, the code a `bench` job runs, retries 0) in a fresh process;
conditions alternate within each round, so drift hits all alike. Per trial it prints the
canary's median factor (the chain's; the read's beside it, deciding nothing), its CV, the share
of samples it marked slow, the cell's CV and median, and the flags; then, per condition, the
spread of those readings, the thresholds they suggest (bench.slow_sample_factor,
slow_machine_factor, slow_sample_share) and how often the configured thresholds flag each
condition.

    .venv/bin/python self_measurement/canary_calibration.py [--hardware results/hardware/local.json]
        [--trials 3]

Run it with nothing else on the machine: the quiet trials are the point. The quiet drift of a
whole sweep (baseline at its start, cells up to 40 minutes later) is what an idle default
sweep's slow_machine count measures; this script measures the hogs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from configured import request_for, validated_config

from fwbench.hardware.workers import run_worker
from fwbench.host.threads import physical_core_order
from fwbench.io.hardware_file import read_hardware, write_hardware
from fwbench.memory.levels import DRAM

REPO = Path(__file__).resolve().parents[1]
CELLS = [  # an L2-, an L3- and a DRAM-level working set, three frameworks
    ("jax", "jit", "lstm", 8),
    ("torch", "eager", "mlp", 32),
    ("tensorflow", "function", "cnn", 128),
]
CONDITIONS = ("quiet", "cpu_hog", "bandwidth_hog")
CPU_HOG = "while True: pass\n"
# Streams a 256 MiB array (8 × a 32 MiB L3) through memory, forever.
BANDWIDTH_HOG = (
    "import numpy as np\na = np.ones(1 << 25)\nb = np.empty_like(a)\nwhile True: np.copyto(b, a)\n"
)
CELL_SCRIPT = """
import json, sys
import numpy as np
from fwbench.io.cell_file import read_cell
from fwbench.measure.bench import run_cell
from fwbench.plan.request import CellRequest
request = CellRequest.from_json(sys.argv[1], lock=sys.argv[2], hardware=sys.argv[3])
run_cell(request, sys.argv[4])
ds = read_cell(sys.argv[4])
latency = ds["latency_s"].values
scalars = (
    "canary_factor", "canary_read_factor", "canary_cv_pct", "canary_share", "on_cpu_median"
)
row = {name: float(ds[name]) for name in scalars}
row |= {
    "slow_share": float(ds["slow_samples"]) / len(latency),
    "cv_pct": float(100 * latency.std(ddof=1) / latency.mean()),
    "median_s": float(np.median(latency)),
    "slow_machine": int(ds.attrs["slow_machine"]),
    "contended": int(ds.attrs["contended"]),
    "factors": ds["speed_factor"].values.tolist(),
    "on_cpu": ds["on_cpu"].values.tolist(),
    "canary": ds.attrs["canary"],
}
print(json.dumps(row))
"""


def baseline_file(hardware: Path, scratch: Path) -> Path:
    """A hardware file holding a canary baseline measured now, on the file's capacities."""
    capacities = dict(read_hardware(hardware)["memory"]["capacities_bytes"]) | {DRAM: None}
    canary = run_worker("native", "canary", {"capacities": capacities}, 1, "cpu")["result"]
    path = scratch / "hardware.json"
    write_hardware({"canary": canary}, path)
    return path


def requests() -> dict[tuple, str]:
    """Each calibration cell's request as a bench job gets it from the default config."""
    return {cell: request_for(*cell, {"bench": {"retries": 0}}).to_json() for cell in CELLS}


def hog(condition: str) -> subprocess.Popen | None:
    """The disturbance, pinned: a CPU hog on the core a one-thread cell pins itself to (the
    first in physical order), a bandwidth hog on the next."""
    if condition == "quiet":
        return None
    cores = physical_core_order(os.sched_getaffinity(0))
    code, core = (CPU_HOG, cores[0]) if condition == "cpu_hog" else (BANDWIDTH_HOG, cores[1])
    process = subprocess.Popen([sys.executable, "-c", code])
    os.sched_setaffinity(process.pid, {core})
    return process


def run_trial(request: str, condition: str, scratch: Path, hardware: Path, index: int) -> dict:
    running = hog(condition)
    try:
        output = scratch / f"cell{index}.nc"
        command = [sys.executable, "-c", CELL_SCRIPT, request, str(scratch / "lock")]
        result = subprocess.run(
            [*command, str(hardware), str(output)], capture_output=True, text=True, check=True
        )
    finally:
        if running:
            running.kill()
            running.wait()
    return json.loads(result.stdout.strip().splitlines()[-1])


def _schema_defaults() -> dict:
    config = validated_config()
    names = ("slow_sample_factor", "slow_machine_factor", "slow_sample_share", "slow_on_cpu")
    return {name: config["bench"][name] for name in names}


def _span(rows: list[dict], name: str) -> str:
    values = [r[name] for r in rows]
    return f"{min(values):.3f}-{max(values):.3f}"


def summarize(rows: dict[str, list[dict]], cells: int) -> None:
    print()
    quiet_median = {i: r["median_s"] for i, r in enumerate(rows["quiet"])}
    for condition, found in rows.items():
        factors = np.concatenate([r["factors"] for r in found])
        slowdown = [r["median_s"] / quiet_median[i] for i, r in enumerate(found)]
        print(
            f"{condition:14s} cell median / quiet {min(slowdown):.2f}-{max(slowdown):.2f} | "
            f"sample factor p50 {np.median(factors):.3f} p99 {np.percentile(factors, 99):.3f} "
            f"max {factors.max():.2f} | process median factor {_span(found, 'canary_factor')} "
            f"(read, deciding nothing: {_span(found, 'canary_read_factor')}) | "
            f"on-CPU median {_span(found, 'on_cpu_median')} | "
            f"slow share {_span(found, 'slow_share')} | canary CV {_span(found, 'canary_cv_pct')}"
            f"% | cell CV {_span(found, 'cv_pct')}% | flagged slow_machine "
            f"{np.mean([r['slow_machine'] for r in found]):.0%}, contended "
            f"{np.mean([r['contended'] for r in found]):.0%} | canary cost at most "
            f"{100 * max(r['canary_share'] for r in found):.2f}% of the timed loop"
        )
    quiet, hog = rows["quiet"], rows["cpu_hog"]
    factors = np.concatenate([r["factors"] for r in quiet])
    on_cpu = np.concatenate([r["on_cpu"] for r in quiet])
    print(
        f"quiet on-CPU share per sample: p01 {np.percentile(on_cpu, 1):.3f}, min {on_cpu.min():.3f}"
    )
    print(
        f"\nsuggested: slow_sample_factor above the quiet p99.5 "
        f"({np.percentile(factors, 99.5):.3f}); slow_machine_factor above the quiet maximum "
        f"process median ({max(r['canary_factor'] for r in quiet):.3f}) and an idle sweep's "
        f"drift; slow_sample_share between the quiet maximum "
        f"({max(r['slow_share'] for r in quiet):.2f}) and the CPU hog's minimum "
        f"({min(r['slow_share'] for r in hog):.2f})"
    )
    print(f"configured: {json.dumps(_schema_defaults())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hardware", default=str(REPO / "results/hardware/local.json"))
    parser.add_argument("--trials", type=int, default=3, help="rounds of every cell and condition")
    args = parser.parse_args()
    rows: dict[str, list[dict]] = {condition: [] for condition in CONDITIONS}
    with tempfile.TemporaryDirectory(prefix="fwbench-canary-") as tmp:
        scratch = Path(tmp)
        hardware = baseline_file(Path(args.hardware), scratch)
        cells, index = requests(), 0
        for _ in range(args.trials):
            for cell, request in cells.items():
                for condition in CONDITIONS:
                    index += 1
                    row = run_trial(request, condition, scratch, hardware, index)
                    rows[condition].append(row)
                    shown = {k: v for k, v in row.items() if k not in ("factors", "canary")}
                    print(condition, "/".join(map(str, cell)), json.dumps(shown), flush=True)
        print("canary levels:", sorted({r["canary"].split(":")[0] for r in rows["quiet"]}))
    summarize(rows, len(CELLS))


if __name__ == "__main__":
    main()
