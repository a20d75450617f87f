"""The hardware file's roofs against independent references measured now on the same threads.

(a) Peaks: each dtype's `compute.dtypes.<dtype>.best_flops_per_s` ÷ the best GEMM rate any of
torch, jax, tensorflow or numpy (float32 only) reaches at any square size from 256 to --max-n.
The references run in the project's worker processes, one process per framework and size, so
every size is visited (the project's sweep stops early). Goal ≥ 0.95.
(b) Triad: the file's working-set sweep DRAM triad and its STREAM triad, each ÷ the C + OpenMP
triad (self_measurement/stream_reference) on 3 arrays of 4 × the last-level cache. With
--fresh-triad the sweep's DRAM triad is measured now (8 × the LLC), alternating with the
reference for --rounds rounds (DRAM bandwidth drifts on this VM). Goal ≥ 0.9.

Everything measured holds the host's timing lock. Exits 0 when every ratio meets its goal, 1
when one does not, 2 when the hardware file is not given or missing.

    .venv/bin/python self_measurement/roofline_ratios.py --hardware results/hardware/<system>.json
    .venv/bin/python self_measurement/roofline_ratios.py --hardware /tmp/hw.json --max-n 1024 \\
        --trials 2 --fresh-triad --rounds 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

from stream_ratio import build_reference, c_triad  # the sibling script (its folder is on sys.path)

from fwbench.hardware import workers
from fwbench.host import identity
from fwbench.host.harness import timing_lock
from fwbench.host.threads import affinity_cores, setup_threads
from fwbench.io.hardware_file import lookup, read_hardware
from fwbench.memory import levels, stream

FRAMEWORKS = ("torch", "jax", "tensorflow", "numpy")
DTYPES = ("float32", "bfloat16")
NUMPY_DTYPES = ("float32",)
ELEMENT_BYTES = 8  # float64, as STREAM and the C reference use
SWEEP_LLC_MULTIPLE = 8  # the fresh sweep point: well inside DRAM (levels.DRAM_FROM is 4)


class HardwareFileMissing(Exception):
    pass


def load_hardware(path: str | None) -> dict[str, Any]:
    if not path:
        raise HardwareFileMissing(
            "no hardware file given (--hardware results/hardware/<system>.json)"
        )
    if not Path(path).is_file():
        raise HardwareFileMissing(f"hardware file {path} does not exist")
    return read_hardware(path)


def default_threads(hardware: dict[str, Any]) -> int:
    """The threads the file was measured with, else this process's affinity cores."""
    return lookup(hardware, "provenance", "threads", "threads") or affinity_cores()


# --- (a) peaks ---------------------------------------------------------------------------


