"""The compute side of the hardware stage: every framework's GEMM size sweep per dtype, each
in a worker process (fwbench.hardware.workers), and per dtype the best rate of any."""

from __future__ import annotations

import subprocess
from typing import Any

from fwbench.hardware.hierarchy import log_line
from fwbench.hardware.workers import run_worker


def measure_gemms(
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
