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

from fwbench.frameworks import load_hardware, pre_import_env
from fwbench.host.harness import time_calls
from fwbench.host.onednn import JitLog, families
from fwbench.host.threads import apply_thread_env, setup_threads
from fwbench.io.atomic import write_json
from fwbench.memory import canary, native, stream

GEMM_PATIENCE = 2  # sizes in a row that do not raise the rate before the sweep stops
GEMM_SIZE_BUDGET_S = 1.0  # timed seconds per size beyond which trials drop (to 2 at least)


def gemm_summary(n: int, times_s: list[float]) -> dict[str, Any]:
    flops = 2 * n**3
    best = min(times_s)
    return {"n": n, "flops": flops, "best_s": best, "flops_per_s": flops / best}


def gemm_sizes(min_n: int, max_n: int) -> list[int]:
    """Square sizes from `min_n` to `max_n`: powers of two and the 1.5× between them (a BLAS
    can peak off the powers of two, where cache-set aliasing hurts it)."""
    if not 16 <= min_n <= max_n:
        raise ValueError(f"GEMM sizes need 16 ≤ min_n ≤ max_n, got {min_n}, {max_n}")
    sizes, n = [], min_n
    while n <= max_n:
        sizes += [size for size in (n, n * 3 // 2) if size <= max_n]
        n *= 2
    return sizes


def sweep_one_dtype(
    gemm: Any, sizes: list[int], trials: int, dtype: str, tolerance: float
) -> dict[str, Any]:
    """Ascending sizes until GEMM_PATIENCE sizes in a row stay within `tolerance` of the best
    rate so far (the rate stopped rising). Every size's timings are kept."""
    per_size, best, stale = [], None, 0
    for n in sizes:
        size_trials = trials
        if per_size and "best_s" in per_size[-1]:
            previous = per_size[-1]
            expected_s = previous["best_s"] * (n / previous["n"]) ** 3
            size_trials = max(min(2, trials), min(trials, int(GEMM_SIZE_BUDGET_S / expected_s)))
        try:
            measured = gemm(n=n, trials=size_trials, dtype=dtype)
        except Exception as error:  # at a large n (memory, say): keep the sizes before it
            if best is None:
                raise
            per_size.append({"n": n, "error": f"{type(error).__name__}: {error}"})
            break
        measured |= gemm_summary(n, measured["times_s"])
        per_size.append(measured)
        if best is None or measured["flops_per_s"] > best["flops_per_s"] * (1 + tolerance):
            stale = 0
        else:
            stale += 1
        if best is None or measured["flops_per_s"] > best["flops_per_s"]:
            best = measured
        if stale >= GEMM_PATIENCE:
            break
    return {
        "flops_per_s": best["flops_per_s"],
        "best_n": best["n"],
        "call": best["call"],
        "stopped_at_n": per_size[-1]["n"],
        "sizes": per_size,
    }


def gemm_sweep(
    gemm: Any, min_n: int, max_n: int, trials: int, dtypes: list[str], tolerance: float
) -> dict[str, Any]:
    """Each dtype's size sweep; a dtype the framework cannot run is recorded, not fatal."""
    results = {}
    for dtype in dtypes:
        try:
            results[dtype] = sweep_one_dtype(
                gemm, gemm_sizes(min_n, max_n), trials, dtype, tolerance
            )
        except Exception as error:  # any failure is this dtype's result, not the run's
            results[dtype] = {"error": f"{type(error).__name__}: {error}"}
    return results


def gemm_kernels(gemm: Any, best_n: dict[str, int]) -> dict[str, Any]:
    """One product per dtype at its best size, and the oneDNN JIT kernels each generated
    (fwbench.host.onednn; the worker runs with its PROFILE_ENV): not timed."""
    jit = JitLog()
    try:
        kernels = {}
        for dtype, n in best_n.items():
            gemm(n=n, trials=1, dtype=dtype)
            names = jit.take()
            kernels[dtype] = {"n": n, "onednn_jit_kernels": names, "instructions": families(names)}
        return kernels
    finally:
        jit.close()


def numpy_gemm(n: int, trials: int, dtype: str) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype=dtype)
    timing = time_calls(lambda: np.matmul(a, b, out=out), lambda _: None, 0, trials)
    return timing.gemm_record(f"numpy {np.__version__} np.matmul(a, b, out=out)")


def _native_task(task: str, args: dict[str, Any]) -> dict[str, Any]:
    if task == "cache_sweep":
        return native.sweep(**args)
    if task == "clock":
        return native.clock()
    if task == "canary":
        return canary.baseline(args["capacities"])
    raise ValueError(f"no hardware task {task!r} for native")


def _worker(request: dict[str, Any]) -> dict[str, Any]:
    """In the worker process: threads first, then the one framework, then the task."""
    threads = setup_threads(request["threads"])
    framework, task, device, args = (
        request[key] for key in ("framework", "task", "device", "args")
    )
    if framework == "native":
        return {"setup": {}, "threads": threads, "result": _native_task(task, args)}
    if framework == "numpy":
        setup, module = {"numpy": np.__version__}, None
    else:
        module = load_hardware(framework)
        setup = module.setup(threads["threads"])
    gemm = numpy_gemm if module is None else partial(module.gemm, device=device)
    if task == "gemm":
        result = gemm_sweep(gemm, **args)
    elif task == "gemm_kernels":
        result = gemm_kernels(gemm, **args)
    elif task == "stream":
        run = (
            stream.numpy_stream if module is None else partial(module.stream_kernels, device=device)
        )
        result = run(**args)
    elif task == "cache_sweep" and module is not None:
        result = module.cache_sweep(device=device, **args)
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
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one task in a fresh process (with `env` added to its environment); its stderr
    goes to `log`. Raises with the exit code."""
    request = {"framework": framework, "task": task, "args": args, "threads": threads}
    request["device"] = device
    env = os.environ | _thread_env(threads) | pre_import_env(framework, device) | (env or {})
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
