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

from fwbench import frameworks as registry
from fwbench import provenance
from fwbench.hardware.compute import measure_gemms
from fwbench.hardware.hierarchy import log_line, measure_memory, stream_check
from fwbench.hardware.theory import (
    DTYPES,
    compare_to_theory,
    instruction_ceilings,
    load_known_devices,
    ridges,
    served_by,
    theoretical_peaks,
)
from fwbench.hardware.workers import run_worker
from fwbench.host.harness import timing_lock
from fwbench.host.identity import cpu_identity, dtype_support, nvidia_smi_identity
from fwbench.host.threads import setup_threads
from fwbench.io.hardware_file import write_hardware
from fwbench.memory import stream
from fwbench.memory.levels import DRAM

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
    probe = registry.stream_probe(frameworks)
    if probe:
        worker = run_worker(probe, "stream", args, threads, device, log)
        return worker["result"] | {"runner": probe, "versions": worker["setup"]}
    if device == "cuda":
        raise ValueError(f"STREAM on cuda needs {_probes()}: numpy would measure the host's memory")
    worker = run_worker("numpy", "stream", args, threads, device, log)
    return worker["result"] | {"runner": "numpy", "versions": worker["setup"]}


def _measure_clock(device: str, threads: int, log: Any) -> dict[str, Any] | None:
    if device != "cpu":
        return None
    try:
        return run_worker("native", "clock", {}, threads, device, log)["result"]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return {"clock_hz": None, "problem": str(error)}


def _measure_canary(memory: dict[str, Any], threads: int, device: str, log: Any) -> dict[str, Any]:
    """The speed canary's fixed work and quiet baseline per memory level of the host (on
    cuda too: the canary measures the host that drives the device)."""
    capacities = dict(memory.get("capacities_bytes") or {}) | {DRAM: None}
    try:
        args = {"capacities": capacities}
        return run_worker("native", "canary", args, threads, device, log)["result"]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return {"levels": {}, "problem": str(error)}


def _identify(
    device: str, frameworks: list[str], threads: int, log: Any
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    cpu = cpu_identity()
    if device == "cpu":
        return cpu, None
    gpu = nvidia_smi_identity() or {}
    probe = registry.stream_probe(frameworks)
    if probe:
        gpu |= run_worker(probe, "cuda_identity", {}, threads, device, log)["result"]
    if not gpu:
        raise RuntimeError(f"device 'cuda' but neither nvidia-smi nor {_probes()} sees a GPU")
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


def _probes() -> str:
    """The frameworks whose probe runs STREAM and names the GPU, for messages."""
    return " or ".join(registry.stream_probes())


def _bandwidth(
    cpu: dict[str, Any],
    gpu: dict[str, Any] | None,
    settings: dict[str, Any],
    frameworks: list[str],
    device: str,
    threads: int,
    log: Any,
) -> dict[str, Any]:
    """STREAM, with arrays sized from the last-level cache (on cuda, by a framework probe)."""
    if device == "cuda" and registry.stream_probe(frameworks) is None:
        return {"runner": None, "error": f"STREAM on cuda needs {_probes()} among the frameworks"}
    elements, llc = _stream_elements(cpu, gpu, settings["stream_llc_multiple"])
    log_line(log, f"STREAM: 3 arrays × {elements} {STREAM_DTYPE} elements")
    bandwidth = _measure_stream(
        frameworks, device, threads, elements, settings["stream_trials"], log
    )
    return bandwidth | _sizing(llc, settings["stream_llc_multiple"])


def _measure_all(
    settings: dict[str, Any],
    frameworks: list[str],
    device: str,
    thread_settings: dict[str, Any],
    log: Any,
) -> dict[str, Any]:
    """Every measurement of the stage, in order, with the time and load around them."""
    threads = thread_settings["threads"]
    start_ns, load_before = time.time_ns(), os.getloadavg()[0]
    cpu, gpu = _identify(device, frameworks, threads, log)
    bandwidth = _bandwidth(cpu, gpu, settings, frameworks, device, threads, log)
    memory = measure_memory(cpu, gpu, settings, frameworks, device, thread_settings, log)
    clock = _measure_clock(device, threads, log)
    canary = _measure_canary(memory, threads, device, log)
    supported = dtype_support(device, cpu, gpu)
    compute, worker_setups = measure_gemms(frameworks, settings, supported, device, threads, log)
    return {
        "cpu": cpu,
        "gpu": gpu,
        "bandwidth": bandwidth,
        "memory": memory,
        "clock": clock,
        "canary": canary,
        "compute": compute,
        "worker_setups": worker_setups,
        "start_ns": start_ns,
        "load_before": load_before,
        "end_ns": time.time_ns(),
        "load_after": os.getloadavg()[0],
    }


def _provenance(
    measured: dict[str, Any],
    settings: dict[str, Any],
    frameworks: list[str],
    thread_settings: dict[str, Any],
    lock: str | os.PathLike,
    lock_wait_s: float,
) -> dict[str, Any]:
    start_ns, end_ns = measured["start_ns"], measured["end_ns"]
    return {
        "host": provenance.host(),
        "start_utc": provenance.utc(start_ns),
        "end_utc": provenance.utc(end_ns),
        "duration_s": (end_ns - start_ns) * 1e-9,
        "threads": thread_settings,
        "lock": str(lock),
        "lock_wait_s": lock_wait_s,
        "load_before": measured["load_before"],
        "load_after": measured["load_after"],
        "settings": settings,
        "frameworks": list(frameworks),
        "versions": provenance.runtime(("numpy", "py-cpuinfo", "psutil", "PyYAML")),
        "framework_settings": measured["worker_setups"],
        "git_commit": provenance.git_commit(Path(__file__).parent),
    }


def _instructions(compute: dict[str, Any], cpu: dict[str, Any], clock_hz: float, cores: int):
    """The CPU's GEMM instructions per dtype with their op/cycle/core ceilings
    (`instructions`), and per dtype which of them computed its best GEMM (`served_by`)."""
    ceilings = instruction_ceilings(cpu["isa"], cpu["vendor"], cpu.get("family"))
    compute["instructions"] = ceilings
    for dtype, entry in compute["dtypes"].items():
        entry["served_by"] = served_by(entry, ceilings.get(dtype, {}), cores, clock_hz)


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
    with timing_lock(lock) as lock_wait_s:
        log_line(
            log,
            f"lock acquired after {lock_wait_s:.1f} s; "
            f"threads={thread_settings['threads']} device={device}",
        )
        measured = _measure_all(settings, frameworks, device, thread_settings, log)
    cpu, gpu, compute, memory = (measured[key] for key in ("cpu", "gpu", "compute", "memory"))
    theory = theoretical_peaks(
        device, cpu, gpu, thread_settings["threads"], known_devices, measured["clock"]
    )
    compare_to_theory(compute, theory)
    if device == "cpu":
        _instructions(compute, cpu, theory["isa_model"]["clock_hz"], thread_settings["threads"])
    bandwidth = measured["bandwidth"]
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
        "clock": measured["clock"],
        "canary": measured["canary"],
        "compute": compute,
        "theoretical": theory,
        "ridge": ridges(settings["dtypes"], compute, triad_Bps, theory, memory.get("levels")),
        "provenance": _provenance(
            measured, settings, frameworks, thread_settings, lock, lock_wait_s
        ),
    }
    write_hardware(result, output)
    return result
