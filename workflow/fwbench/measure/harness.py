"""The timing loop and the conditions around it: exclusivity, contention, provenance."""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import psutil


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
    latency_s: np.ndarray
    busy_cpu_other: float
    load_before: float
    load_after: float


def _cpu_busy_seconds() -> float:
    times = psutil.cpu_times()
    return (
        times.user
        + times.nice
        + times.system
        + getattr(times, "irq", 0.0)
        + getattr(times, "softirq", 0.0)
    )


def _own_cpu_seconds() -> float:
    times = psutil.Process().cpu_times()
    return times.user + times.system + times.children_user + times.children_system


class OtherCpu:
    """Other processes' CPU use over a window, in cores: the machine's busy time minus ours.
    The kernel counts in 10 ms ticks: a window under MIN_WINDOW_S reads as NaN, not as noise."""

    MIN_WINDOW_S = 0.1

    def __enter__(self) -> OtherCpu:
        self._machine, self._own = _cpu_busy_seconds(), _own_cpu_seconds()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._start
        other = (_cpu_busy_seconds() - self._machine) - (_own_cpu_seconds() - self._own)
        self.cores = max(other, 0.0) / elapsed if elapsed >= self.MIN_WINDOW_S else math.nan


def time_calls(
    call: Callable[[], Any],
    sync: Callable[[Any], None],
    warmup: int,
    repeats: int,
    quiet_probe_s: float = 0.2,
) -> Timing:
    """First call (compile + run) timed alone, `warmup` untimed calls, then `repeats` calls
    each timed with perf_counter_ns around call + sync.

    Contention: other processes' CPU use, in cores, during the warm and timed calls and during
    a `quiet_probe_s` idle probe just before them (the calls alone can be too short for the
    kernel's 10 ms accounting); the larger of the two is kept.
    """
    load_before = os.getloadavg()[0]
    start = time.perf_counter_ns()
    sync(call())
    first_call_s = (time.perf_counter_ns() - start) * 1e-9

    with OtherCpu() as probe:
        time.sleep(quiet_probe_s)
    latency_ns = np.empty(repeats, dtype=np.int64)
    with OtherCpu() as during:
        warmup_start = time.perf_counter()
        for _ in range(warmup):
            sync(call())
        warmup_s = time.perf_counter() - warmup_start
        for i in range(repeats):
            start = time.perf_counter_ns()
            sync(call())
            latency_ns[i] = time.perf_counter_ns() - start
    return Timing(
        first_call_s=first_call_s,
        warmup_s=warmup_s,
        latency_s=latency_ns * 1e-9,
        busy_cpu_other=float(np.nanmax([probe.cores, during.cores])),
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )
