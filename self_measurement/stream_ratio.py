"""The project's STREAM triad against a C + OpenMP triad on the same threads and array sizes.

Builds self_measurement/stream_reference (make), holds the host's timing lock, pins this process
(and so both children) to the same cores, then alternates the two for `--rounds` rounds and
keeps each one's best triad. Prints both bandwidths and their ratio; exits 1 when the ratio is
below --min-ratio (the project's goal is 0.9).

    .venv/bin/python self_measurement/stream_ratio.py --threads 2    # arrays from the LLC rule
    .venv/bin/python self_measurement/stream_ratio.py --threads 2 --array-bytes 5e8
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from fwbench.hardware import characterize, workers
from fwbench.host import identity
from fwbench.host.harness import timing_lock
from fwbench.host.threads import affinity_cores, setup_threads
from fwbench.memory import stream

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "stream_reference"
BINARY = HERE / "bin" / "stream_triad"


def build_reference() -> Path:
    subprocess.run(["make", "-s", "-C", str(REFERENCE)], check=True)
    return BINARY


def c_triad(binary: Path, elements: int, trials: int, threads: int) -> dict:
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    out = subprocess.run(
        [str(binary), str(elements), str(trials)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def project_triad(runner: str, elements: int, trials: int, threads: int) -> dict:
    args = {"elements": elements, "trials": trials, "dtype": characterize.STREAM_DTYPE}
    worker = workers.run_worker(runner, "stream", args, threads, "cpu", sys.stderr)
    return worker["result"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=affinity_cores())
    parser.add_argument("--llc-multiple", type=float, default=4.0)
    parser.add_argument(
        "--array-bytes", type=float, help="bytes per array (overrides the LLC rule)"
    )
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runner", choices=["torch", "numpy"], default="torch")
    parser.add_argument("--min-ratio", type=float, default=0.9)
    parser.add_argument("--lock", default="/tmp/fwbench-timing.lock")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    element_bytes = 8
    if args.array_bytes:
        elements = int(args.array_bytes // element_bytes)
    else:
        llc = identity.cpu_identity()["caches"]["llc_total_bytes"]
        elements = stream.array_elements(llc, args.llc_multiple, element_bytes)
    binary = build_reference()
    setup_threads(args.threads)
    best_c = best_project = 0.0
    with timing_lock(args.lock):
        for _ in range(args.rounds):
            reference = c_triad(binary, elements, args.trials, args.threads)
            best_c = max(best_c, reference["triad_bandwidth_Bps"])
            measured = project_triad(args.runner, elements, args.trials, args.threads)
            best_project = max(best_project, measured["kernels"]["triad"]["best_bandwidth_Bps"])
    ratio = best_project / best_c
    print(f"arrays: 3 × {elements} float64 ({elements * element_bytes / 1e9:.2f} GB each)")
    print(f"threads: {args.threads}, trials: {args.trials}, rounds: {args.rounds}")
    print(f"C OpenMP triad:        {best_c / 1e9:8.2f} GB/s")
    print(f"fwbench triad ({args.runner}): {best_project / 1e9:8.2f} GB/s")
    print(f"ratio: {ratio:.3f} (goal ≥ {args.min_ratio})")
    return 0 if ratio >= args.min_ratio else 1


if __name__ == "__main__":
    raise SystemExit(main())
