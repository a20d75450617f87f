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


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
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


def time_calls(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    warmup: int,
    repeats: int,
    min_sample_s: float = 0.0,
    quiet_probe_s: float = 0.2,
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> Timing:
    """First call (compile + run) timed alone, `warmup` untimed calls, then `repeats` timed
    samples, each perf_counter_ns around k consecutive calls, each call synced; a sample's
    latency is its time ÷ k.

    k (calls_per_sample) is the fewest calls that last `min_sample_s` at the warm-up calls'
    mean (the first call's time without warm-up): a sample of a 30 µs call is then not one
    timer read beside a scheduler tick, and the spread of the samples is that of the
    per-call time, not of the clock and interrupts around one call (as timeit and
    torch.utils.benchmark do).

    `context` (the runner's framework context: inference mode, device scope) is entered once
    around all calls, so no timed call pays for entering it; the garbage collector is off
    during the warm-up and timed calls. Contention (fwbench.host.contention): CPU pressure
    during the warm and timed calls, and other processes' CPU use during them and during a
    `quiet_probe_s` idle probe just before them.
    """
    load_before = os.getloadavg()[0]
    with context():
        start = time.perf_counter_ns()
        sync(call())
        first_call_s = (time.perf_counter_ns() - start) * 1e-9

        with OtherCpu() as probe:
            time.sleep(quiet_probe_s)
        latency_ns = np.empty(repeats, dtype=np.int64)
        with _no_gc(), OtherCpu() as during, CpuPressure() as pressure:
            warmup_start = time.perf_counter()
            for _ in range(warmup):
                sync(call())
            warmup_s = time.perf_counter() - warmup_start
            calls = calls_per_sample(warmup_s / warmup if warmup else first_call_s, min_sample_s)
            for i in range(repeats):
                start = time.perf_counter_ns()
                for _ in range(calls):
                    sync(call())
                latency_ns[i] = time.perf_counter_ns() - start
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
    )
