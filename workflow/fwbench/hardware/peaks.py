"""A dtype's GEMM peak in a job of its own (io.hardware_file.OWN_JOB_DTYPES: int8), beside
the system's hardware file, so that measuring a new dtype reruns no cell.

It runs as the hardware job's GEMM sweeps do (fwbench.hardware.compute, under the timing
lock) with the frameworks and the deployment runtimes that have a GEMM in the dtype
(frameworks.gemm_runtimes), and takes the node's identity, clock and STREAM triad from the
hardware file for its theoretical peak, its ridge and which instructions served it. Its file
holds the hardware file's sections for that dtype alone (hardware_file.PEAK_SECTIONS).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fwbench import provenance
from fwbench.hardware.compute import measure_gemms
from fwbench.hardware.hierarchy import log_line
from fwbench.hardware.theory import (
    compare_to_theory,
    instruction_ceilings,
    isa_flop_per_cycle,
    ridges,
    served_by,
)
from fwbench.host.harness import timing_lock
from fwbench.host.identity import dtype_support
from fwbench.host.threads import setup_threads
from fwbench.io.hardware_file import (
    OWN_JOB_DTYPES,
    lookup,
    read_hardware,
    stream_path,
    write_hardware,
)

SWEEP_KEYS = ("gemm_min_n", "gemm_max_n", "gemm_tolerance", "gemm_trials")


def measure_peak(
    output: str | os.PathLike,
    hardware: str | os.PathLike,
    dtype: str,
    settings: dict[str, Any],
    frameworks: list[str],
    runtimes: tuple[str, ...],
    threads: int | str,
    lock: str | os.PathLike,
    log: Any = None,
) -> dict[str, Any]:
    """Sweep `dtype`'s GEMM on the node of the hardware file at `hardware` and write its peak
    file to `output` (atomically); `settings`: the hardware settings (its gemm_* sweep)."""
    _check(dtype, settings)
    node = read_hardware(hardware)
    device, identity = node["device"], node["identity"]
    supported = dtype_support(device, identity["cpu"], identity.get("gpu"))
    thread_settings = setup_threads(threads)
    cores = thread_settings["threads"]
    sweep = {key: settings[key] for key in SWEEP_KEYS} | {"dtypes": [dtype]}
    with timing_lock(lock) as lock_wait_s:
        log_line(log, f"lock acquired after {lock_wait_s:.1f} s; {dtype} GEMM, {cores} threads")
        start_ns = time.time_ns()
        compute, versions = measure_gemms(
            frameworks, sweep, supported, device, cores, log, runtimes
        )
        end_ns = time.time_ns()
    theory = _theory(node, dtype, cores)
    compare_to_theory(compute, theory)
    if device == "cpu":
        _served_by(compute, dtype, node, cores)
    provenance_record = {
        "host": provenance.host(),
        "start_utc": provenance.utc(start_ns),
        "end_utc": provenance.utc(end_ns),
        "threads": thread_settings,
        "lock_wait_s": lock_wait_s,
        "settings": sweep,
        "frameworks": list(frameworks),
        "runtimes": list(runtimes),
        "framework_settings": versions,
        "git_commit": provenance.git_commit(Path(__file__).parent),
    }
    document = _document(node, hardware, dtype, compute, theory) | {"provenance": provenance_record}
    write_hardware(document, output)
    return document


def _document(
    node: dict[str, Any], hardware: Any, dtype: str, compute: dict, theory: dict
) -> dict[str, Any]:
    """The peak file's sections (io.hardware_file.PEAK_SECTIONS) and whose node it measured."""
    triad = lookup(node, *stream_path("triad"))
    return {
        "system": node.get("system", ""),
        "node": node.get("node", {}),
        "device": node["device"],
        "dtype": dtype,
        "hardware_file": str(hardware),
        "compute": compute,
        "theoretical": theory,
        "ridge": ridges([dtype], compute, triad, theory, lookup(node, "memory", "levels")),
    }


def _check(dtype: str, settings: dict[str, Any]) -> None:
    if dtype not in OWN_JOB_DTYPES:
        raise ValueError(f"dtype {dtype!r} has no peak job of its own; those: {OWN_JOB_DTYPES}")
    missing = [key for key in SWEEP_KEYS if key not in settings]
    if missing:
        raise ValueError(f"hardware settings lack {', '.join(missing)}")


def _served_by(compute: dict[str, Any], dtype: str, node: dict[str, Any], cores: int) -> None:
    """The CPU's instructions for `dtype` with their ceilings, and which served its best."""
    cpu = node["identity"]["cpu"]
    ceilings = instruction_ceilings(cpu["isa"], cpu["vendor"], cpu.get("family"))
    compute["instructions"] = {dtype: ceilings.get(dtype, {})}
    clock = lookup(node, "theoretical", "isa_model", "clock_hz")
    entry = compute["dtypes"][dtype]
    entry["served_by"] = served_by(entry, ceilings.get(dtype, {}), cores, clock)


def _theory(node: dict[str, Any], dtype: str, cores: int) -> dict[str, Any]:
    """The dtype's theoretical peak from the CPU's ISA at the clock the hardware job measured
    (the GPU's: not derived); the memory side as the hardware file has it (ridges)."""
    theory = {
        "flops_per_s": {dtype: None},
        "flops_source": {dtype: "not derivable"},
        "bandwidth_Bps": lookup(node, "theoretical", "bandwidth_Bps"),
    }
    cpu, clock = node["identity"]["cpu"], lookup(node, "theoretical", "isa_model", "clock_hz")
    if node["device"] != "cpu" or not clock:
        return theory
    model = isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    per_cycle = model["flop_per_cycle"].get(dtype)
    if per_cycle:
        theory["flops_per_s"][dtype] = per_cycle * cores * clock
        theory["flops_source"][dtype] = (
            f"ISA model: {per_cycle} op/cycle/core × {cores} cores × {clock / 1e9:.3f} GHz (the "
            f"hardware file's clock); {model['sources'][dtype]}"
        )
    return theory
