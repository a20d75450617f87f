"""Each framework's hardware measurement in its own process.

`python -m fwbench.hardware.workers <request-json> <result-path>` inherits the thread
environment and affinity that `setup_threads` gave the parent (so numpy/OpenMP/MKL read them
at import), applies them again, and only then imports the one framework module it needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from fwbench.frameworks import load, pre_import_env
from fwbench.hardware import stream
from fwbench.io.atomic import write_json
from fwbench.measure.harness import time_calls
from fwbench.measure.threads import apply_thread_env, setup_threads


def gemm_summary(n: int, times_s: list[float]) -> dict[str, Any]:
    flops = 2 * n**3
    best = min(times_s)
    return {"flops": flops, "best_s": best, "flops_per_s": flops / best}


def numpy_gemm(n: int, trials: int, dtype: str) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    timing = time_calls(lambda: np.matmul(a, b, out=out), lambda _: None, 0, trials)
    return {
        "times_s": timing.latency_s.tolist(),
        "first_call_s": timing.first_call_s,
        "busy_cpu_other": timing.busy_cpu_other,
        "call": f"numpy {np.__version__} np.matmul(a, b, out=out)",
    }


def _gemms(gemm: Any, n: int, trials: int, dtypes: list[str]) -> dict[str, Any]:
    """Each dtype's GEMM; a dtype the framework cannot run is recorded, not fatal."""
    results = {}
    for dtype in dtypes:
        try:
            results[dtype] = gemm(n=n, trials=trials, dtype=dtype)
        except Exception as error:  # any failure is this dtype's result, not the run's
            results[dtype] = {"error": f"{type(error).__name__}: {error}"}
    return results


def _worker(request: dict[str, Any]) -> dict[str, Any]:
    """In the worker process: threads first, then the one framework, then the task."""
    threads = setup_threads(request["threads"])
    framework, task, device, args = (
        request[key] for key in ("framework", "task", "device", "args")
    )
    if framework == "numpy":
        setup, module = {"numpy": np.__version__}, None
    else:
        module = load(framework, "hardware")
        setup = module.setup(threads["threads"])
    if task == "gemm":
        gemm = numpy_gemm if module is None else partial(module.gemm, device=device)
        result = _gemms(gemm, **args)
    elif task == "stream":
        run = (
            stream.numpy_stream if module is None else partial(module.stream_kernels, device=device)
        )
        result = run(**args)
    elif task == "cuda_identity" and module is not None:
        result = module.cuda_identity()
    else:
        raise ValueError(f"no hardware task {task!r} for {framework}")
    return {"setup": setup, "threads": threads, "result": result}


def _thread_env(threads: int) -> dict[str, str]:
    """The variables apply_thread_env would set, without changing this process's environment:
    the worker must see them at start-up, before numpy loads its BLAS."""
    saved = dict(os.environ)
    try:
        return apply_thread_env(threads)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_worker(
    framework: str,
    task: str,
    args: dict[str, Any],
    threads: int,
    device: str,
    log: Any = None,
    timeout_s: float = 3600,
) -> dict[str, Any]:
    """Run one task in a fresh process; its stderr goes to `log`. Raises with the exit code."""
    request = {"framework": framework, "task": task, "args": args, "threads": threads}
    request["device"] = device
    env = os.environ | _thread_env(threads) | pre_import_env(framework, device)
    with tempfile.TemporaryDirectory(prefix="fwbench-hw-") as scratch:
        result_path = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "fwbench.hardware.workers", json.dumps(request)]
        completed = subprocess.run(
            [*command, str(result_path)],
            env=env,
            stdout=log or subprocess.DEVNULL,
            stderr=log or subprocess.DEVNULL,
            timeout=timeout_s,
        )
        if completed.returncode != 0 or not result_path.exists():
            raise RuntimeError(
                f"hardware worker {framework}/{task} exited with {completed.returncode}"
                " (its traceback is in the hardware log)"
            )
        return json.loads(result_path.read_text())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python -m fwbench.hardware.workers <request-json> <result-path>")
    write_json(_worker(json.loads(sys.argv[1])), sys.argv[2])
