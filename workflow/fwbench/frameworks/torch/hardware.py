"""torch's part of the hardware stage: GEMM peak, STREAM kernels, and the CUDA device identity.

Run inside `python -m fwbench.hardware.workers ...`, which applies the thread settings before
this module (and torch) is imported.
"""

from __future__ import annotations

from typing import Any

import torch

from fwbench.hardware import stream
from fwbench.measure.harness import time_calls

DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
}


def _device(device: str) -> torch.device:
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
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
    """Best of `trials` synced n×n @ n×n products (after one untimed call); 2n³ FLOP each."""
    dev = _device(device)
    generator = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=generator).to(device=dev, dtype=DTYPES[dtype])
    b = torch.randn(n, n, generator=generator).to(device=dev, dtype=DTYPES[dtype])
    out = torch.empty(n, n, device=dev, dtype=DTYPES[dtype])
    with torch.inference_mode():
        timing = time_calls(lambda: torch.mm(a, b, out=out), _sync_for(dev), 0, trials)
    return {
        "times_s": timing.latency_s.tolist(),
        "first_call_s": timing.first_call_s,
        "busy_cpu_other": timing.busy_cpu_other,
        "call": "torch.mm(a, b, out=out)",
    }


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
