"""The timing loop and the conditions around it: exclusivity, contention, provenance."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from fwbench.host.contention import CpuPressure, OtherCpu


@contextlib.contextmanager
def timing_lock(path: str | os.PathLike) -> Iterator[float]:
    """Hold the host-level exclusive lock for a measurement; yields seconds spent waiting.

    Snakemake's `timing_slot` resource already serializes timing jobs within one run; this
    lock also holds across separate runs and whatever `--cores` or `--resources` say.
    """
    start = time.perf_counter()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield time.perf_counter() - start
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far."""
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: KiB on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


@dataclass
class Timing:
    first_call_s: float
    warmup_s: float
    latency_s: np.ndarray  # per sample: the mean of calls_per_sample consecutive calls
    calls_per_sample: int
    busy_cpu_other: float  # the larger of the two other-CPU readings below
    other_cores_probe: float  # others' CPU while this process slept before the loop
    other_cores_during: float  # others' CPU during the warm-up and timed calls
    cpu_pressure: float  # PSI: share of the warm-up and timed calls some task waited for CPU
    load_before: float
    load_after: float
    # The canary (fwbench.memory.canary) after each sample: (chain, read) seconds per sample,
    # and the wall time the probes took and the whole timed loop took, probes included.
    canary_s: np.ndarray | None = None
    # With the canary: per sample, the process's CPU time over the sample's wall time (the
    # share of it the process ran: near `threads` when nothing takes its cores from it).
    on_cpu: np.ndarray | None = None
    canary_wall_s: float = 0.0
    loop_wall_s: float = 0.0

    def gemm_record(self, call: str) -> dict[str, Any]:
        """A hardware GEMM trial's record in the hardware file: every sample, the untimed first
        product (`first_gemm_s`: not a cell's first call), the other-CPU reading, the call."""
        return {
            "times_s": self.latency_s.tolist(),
            "first_gemm_s": self.first_call_s,
            "busy_cpu_other": self.busy_cpu_other,
            "call": call,
        }


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The garbage collector off for the block, as timeit does: a collection is not the
    measured function's cost and lands on whichever iteration it happens in."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def calls_per_sample(call_s: float, min_sample_s: float) -> int:
    """How many consecutive calls one timed sample holds so that it lasts `min_sample_s`:
    one for calls that long already (or when no length is asked for)."""
    if min_sample_s <= 0 or not call_s > 0:
        return 1
    return max(1, math.ceil(min_sample_s / call_s))


def _samples(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    repeats: int,
    calls: int,
    between: Callable[[], tuple[float, float]] | None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, int, int]:
    """The timed samples (ns, each `calls` synced calls); with `between`, the probe after each
    one and the process's CPU time during each (read outside the sample's timer); the probes'
    and the whole loop's ns."""
    latency_ns = np.empty(repeats, dtype=np.int64)
    canary = np.full((repeats, 2), np.nan) if between else None
    cpu_ns = np.zeros(repeats, dtype=np.int64) if between else None
    canary_ns = 0
    loop_start = time.perf_counter_ns()
    for i in range(repeats):
        cpu_start = time.process_time_ns()
        start = time.perf_counter_ns()
        for _ in range(calls):
            sync(call())
        latency_ns[i] = time.perf_counter_ns() - start
        if between is not None:
            cpu_ns[i] = time.process_time_ns() - cpu_start
            canary[i] = between()
            canary_ns += time.perf_counter_ns() - start - latency_ns[i]
    return latency_ns, canary, cpu_ns, canary_ns, time.perf_counter_ns() - loop_start


def warm_up(call: Callable[[], Any], sync: Callable[[Any], None], warmup: int):
    """`warmup` synced calls: their total seconds and the mean of the later half's."""
    later = warmup - warmup // 2
    start = time.perf_counter()
    for _ in range(warmup - later):
        sync(call())
    middle = time.perf_counter()
    for _ in range(later):
        sync(call())
    end = time.perf_counter()
    return end - start, (end - middle) / later if later else math.nan


def time_calls(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    warmup: int,
    repeats: int,
    min_sample_s: float = 0.0,
    quiet_probe_s: float = 0.2,
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
    between: Callable[[], tuple[float, float]] | None = None,
) -> Timing:
    """First call (compile + run) timed alone, `warmup` untimed calls, then `repeats` timed
    samples, each perf_counter_ns around k consecutive calls, each call synced; a sample's
    latency is its time ÷ k.

    k (calls_per_sample) is the fewest calls that last `min_sample_s` at the pace of the later
    half of the warm-up calls (the first call's time without warm-up), as timeit and
    torch.utils.benchmark do: a sample's spread is then the per-call time's, not the clock's
    and interrupts' around one. The first warm-up calls still run slower than the rest (jax's
    jit cells ran 2× slower in them), and a pace read off them left samples half as long as
    asked, and the canary's probes between them up to 6% of the loop.

    `context` (the runner's framework context: inference mode, device scope) is entered once
    around all calls, so no timed call pays for entering it; the garbage collector is off
    during the warm-up and timed calls. Contention (fwbench.host.contention): CPU pressure
    during the warm and timed calls, and other processes' CPU use during them and during a
    `quiet_probe_s` idle probe just before them.

    `between` (the speed canary's probe) runs after each timed sample, outside its timer
    (fwbench.measure.speed): `canary_s`, `on_cpu`, `canary_wall_s` (see Timing).
    """
    load_before = os.getloadavg()[0]
    with context():
        start = time.perf_counter_ns()
        sync(call())
        first_call_s = (time.perf_counter_ns() - start) * 1e-9

        with OtherCpu() as probe:
            time.sleep(quiet_probe_s)
        with no_gc(), OtherCpu() as during, CpuPressure() as pressure:
            warmup_s, pace_s = warm_up(call, sync, warmup)
            calls = calls_per_sample(pace_s if warmup else first_call_s, min_sample_s)
            latency_ns, canary, cpu_ns, canary_ns, loop_ns = _samples(
                call, sync, repeats, calls, between
            )
    return Timing(
        first_call_s=first_call_s,
        warmup_s=warmup_s,
        latency_s=latency_ns * 1e-9 / calls,
        calls_per_sample=calls,
        busy_cpu_other=float(np.fmax(probe.cores, during.cores)),  # NaN only where both are
        other_cores_probe=probe.cores,
        other_cores_during=during.cores,
        cpu_pressure=pressure.share,
        load_before=load_before,
        load_after=os.getloadavg()[0],
        canary_s=canary,
        on_cpu=None if cpu_ns is None else cpu_ns / latency_ns,
        canary_wall_s=canary_ns * 1e-9,
        loop_wall_s=loop_ns * 1e-9,
    )
