"""The hardware stage: what the machine is, what it can do in theory, and what it does.

`characterize` writes the hardware file (fwbench.io.hardware_file; units in key names): the
identity of the CPU (and GPU), STREAM bandwidth, the working-set bandwidth sweep with one
plateau per memory level, GEMM peaks per dtype per framework swept over sizes, the clock under
load, theoretical peaks (from the vector ISA at that clock, or from the known-device table the
caller names, every figure with its source) and ridge points. Framework-free: every
measurement runs in its own worker process (fwbench.hardware.workers).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from fwbench.hardware import stream
from fwbench.hardware.hierarchy import log_line, measure_memory, stream_check
from fwbench.hardware.identity import cpu_identity, dtype_support, nvidia_smi_identity
from fwbench.hardware.theory import (
    DTYPES,
    compare_to_theory,
    load_known_devices,
    ridges,
    theoretical_peaks,
)
from fwbench.hardware.workers import run_worker
from fwbench.io.hardware_file import write_hardware
from fwbench.measure import provenance
from fwbench.measure.harness import timing_lock
from fwbench.measure.threads import setup_threads

SETTINGS_KEYS = (
    "stream_llc_multiple",
    "stream_trials",
    "sweep_min_bytes",
    "sweep_llc_multiple",
    "sweep_points_per_octave",
    "sweep_point_s",
    "sweep_trials",
    "gemm_min_n",
    "gemm_max_n",
    "gemm_tolerance",
    "gemm_trials",
    "dtypes",
)

STREAM_DTYPE = "float64"  # STREAM's own element type


def check_settings(settings: dict[str, Any], frameworks: list[str], device: str) -> None:
    missing = [key for key in SETTINGS_KEYS if key not in settings]
    if missing:
        raise ValueError(f"hardware settings lack {', '.join(missing)}")
    unknown = [dtype for dtype in settings["dtypes"] if dtype not in DTYPES]
    if unknown:
        raise ValueError(f"hardware dtypes {unknown} unknown; known: {', '.join(DTYPES)}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if not frameworks:
        raise ValueError("frameworks is empty: no GEMM peak could be measured")


def _measure_stream(
    frameworks: list[str], device: str, threads: int, elements: int, trials: int, log: Any
) -> dict[str, Any]:
    args = {"elements": elements, "trials": trials, "dtype": STREAM_DTYPE}
    if "torch" in frameworks:
        worker = run_worker("torch", "stream", args, threads, device, log)
        return worker["result"] | {"runner": "torch", "versions": worker["setup"]}
    if device == "cuda":
        raise ValueError("STREAM on cuda needs torch: numpy would measure the host's memory")
    worker = run_worker("numpy", "stream", args, threads, device, log)
    return worker["result"] | {"runner": "numpy", "versions": worker["setup"]}


def _measure_gemms(
    frameworks: list[str],
    settings: dict[str, Any],
    supported: dict[str, str | None],
    device: str,
    threads: int,
    log: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every framework's GEMM size sweep per measurable dtype (numpy: fp32 on the host CPU),
    and per dtype the best rate of any framework at any size."""
    measurable = [dtype for dtype in settings["dtypes"] if supported[dtype] is None]
    sweep = {key: settings[f"gemm_{key}"] for key in ("min_n", "max_n", "trials", "tolerance")}
    per_framework: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}
    for framework in [*frameworks, "numpy"]:
        dtypes = measurable if framework != "numpy" else []
        if framework == "numpy" and device == "cpu" and "float32" in measurable:
            dtypes = ["float32"]  # numpy's BLAS: fp32 only, and only the host CPU
        if not dtypes:
            continue
        log_line(log, f"GEMM sweep {framework} {dtypes} n={sweep['min_n']}..{sweep['max_n']}")
        args = sweep | {"dtypes": dtypes}
        try:
            worker = run_worker(framework, "gemm", args, threads, device, log)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            per_framework[framework] = {dtype: {"error": str(error)} for dtype in dtypes}
            continue
        versions[framework] = worker["setup"]
        per_framework[framework] = worker["result"]

    compute: dict[str, Any] = {"gemm_sweep": sweep, "dtypes": {}}
    for dtype in settings["dtypes"]:
        entry: dict[str, Any] = {"skipped_reason": supported[dtype], "per_framework": {}}
        for framework, results in per_framework.items():
            if dtype in results:
                entry["per_framework"][framework] = results[dtype]
        ok = {fw: r for fw, r in entry["per_framework"].items() if "flops_per_s" in r}
        best = max(ok, key=lambda fw: ok[fw]["flops_per_s"], default=None)
        entry["best_framework"] = best
        entry["best_flops_per_s"] = ok[best]["flops_per_s"] if best else None
        entry["best_n"] = ok[best]["best_n"] if best else None
        compute["dtypes"][dtype] = entry
    return compute, versions


def _measure_clock(device: str, threads: int, log: Any) -> dict[str, Any] | None:
    if device != "cpu":
        return None
    try:
        return run_worker("native", "clock", {}, threads, device, log)["result"]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return {"clock_hz": None, "problem": str(error)}


