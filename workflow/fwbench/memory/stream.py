"""STREAM (McCalpin) as this project measures it: the four kernels, their byte counting, array
sizing from the last-level cache, the timing loop and STREAM's validation.

The kernels themselves run in a framework module (`frameworks/torch/hardware.stream_kernels`,
one fused pass per kernel on the configured threads) or, when torch is not configured, in the numpy
fallback here, which is single-threaded and runs the triad in two passes (labelled so in its
result). Everything in this module is framework-free.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

KERNELS = ("copy", "scale", "add", "triad")
# STREAM counts the arrays each kernel names: copy c=a and scale b=s*c touch 2, add c=a+b and
# triad a=b+s*c touch 3. Write-allocate traffic is not counted (as in STREAM).
ACCESSES_PER_ELEMENT = {"copy": 2, "scale": 2, "add": 3, "triad": 3}
SCALAR = 3.0
# STREAM's tolerance on the average absolute error relative to the expected value.
EPSILON = {"float64": 1.0e-13, "float32": 1.0e-6}
INITIAL = {"a": 1.0, "b": 2.0, "c": 0.0}


class StreamValidationError(RuntimeError):
    """The arrays after the run do not hold the values STREAM's recurrence predicts."""


def kernel_bytes(kernel: str, elements: int, element_bytes: int) -> int:
    """Bytes one execution of `kernel` moves by STREAM's count."""
    if kernel not in ACCESSES_PER_ELEMENT:
        raise ValueError(f"unknown STREAM kernel {kernel!r}; known: {', '.join(KERNELS)}")
    if elements < 1 or element_bytes < 1:
        raise ValueError(f"elements and element_bytes must be ≥ 1, got {elements}, {element_bytes}")
    return ACCESSES_PER_ELEMENT[kernel] * elements * element_bytes


def array_elements(llc_bytes: int, llc_multiple: float, element_bytes: int) -> int:
    """Elements per array so that each array is at least `llc_multiple` × the last-level cache."""
    if llc_bytes <= 0:
        raise ValueError(f"llc_bytes must be positive, got {llc_bytes}")
    if llc_multiple <= 0:
        raise ValueError(f"stream_llc_multiple must be positive, got {llc_multiple}")
    if element_bytes < 1:
        raise ValueError(f"element_bytes must be ≥ 1, got {element_bytes}")
    return math.ceil(llc_bytes * llc_multiple / element_bytes)


def check_fits_in_memory(elements: int, element_bytes: int, available_bytes: int) -> None:
    """Three arrays must fit in 80% of the available memory, or the run would swap or die."""
    needed = 3 * elements * element_bytes
    if needed > 0.8 * available_bytes:
        raise ValueError(
            f"STREAM needs 3 arrays × {elements} elements × {element_bytes} B = {needed} B, more "
            f"than 80% of the {available_bytes} B available; lower stream_llc_multiple"
        )


def expected_values(iterations: int, scalar: float = SCALAR) -> dict[str, float]:
    """The values every element holds after `iterations` rounds of the four kernels, replayed
    on scalars exactly as STREAM's checker does (including its initial a = 2a)."""
    a, b, c = 2.0 * INITIAL["a"], INITIAL["b"], INITIAL["c"]
    for _ in range(iterations):
        c = a
        b = scalar * c
        c = a + b
        a = b + scalar * c
    return {"a": a, "b": b, "c": c}


def validate(
    arrays: dict[str, np.ndarray], iterations: int, dtype: str, scalar: float = SCALAR
) -> dict[str, float]:
    """STREAM's check: the average |x - expected| / |expected| of each array is below the
    dtype's epsilon. Returns those relative errors; raises naming the array that fails."""
    if dtype not in EPSILON:
        raise ValueError(f"STREAM validation has no tolerance for dtype {dtype!r}")
    expected = expected_values(iterations, scalar)
    errors: dict[str, float] = {}
    for name, value in expected.items():
        array = arrays[name]
        avg_abs_error = float(np.mean(np.abs(array.astype(np.float64) - value)))
        errors[name] = avg_abs_error / abs(value)
        if not errors[name] <= EPSILON[dtype]:  # NaN fails too
            raise StreamValidationError(
                f"STREAM array {name} failed validation: average relative error {errors[name]:.3e}"
                f" > {EPSILON[dtype]:.0e} (expected every element to be {value!r})"
            )
    return errors