def gemm_records(framework: str, n: int, result: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per dtype from a single-size worker result."""
    records = []
    for dtype, entry in result.items():
        record = {"dtype": dtype, "framework": framework, "n": n}
        if "error" in entry:
            records.append(record | {"error": entry["error"]})
        else:
            records.append(record | {"flops_per_s": entry["flops_per_s"]})
    return records


def measure_gemm(framework: str, n: int, trials: int, threads: int) -> list[dict[str, Any]]:
    dtypes = list(NUMPY_DTYPES if framework == "numpy" else DTYPES)
    args = {"min_n": n, "max_n": n, "trials": trials, "dtypes": dtypes, "tolerance": 0.0}
    try:
        worker = workers.run_worker(framework, "gemm", args, threads, "cpu", sys.stderr)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return [{"dtype": d, "framework": framework, "n": n, "error": str(error)} for d in dtypes]
    return gemm_records(framework, n, worker["result"])


def best_per_framework(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per dtype, per framework, its fastest size; frameworks with only errors are left out."""
    best: dict[str, dict[str, dict[str, Any]]] = {}
    for record in records:
        if "flops_per_s" not in record:
            continue
        per_dtype = best.setdefault(record["dtype"], {})
        held = per_dtype.get(record["framework"])
        if held is None or record["flops_per_s"] > held["flops_per_s"]:
            per_dtype[record["framework"]] = record
    return best


def overall_best(per_framework: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    return max(per_framework.values(), key=lambda r: r["flops_per_s"], default=None)


def ratio_verdict(
    reported: float | None, reference: float | None, goal: float
) -> tuple[float | None, str, bool]:
    """(ratio or None, verdict, passed). Neither side having a figure is no failure (a dtype
    this host cannot run); one side alone is."""
    if reported is None and reference is None:
        return None, "neither measured", True
    if reference is None:
        return None, "no reference", False
    if reported is None:
        return None, "not in the hardware file", False
    ratio = reported / reference
    return ratio, ("ok" if ratio >= goal else "below goal"), ratio >= goal


def peak_report(hardware: dict[str, Any], records: list[dict[str, Any]], goal: float) -> bool:
    best = best_per_framework(records)
    passed = True
    print(f"{'dtype':9} {'framework':11} {'n':>5} {'GFLOP/s':>9}")
    for dtype in DTYPES:
        for framework, record in sorted(best.get(dtype, {}).items()):
            print(f"{dtype:9} {framework:11} {record['n']:5d} {record['flops_per_s'] / 1e9:9.1f}")
        for record in records:
            if record["dtype"] == dtype and "error" in record:
                print(
                    f"{dtype:9} {record['framework']:11} {record['n']:5d}  error: {record['error']}"
                )
    print()
    for dtype in DTYPES:
        top = overall_best(best.get(dtype, {}))
        reported = lookup(hardware, "compute", "dtypes", dtype, "best_flops_per_s")
        ratio, verdict, ok = ratio_verdict(reported, top and top["flops_per_s"], goal)
        passed &= ok
        where = f"{top['framework']} n={top['n']} {top['flops_per_s'] / 1e9:.1f}" if top else "none"
        file_at = lookup(hardware, "compute", "dtypes", dtype, "best_framework")
        file_n = lookup(hardware, "compute", "dtypes", dtype, "best_n")
        shown = f"{reported / 1e9:.1f} ({file_at} n={file_n})" if reported else "none"
        ratio_text = f"{ratio:.3f}" if ratio is not None else "n/a"
        print(
            f"{dtype:9} best {where} GFLOP/s; reported {shown}; ratio {ratio_text}"
            f" (goal ≥ {goal}) {verdict}"
        )
    return passed


# --- (b) triad ---------------------------------------------------------------------------


def triad_point(curve: list[dict[str, Any]]) -> float:
    return max(p["bandwidth_Bps"] for p in curve if p["kernel"] == "triad")


def fresh_sweep_triad(sweep_bytes: int, threads: int) -> float:
    args = {"sizes": [sweep_bytes], "min_seconds": 0.01, "trials": 5}
    worker = workers.run_worker("native", "cache_sweep", args, threads, "cpu", sys.stderr)
    return triad_point(worker["result"]["curve"])


def measure_triads(
    args: argparse.Namespace, binary: Path, llc: int, threads: int
) -> dict[str, float]:
    """Alternate the C reference and (with --fresh-triad) the sweep point; each one's best."""
    elements = stream.array_elements(llc, args.llc_multiple, ELEMENT_BYTES)
    best = {"reference": 0.0, "sweep": 0.0}
    for _ in range(args.rounds):
        reference = c_triad(binary, elements, args.triad_trials, threads)
        best["reference"] = max(best["reference"], reference["triad_bandwidth_Bps"])
        if args.fresh_triad:
            best["sweep"] = max(best["sweep"], fresh_sweep_triad(SWEEP_LLC_MULTIPLE * llc, threads))
    return best


def file_triads(hardware: dict[str, Any]) -> dict[str, float | None]:
    sweep = lookup(hardware, "memory", "levels", levels.DRAM, "kernels", "triad", "bandwidth_Bps")
    stream_triad = lookup(hardware, "bandwidth", "kernels", "triad", "best_bandwidth_Bps")
    return {"sweep": sweep, "stream": stream_triad}


def triad_report(project: dict[str, float | None], reference: float, goal: float) -> bool:
    print(f"C OpenMP triad (reference): {reference / 1e9:8.2f} GB/s")
    passed = True
    for name, value in project.items():
        ratio, verdict, ok = ratio_verdict(value, reference, goal)
        passed &= ok
        shown = f"{value / 1e9:8.2f} GB/s" if value else "    none"
        ratio_text = f"{ratio:.3f}" if ratio is not None else "n/a"
        print(f"{name:26}: {shown}; ratio {ratio_text} (goal ≥ {goal}) {verdict}")
    return passed


# --- main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hardware", help="results/hardware/<system>.json")
    parser.add_argument("--threads", type=int, help="default: the file's threads")
    parser.add_argument("--max-n", type=int, default=8192)
    parser.add_argument("--trials", type=int, default=3, help="GEMM trials per size")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--llc-multiple", type=float, default=4.0)
    parser.add_argument("--triad-trials", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fresh-triad", action="store_true")
    parser.add_argument("--min-peak-ratio", type=float, default=0.95)
    parser.add_argument("--min-triad-ratio", type=float, default=0.9)
    parser.add_argument("--lock", default="/tmp/fwbench-timing.lock")
    return parser.parse_args(argv)


def print_conditions(
    args: argparse.Namespace,
    hardware: dict[str, Any],
    threads: int,
    sizes: list[int],
    cpu: dict[str, Any],
) -> None:
    llc = cpu["caches"]["llc_total_bytes"]
    print(
        f"hardware file: {args.hardware} (measured {lookup(hardware, 'provenance', 'start_utc')})"
    )
    print(f"CPU: {cpu['model']}; LLC {llc / 2**20:.0f} MiB; threads: {threads}")
    print(f"GEMM: sizes {sizes}, trials {args.trials}, frameworks {' '.join(args.frameworks)}")
    elements = stream.array_elements(llc, args.llc_multiple, ELEMENT_BYTES)
    print(
        f"triad reference: 3 × {elements} float64 ({elements * ELEMENT_BYTES / 1e9:.2f} GB each),"
        f" trials {args.triad_trials}, rounds {args.rounds}"
    )
    sweep = f"measured now at {SWEEP_LLC_MULTIPLE} × LLC" if args.fresh_triad else "from the file"
    print(f"sweep DRAM triad: {sweep}\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        hardware = load_hardware(args.hardware)
    except HardwareFileMissing as error:
        print(f"roofline_ratios: {error}", file=sys.stderr)
        return 2
    cpu = identity.cpu_identity()
    if not cpu["caches"]["llc_total_bytes"]:
        print("roofline_ratios: the last-level cache size is unknown", file=sys.stderr)
        return 2
    threads = args.threads or default_threads(hardware)
    sizes = workers.gemm_sizes(256, args.max_n)
    print_conditions(args, hardware, threads, sizes, cpu)
    binary = build_reference()
    setup_threads(threads)
    with timing_lock(args.lock):
        records = [
            record
            for framework in args.frameworks
            for n in sizes
            for record in measure_gemm(framework, n, args.trials, threads)
        ]
        triads = measure_triads(args, binary, cpu["caches"]["llc_total_bytes"], threads)
    peaks_ok = peak_report(hardware, records, args.min_peak_ratio)
    print()
    project = file_triads(hardware)
    if args.fresh_triad:
        project["sweep"] = triads["sweep"]
    names = {"sweep": f"sweep DRAM triad ({'now' if args.fresh_triad else 'file'})"}
    names["stream"] = "STREAM triad (file)"
    labelled = {names[key]: value for key, value in project.items()}
    triad_ok = triad_report(labelled, triads["reference"], args.min_triad_ratio)
    return 0 if peaks_ok and triad_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
