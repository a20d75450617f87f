"""The compute side of the hardware stage: every framework's GEMM size sweep per dtype, each
in a worker process (fwbench.hardware.workers), and per dtype the best rate of any."""

from __future__ import annotations

import subprocess
from typing import Any

from fwbench.frameworks import RUNTIME_GEMMS
from fwbench.hardware.hierarchy import log_line
from fwbench.hardware.workers import run_worker
from fwbench.host.onednn import PROFILE_ENV

KERNEL_SOURCE = (
    "oneDNN's JIT profile (ONEDNN_JIT_PROFILE=2, /tmp/perf-<pid>.map) of one product at the best "
    "size after the sweep; no kernel named: the runner's kernels are not oneDNN's JIT (MKL, "
    "MLAS, Eigen), and what they ran is not reported"
)


def _runner_dtypes(runner: str, frameworks: list[str], measurable: list[str], device: str):
    """The dtypes a runner sweeps: every measurable one for a framework (one it has no GEMM
    for is recorded as its error), a runtime's own on the CPU, numpy's fp32 on the host."""
    if runner in frameworks:
        return measurable
    on_host = ["float32"] if runner == "numpy" else list(RUNTIME_GEMMS[runner])
    return [dtype for dtype in measurable if dtype in on_host] if device == "cpu" else []


def measure_gemms(
    frameworks: list[str],
    settings: dict[str, Any],
    supported: dict[str, str | None],
    device: str,
    threads: int,
    log: Any,
    runtimes: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every framework's and runtime's GEMM size sweep per measurable dtype (numpy: fp32 on
    the host CPU), and per dtype the best rate of any of them at any size."""
    measurable = [dtype for dtype in settings["dtypes"] if supported[dtype] is None]
    sweep = {key: settings[f"gemm_{key}"] for key in ("min_n", "max_n", "trials", "tolerance")}
    per_framework: dict[str, dict[str, Any]] = {}
    versions: dict[str, Any] = {}
    for framework in [*frameworks, *runtimes, "numpy"]:
        dtypes = _runner_dtypes(framework, frameworks, measurable, device)
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
    if device == "cpu":
        _kernel_pass(compute["dtypes"], threads, log)
    return compute, versions


def _kernel_pass(entries: dict[str, dict[str, Any]], threads: int, log: Any) -> None:
    """After every sweep: per best runner, one process that runs each dtype it won once at
    its best size with oneDNN's JIT profiling on (fwbench.host.onednn), and records the
    kernels and their instruction families in the dtype's entry (`kernels`)."""
    won: dict[str, dict[str, int]] = {}
    for dtype, entry in entries.items():
        if entry["best_framework"]:
            won.setdefault(entry["best_framework"], {})[dtype] = entry["best_n"]
    for runner, best_n in won.items():
        log_line(log, f"kernel pass {runner} {best_n} (oneDNN JIT profile, not timed)")
        try:
            found = run_worker(
                runner, "gemm_kernels", {"best_n": best_n}, threads, "cpu", log, 600, PROFILE_ENV
            )["result"]
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            found = {dtype: {"error": str(error)} for dtype in best_n}
        for dtype, kernels in found.items():
            entries[dtype]["kernels"] = kernels | {"runner": runner, "source": KERNEL_SOURCE}