def time_kernels(
    ops: dict[str, Callable[[], None]], sync: Callable[[], None], trials: int
) -> dict[str, list[float]]:
    """One untimed round of the four kernels (page faults, thread start-up), then `trials`
    rounds, each kernel timed alone in STREAM's order. Returns seconds per kernel per trial."""
    if trials < 1:
        raise ValueError(f"stream_trials must be ≥ 1, got {trials}")
    for kernel in KERNELS:
        ops[kernel]()
    sync()
    times: dict[str, list[float]] = {kernel: [] for kernel in KERNELS}
    for _ in range(trials):
        for kernel in KERNELS:
            start = time.perf_counter()
            ops[kernel]()
            sync()
            times[kernel].append(time.perf_counter() - start)
    return times


def summarize(
    times: dict[str, list[float]], elements: int, element_bytes: int
) -> dict[str, dict[str, Any]]:
    """Per kernel: bytes by STREAM's count, every trial, and the best (minimum-time) rate."""
    summary = {}
    for kernel in KERNELS:
        moved = kernel_bytes(kernel, elements, element_bytes)
        best = min(times[kernel])
        summary[kernel] = {
            "bytes_per_trial": moved,
            "times_s": list(times[kernel]),
            "best_s": best,
            "mean_s": float(np.mean(times[kernel])),
            "best_bandwidth_Bps": moved / best,
        }
    return summary


def run(
    ops: dict[str, Callable[[], None]],
    sync: Callable[[], None],
    read_arrays: Callable[[], dict[str, np.ndarray]],
    elements: int,
    dtype: str,
    trials: int,
) -> dict[str, Any]:
    """Time the kernels, validate the arrays they leave, summarize. Framework modules supply
    `ops` (arrays already initialized to INITIAL with a doubled) and `read_arrays`."""
    times = time_kernels(ops, sync, trials)
    errors = validate(read_arrays(), iterations=trials + 1, dtype=dtype)
    element_bytes = np.dtype(dtype).itemsize
    return {
        "dtype": dtype,
        "element_bytes": element_bytes,
        "elements_per_array": elements,
        "array_bytes": elements * element_bytes,
        "trials": trials,
        "kernels": summarize(times, elements, element_bytes),
        "validation": {"passed": True, "avg_relative_error": errors, "epsilon": EPSILON[dtype]},
    }


def numpy_stream(elements: int, trials: int, dtype: str = "float64") -> dict[str, Any]:
    """The fallback when torch is not configured: numpy ufuncs with out= (no temporaries).

    numpy runs them on one thread, and has no fused b + s*c, so the triad makes two passes
    (a = s*c; a += b) and moves 5 arrays' worth while STREAM's count credits 3.
    """
    a = np.full(elements, 2.0 * INITIAL["a"], dtype=dtype)
    b = np.full(elements, INITIAL["b"], dtype=dtype)
    c = np.full(elements, INITIAL["c"], dtype=dtype)
    ops = {
        "copy": lambda: np.copyto(c, a),
        "scale": lambda: np.multiply(c, SCALAR, out=b),
        "add": lambda: np.add(a, b, out=c),
        "triad": lambda: (np.multiply(c, SCALAR, out=a), np.add(a, b, out=a)),
    }
    result = run(ops, lambda: None, lambda: {"a": a, "b": b, "c": c}, elements, dtype, trials)
    result["method"] = (
        f"numpy {np.__version__} ufuncs with out=, single-threaded; triad in two passes "
        "(5 array accesses per element, credited 3): a lower bound on the machine's bandwidth"
    )
    result["threads_used"] = 1
    return result
