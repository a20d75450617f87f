"""torch's part of the hardware stage: GEMM peak, STREAM kernels, the working-set sweep on
CUDA (device memory and its L2), and the CUDA device identity.

Run inside `python -m fwbench.hardware.workers ...`, which applies the thread settings before
this module (and torch) is imported.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from fwbench.frameworks.base import check_device
from fwbench.host.harness import time_calls
from fwbench.memory import stream
from fwbench.memory.levels import ARRAYS_PER_KERNEL, SWEEP_KERNELS

DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
    "int8": torch.int8,
}


def _device(device: str) -> torch.device:
    check_device("torch", torch.__version__, device, torch.cuda.is_available)
    return torch.device(device)


def _sync_for(device: torch.device):
    if device.type == "cuda":
        return lambda *_: torch.cuda.synchronize()
    return lambda *_: None


def setup(threads: int) -> dict[str, Any]:
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    # fp32 means fp32: no TF32 on tensor cores, which would be a different dtype's peak.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return {
        "torch": torch.__version__,
        "num_threads": torch.get_num_threads(),
        "allow_tf32": False,
        "cuda": torch.version.cuda,
    }


def gemm(n: int, trials: int, dtype: str, device: str) -> dict[str, Any]:
    """Best of `trials` synced n×n @ n×n products (after one untimed call); 2n³ FLOP each.
    int8: torch._int_mm, int8 operands (the full range) into int32, oneDNN's s8s8s32 GEMM on
    CPU."""
    dev = _device(device)
    generator = torch.Generator(device="cpu").manual_seed(0)
    if dtype == "int8":
        a, b = (
            torch.randint(-128, 128, (n, n), generator=generator, dtype=torch.int8) for _ in "ab"
        )
        a, b, out = a.to(dev), b.to(dev), torch.empty(n, n, device=dev, dtype=torch.int32)
        op, call = torch._int_mm, "torch._int_mm(a, b, out=out)"
    else:
        a = torch.randn(n, n, generator=generator).to(device=dev, dtype=DTYPES[dtype])
        b = torch.randn(n, n, generator=generator).to(device=dev, dtype=DTYPES[dtype])
        out = torch.empty(n, n, device=dev, dtype=DTYPES[dtype])
        op, call = torch.mm, "torch.mm(a, b, out=out)"
    with torch.inference_mode():
        timing = time_calls(lambda: op(a, b, out=out), _sync_for(dev), 0, trials)
    return timing.gemm_record(call)


def stream_kernels(elements: int, trials: int, device: str, dtype: str = "float64") -> dict:
    """STREAM's four kernels as single-pass torch ops writing into existing arrays (out=),
    which run on torch's intra-op (OpenMP) threads on CPU or as one CUDA kernel each."""
    dev = _device(device)
    torch_dtype = DTYPES[dtype]
    # fill_ runs in parallel, so pages are first touched by the threads that use them.
    a = torch.empty(elements, dtype=torch_dtype, device=dev).fill_(2.0 * stream.INITIAL["a"])
    b = torch.empty(elements, dtype=torch_dtype, device=dev).fill_(stream.INITIAL["b"])
    c = torch.empty(elements, dtype=torch_dtype, device=dev).fill_(stream.INITIAL["c"])
    s = stream.SCALAR
    ops = {
        "copy": lambda: c.copy_(a),
        "scale": lambda: torch.mul(c, s, out=b),
        "add": lambda: torch.add(a, b, out=c),
        "triad": lambda: torch.add(b, c, alpha=s, out=a),
    }

    def read_arrays():
        return {"a": a.cpu().numpy(), "b": b.cpu().numpy(), "c": c.cpu().numpy()}

    with torch.inference_mode():
        result = stream.run(ops, _sync_for(dev), read_arrays, elements, dtype, trials)
    where = "CUDA kernels" if dev.type == "cuda" else f"{torch.get_num_threads()} intra-op threads"
    result["method"] = (
        f"torch {torch.__version__}: c.copy_(a), torch.mul(c, s, out=b), torch.add(a, b, out=c),"
        f" torch.add(b, c, alpha=s, out=a); one pass per kernel on {where}"
    )
    result["threads_used"] = torch.get_num_threads() if dev.type == "cpu" else None
    return result