def _identify(
    device: str, frameworks: list[str], threads: int, log: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    cpu = cpu_identity()
    if device == "cpu":
        return cpu, None
    gpu = nvidia_smi_identity() or {}
    if "torch" in frameworks:
        gpu |= run_worker("torch", "cuda_identity", {}, threads, device, log)["result"]
    if not gpu:
        raise RuntimeError("device 'cuda' but neither nvidia-smi nor torch sees a GPU")
    return cpu, gpu


def _stream_elements(
    cpu: dict[str, Any], gpu: dict[str, Any] | None, llc_multiple: float
) -> tuple[int, int]:
    """Elements per array from the device's last-level cache; and that cache's size."""
    llc = gpu.get("l2_cache_bytes") if gpu else cpu["caches"]["llc_total_bytes"]
    if not llc:
        raise RuntimeError("cannot size STREAM arrays: the last-level cache size is unknown")
    element_bytes = np.dtype(STREAM_DTYPE).itemsize
    elements = stream.array_elements(llc, llc_multiple, element_bytes)
    memory = gpu["memory_total_bytes"] if gpu else psutil.virtual_memory().available
    stream.check_fits_in_memory(elements, element_bytes, memory)
    return elements, llc


def _sizing(llc: int, llc_multiple: float) -> dict[str, Any]:
    sizing: dict[str, Any] = {"llc_bytes": llc, "llc_multiple": llc_multiple}
    if llc_multiple < 4:
        sizing["note"] = (
            f"arrays are {llc_multiple} × the last-level cache, below STREAM's rule of 4 ×: "
            "the rates include cache bandwidth and overstate memory bandwidth"
        )
    return sizing


def characterize(
    output: str | os.PathLike,
    settings: dict[str, Any],
    frameworks: list[str],
    device: str,
    threads: int | str,
    lock: str | os.PathLike,
    known_devices_path: str | os.PathLike,
    log: Any = None,
    system: str = "",
) -> dict[str, Any]:
    """Measure this host (or its GPU) under the timing lock, write the JSON atomically to
    `output`, and return it. `log` is an open text file for progress and workers' stderr;
    `known_devices_path` the vendor-figure table (resources/peaks.yaml in the workflow);
    `system` the config's name of the kind of node measured (its cells are matched against
    the `node` recorded here)."""
    check_settings(settings, frameworks, device)
    known_devices = load_known_devices(known_devices_path)
    thread_settings = setup_threads(threads)
    threads = thread_settings["threads"]
    with timing_lock(lock) as lock_wait_s:
        start_ns, load_before = time.time_ns(), os.getloadavg()[0]
        log_line(log, f"lock acquired after {lock_wait_s:.1f} s; threads={threads} device={device}")
        cpu, gpu = _identify(device, frameworks, threads, log)
        if device == "cuda" and "torch" not in frameworks:
            bandwidth = {"runner": None, "error": "STREAM on cuda needs torch among the frameworks"}
        else:
            elements, llc = _stream_elements(cpu, gpu, settings["stream_llc_multiple"])
            log_line(log, f"STREAM: 3 arrays × {elements} {STREAM_DTYPE} elements")
            bandwidth = _measure_stream(
                frameworks, device, threads, elements, settings["stream_trials"], log
            )
            bandwidth |= _sizing(llc, settings["stream_llc_multiple"])
        memory = measure_memory(cpu, gpu, settings, frameworks, device, thread_settings, log)
        clock = _measure_clock(device, threads, log)
        supported = dtype_support(device, cpu, gpu)
        compute, worker_setups = _measure_gemms(
            frameworks, settings, supported, device, threads, log
        )
        end_ns, load_after = time.time_ns(), os.getloadavg()[0]
    theory = theoretical_peaks(device, cpu, gpu, threads, known_devices, clock)
    compare_to_theory(compute, theory)
    triad_Bps = bandwidth.get("kernels", {}).get("triad", {}).get("best_bandwidth_Bps")
    stream_check(memory, triad_Bps)
    result = {
        "host": provenance.host(),
        "system": system,
        "node": provenance.node_identity(device),
        "device": device,
        "identity": {"cpu": cpu, "gpu": gpu},
        "bandwidth": bandwidth,
        "memory": memory,
        "clock": clock,
        "compute": compute,
        "theoretical": theory,
        "ridge": ridges(settings["dtypes"], compute, triad_Bps, theory, memory.get("levels")),
        "provenance": {
            "host": provenance.host(),
            "start_utc": provenance.utc(start_ns),
            "end_utc": provenance.utc(end_ns),
            "duration_s": (end_ns - start_ns) * 1e-9,
            "threads": thread_settings,
            "lock": str(lock),
            "lock_wait_s": lock_wait_s,
            "load_before": load_before,
            "load_after": load_after,
            "settings": settings,
            "frameworks": list(frameworks),
            "versions": provenance.runtime(("numpy", "py-cpuinfo", "psutil", "PyYAML")),
            "framework_settings": worker_setups,
            "git_commit": provenance.git_commit(Path(__file__).parent),
        },
    }
    write_hardware(result, output)
    return result
