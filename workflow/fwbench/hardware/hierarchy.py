"""The memory side of the hardware stage: the working-set sweep (C kernels in a worker on
CPU, a framework's StreamProbe on CUDA), each level's plateau, and the cross-check of its DRAM
triad against STREAM's."""

from __future__ import annotations

import subprocess
import time
from typing import Any

from fwbench import frameworks as registry
from fwbench.hardware.workers import run_worker
from fwbench.memory import levels


def log_line(log: Any, message: str) -> None:
    if log is not None:
        log.write(f"[fwbench.hardware {time.strftime('%H:%M:%S')}] {message}\n")
        log.flush()


def measure_memory(
    cpu: dict[str, Any],
    gpu: dict[str, Any] | None,
    settings: dict[str, Any],
    frameworks: list[str],
    device: str,
    thread_settings: dict[str, Any],
    log: Any,
) -> dict[str, Any]:
    """The working-set sweep (C kernels on CPU, a framework's StreamProbe on CUDA) and each
    level's plateau."""
    if gpu:
        capacities = {"L2": gpu["l2_cache_bytes"]} if gpu.get("l2_cache_bytes") else {}
        runner = registry.stream_probe(frameworks)
    else:
        capacities = levels.cpu_level_capacities(
            cpu["caches"], thread_settings["threads"], thread_settings["cores"]
        )
        runner = "native"
    if not capacities:
        return {"error": "cache sizes unknown: no working-set sweep"}
    if runner is None:
        probes = " or ".join(registry.stream_probes())
        return {"error": f"the working-set sweep on cuda needs {probes} among the frameworks"}
    largest = settings["sweep_llc_multiple"] * max(capacities.values())
    try:
        sizes = levels.sweep_sizes(
            settings["sweep_min_bytes"], largest, settings["sweep_points_per_octave"]
        )
    except ValueError as error:
        return {"capacities_bytes": capacities, "error": str(error)}
    args = {"sizes": sizes, "min_seconds": settings["sweep_point_s"]}
    args["trials"] = settings["sweep_trials"]
    log_line(log, f"working-set sweep ({runner}): {len(sizes)} sizes up to {largest:.3g} B")
    try:
        threads = thread_settings["threads"]
        sweep = run_worker(runner, "cache_sweep", args, threads, device, log)["result"]
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return {"runner": runner, "capacities_bytes": capacities, "error": str(error)}
    memory = sweep | {
        "runner": runner,
        "capacities_bytes": capacities,
        "capacity_rule": levels.CAPACITY_RULE,
        "levels": levels.plateaus(sweep["curve"], capacities),
    }
    if settings["sweep_llc_multiple"] < levels.DRAM_FROM:
        memory["note"] = (
            f"sweep_llc_multiple {settings['sweep_llc_multiple']} is below {levels.DRAM_FROM}: "
            "the sweep never leaves the last-level cache, so it has no DRAM plateau (the "
            "roofline's DRAM roof is STREAM's triad alone)"
        )
    return memory


def stream_check(memory: dict[str, Any], triad_Bps: float | None) -> None:
    """The sweep's DRAM triad ÷ STREAM's triad: two independent measurements of one figure."""
    dram = memory.get("levels", {}).get(levels.DRAM, {}).get("kernels", {}).get("triad")
    if dram and triad_Bps:
        memory["dram_triad_over_stream"] = dram["bandwidth_Bps"] / triad_Bps