def _sweep_ops(kernel: str, elements: int, dev: torch.device) -> Any:
    a = torch.full((elements,), 1.0, dtype=torch.float64, device=dev)
    b = torch.full((elements,), 2.0, dtype=torch.float64, device=dev)
    c = torch.full((elements,), 0.5, dtype=torch.float64, device=dev)
    total = torch.empty((), dtype=torch.float64, device=dev)
    ops = {
        "read": lambda: torch.sum(a, dim=0, out=total),
        "copy": lambda: c.copy_(a),
        "triad": lambda: torch.add(b, c, alpha=stream.SCALAR, out=a),
    }
    expected = {"read": (total, float(elements)), "copy": (c, 1.0), "triad": (a, 3.5)}
    return ops[kernel], expected[kernel]


def _sweep_point(
    kernel: str, working_set_bytes: int, min_seconds: float, trials: int, dev: torch.device
) -> dict[str, Any]:
    """One kernel over arrays totalling `working_set_bytes`, launched back to back `reps`
    times per timed run (doubled until a run lasts `min_seconds`), best of `trials`."""
    elements = max(1, working_set_bytes // (8 * ARRAYS_PER_KERNEL[kernel]))
    op, (result, want) = _sweep_ops(kernel, elements, dev)
    sync = _sync_for(dev)

    def run(reps: int) -> float:
        sync()
        start = time.perf_counter()
        for _ in range(reps):
            op()
        sync()
        return time.perf_counter() - start

    reps = 1
    while run(reps) < min_seconds:
        reps *= 2
    times = [run(reps) for _ in range(trials)]
    if not bool(torch.all(result == want)):
        raise stream.StreamValidationError(f"sweep kernel {kernel} left wrong values")
    moved = ARRAYS_PER_KERNEL[kernel] * elements * 8 * reps
    return {
        "kernel": kernel,
        "working_set_bytes": ARRAYS_PER_KERNEL[kernel] * elements * 8,
        "elements": elements,
        "reps": reps,
        "times_s": times,
        "bandwidth_Bps": moved / min(times),
    }


def cache_sweep(sizes: list[int], min_seconds: float, trials: int, device: str) -> dict:
    """The bandwidth curve from torch ops (on CUDA: device memory, through its L2). Each
    launch costs microseconds, so working sets whose kernel is shorter than a launch read low:
    the plateaus below the L2 are not meaningful here (CPU uses the C kernels instead)."""
    dev = _device(device)
    with torch.inference_mode():
        curve = [
            _sweep_point(kernel, size, min_seconds, trials, dev)
            for size in sizes
            for kernel in SWEEP_KERNELS
        ]
    return {
        "curve": curve,
        "threads_used": torch.get_num_threads() if dev.type == "cpu" else None,
        "validation": "every point's output checked after its runs",
        "method": (
            f"torch {torch.__version__} on {dev.type}: torch.sum(a, dim=0, out=s), c.copy_(a), "
            "torch.add(b, c, alpha=3, out=a), launched back to back; bytes as STREAM counts"
        ),
    }


def cuda_identity() -> dict[str, Any]:
    """The GPU this job runs on, as torch.cuda reports it."""
    _device("cuda")
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "sm_count": props.multi_processor_count,
        "memory_total_bytes": props.total_memory,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "compute_capability": f"{props.major}.{props.minor}",
        "cuda_runtime_version": torch.version.cuda,
        "bf16_supported": torch.cuda.is_bf16_supported(),
        "device_count": torch.cuda.device_count(),
        "source": "torch.cuda",
    }
