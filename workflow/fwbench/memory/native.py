"""The C side of the hardware stage: fwbench's working-set sweep kernels and the clock chain
(bandwidth_kernels.c), built with the host's C compiler and called through ctypes.

Built at run time with -march=native on the node that measures, into a scratch directory, so
the binary always matches the cores it times. Runs inside a hardware worker process, whose
OpenMP thread count and affinity `setup_threads` has already set.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from fwbench.memory.levels import ARRAYS_PER_KERNEL, SWEEP_KERNELS

SOURCE = Path(__file__).with_name("bandwidth_kernels.c")
CFLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")
ELEMENT_BYTES = 8  # double
LANES = 32  # elements per array per thread are a multiple of this (the read kernel's unroll)
KERNEL_IDS = {"read": 0, "copy": 1, "triad": 2}
ERRORS = {
    -1.0: "bad arguments",
    -2.0: "allocation failed",
    -3.0: "validation failed: the arrays do not hold the values the kernel must leave",
}
CLOCK_ITERATIONS = 50_000_000  # 800 M dependent adds: about 0.2 s at 4 GHz
PLAUSIBLE_CLOCK_HZ = (0.3e9, 7.0e9)  # outside: the chain did not run at one add per cycle


class NativeKernels:
    """The compiled library; `compiler` records what built it."""

    def __init__(self, library: ctypes.CDLL, compiler: dict[str, Any]):
        self.compiler = compiler
        self._sweep = library.fw_sweep_point
        self._sweep.restype = ctypes.c_double
        self._sweep.argtypes = (ctypes.c_int, ctypes.c_long, ctypes.c_long)
        self._threads = library.fw_threads
        self._threads.restype = ctypes.c_int
        self._clock = library.fw_clock_hz
        self._clock.restype = ctypes.c_int
        self._clock.argtypes = (ctypes.c_long, ctypes.POINTER(ctypes.c_double), ctypes.c_int)

    @property
    def threads(self) -> int:
        return self._threads()

    def point_seconds(self, kernel: str, elements_per_thread: int, reps: int) -> float:
        seconds = self._sweep(KERNEL_IDS[kernel], elements_per_thread, reps)
        if seconds < 0:
            raise RuntimeError(
                f"sweep kernel {kernel} ({elements_per_thread} elements/thread × {reps}): "
                f"{ERRORS.get(seconds, seconds)}"
            )
        return seconds

    def clock_hz(self, iterations: int = CLOCK_ITERATIONS) -> list[float]:
        """Each thread's clock, measured on all threads at once; [] where not supported."""
        capacity = 1024
        hz = (ctypes.c_double * capacity)()
        count = self._clock(iterations, hz, capacity)
        return [hz[i] for i in range(count)]


def compiler_command() -> list[str]:
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise RuntimeError(
            f"no C compiler {compiler!r} on PATH: the cache-level sweep and the clock "
            "measurement need one (install gcc, or set CC)"
        )
    return [compiler]


def build(directory: str | os.PathLike) -> NativeKernels:
    """Compile bandwidth_kernels.c into `directory` and load it."""
    command = compiler_command()
    library = Path(directory) / "libfwbench_kernels.so"
    build_command = [*command, *CFLAGS, "-o", str(library), str(SOURCE)]
    completed = subprocess.run(build_command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"building {SOURCE.name} failed: {completed.stderr.strip()}")
    version = subprocess.run([*command, "--version"], capture_output=True, text=True).stdout
    compiler = {"command": " ".join(build_command), "version": version.splitlines()[0]}
    return NativeKernels(ctypes.CDLL(str(library)), compiler)


def elements_per_thread(working_set_bytes: int, kernel: str, threads: int) -> int:
    """Elements per array per thread so the kernel's arrays over all threads total about
    `working_set_bytes` (rounded down to the unroll, at least one unroll)."""
    per_array = working_set_bytes / (ARRAYS_PER_KERNEL[kernel] * threads * ELEMENT_BYTES)
    return max(LANES, int(per_array) // LANES * LANES)


def time_point(
    kernels: NativeKernels,
    kernel: str,
    elements: int,
    threads: int,
    min_seconds: float,
    trials: int,
) -> dict[str, Any]:
    """Repetitions doubled until one run lasts `min_seconds`, then the best of `trials` runs."""
    reps = 1
    while kernels.point_seconds(kernel, elements, reps) < min_seconds:
        reps *= 2
    times = [kernels.point_seconds(kernel, elements, reps) for _ in range(trials)]
    working_set = ARRAYS_PER_KERNEL[kernel] * elements * ELEMENT_BYTES * threads
    return {
        "kernel": kernel,
        "working_set_bytes": working_set,
        "elements_per_thread": elements,
        "reps": reps,
        "times_s": times,
        "bandwidth_Bps": working_set * reps / min(times),
    }


def sweep(sizes: list[int], min_seconds: float, trials: int) -> dict[str, Any]:
    """The bandwidth curve: every kernel at every working-set size (bytes over all threads)."""
    with tempfile.TemporaryDirectory(prefix="fwbench-native-") as scratch:
        kernels = build(scratch)
        threads = kernels.threads
        curve = [
            time_point(
                kernels,
                kernel,
                elements_per_thread(size, kernel, threads),
                threads,
                min_seconds,
                trials,
            )
            for size in sizes
            for kernel in SWEEP_KERNELS
        ]
    return {
        "curve": curve,
        "threads_used": threads,
        "compiler": kernels.compiler,
        "validation": "every point's arrays checked after its last repetition (C side)",
        "method": (
            "C + OpenMP (bandwidth_kernels.c): per thread private arrays, first-touched by "
            "their thread; read s += a[i] (32 accumulators), copy c[i] = a[i], triad a[i] = "
            "b[i] + 3 c[i], repeated inside one parallel region; bytes as STREAM counts them"
        ),
    }


def clock() -> dict[str, Any]:
    """The clock every worker thread runs at under load, from a dependent-add chain."""
    with tempfile.TemporaryDirectory(prefix="fwbench-native-") as scratch:
        kernels = build(scratch)
        per_thread = kernels.clock_hz()
    if not per_thread:
        return {"clock_hz": None, "problem": "no dependent-add chain for this ISA"}
    low, high = PLAUSIBLE_CLOCK_HZ
    if not all(low <= hz <= high for hz in per_thread):
        return {
            "clock_hz": None,
            "per_thread_hz": per_thread,
            "problem": f"implausible clock {per_thread} Hz: the add chain did not run at one "
            "add per cycle on this core",
        }
    return {
        "clock_hz": min(per_thread),
        "per_thread_hz": per_thread,
        "method": (
            "16 dependent integer adds per loop iteration retire at 1 per cycle; adds ÷ seconds"
            ", all threads at once (the all-core clock, turbo included); the slowest thread"
        ),
        "compiler": kernels.compiler,
    }
