"""Is anything else competing for the CPU while a cell is timed? The signals, all recorded raw.

- Other processes' CPU use, in cores: the machine's busy time minus this process's, during an
  idle probe just before the loop (`other_cores_probe`) and during the warm-up and timed calls
  (`other_cores_during`). This is what flags a cell: calibrated with
  self_measurement/contention_calibration.py on the 2-core development VM (15 quiet and 15
  disturbed cells of torch, jax and tensorflow at 2 threads), quiet cells read at most 0.17
  cores and cells beside a CPU hog at least 0.78, so the default 0.25 separates them.
- CPU pressure (Linux PSI, /proc/pressure/cpu): the share of the loop in which some runnable
  task waited for a CPU. It sees a hog on our cores, but also a framework's own threads waiting
  for each other: quiet JAX and TensorFlow cells read 0.22–0.34 in that calibration (their
  pools plus the Python thread outnumber 2 cores), torch 0.00–0.10. So it is recorded, and it
  flags only where the config sets `bench.pressure_threshold` (off by default).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

PRESSURE_FILE = Path("/proc/pressure/cpu")


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


def cpu_stall_seconds(path: Path = PRESSURE_FILE) -> float:
    """PSI's cumulative 'some' CPU stall time, in seconds; NaN where the kernel has no PSI."""
    try:
        line = path.read_text().splitlines()[0]
    except (OSError, IndexError):
        return math.nan
    fields = dict(part.split("=", 1) for part in line.split()[1:])
    return int(fields["total"]) * 1e-6


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


class CpuPressure:
    """The share of a window in which some task waited for a CPU (PSI 'some'); NaN without
    PSI."""

    def __init__(self, path: Path = PRESSURE_FILE) -> None:
        self._path = path

    def __enter__(self) -> CpuPressure:
        self._stall = cpu_stall_seconds(self._path)
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._start
        self.stall_s = cpu_stall_seconds(self._path) - self._stall
        self.share = self.stall_s / elapsed if elapsed > 0 else math.nan


@dataclass(frozen=True)
class Thresholds:
    """Above either, a cell is contended: others' CPU use in cores (before or during the loop),
    or the share of the loop stalled on CPU (only when `pressure_share` is set)."""

    pressure_share: float | None
    other_cores: float

    def contended(self, pressure_share: float, other_cores: float) -> bool:
        stalled = self.pressure_share is not None and pressure_share > self.pressure_share
        return bool(stalled or other_cores > self.other_cores)
