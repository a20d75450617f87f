"""A cell's speed canary: its baseline from the hardware file, and what its probes say: per
sample the machine's speed factor, per process whether the machine was slow
(fwbench.memory.canary measures, this module decides and records).

A sample's factor is its chain over the quiet baseline's median: fixed work on the core
running slower (a busy host, steal, a lower clock). The read of the cell's memory level is
recorded beside it (`read_factor`) and decides nothing: between a framework's samples it reads
a level the sample has just partly evicted, so on an idle 2-core Zen 4 VM its median moved
between 0.8 and 1.3 of the quiet baseline with the framework's footprint and the host's shared
cache (self_measurement/canary_read_bias.py measures it), while the chain stayed within
0.96-0.99 and a memory-bandwidth hog on the other core slowed the cells by at most 4%. Its on-CPU
share is the process's CPU time over the sample's wall time: below 1 where something else
held the cell's one core (a hog time-sharing it; host steal where the kernel accounts it).
The probe alone cannot see time-sharing: a framework that waits in one thread while another
computes gets the sleeper's credit, and its probes run at full speed between samples that
took twice as long. A sample is slow above `slow_sample_factor`, or, in a one-thread cell on
CPU, below `slow_on_cpu`; a process is on a slow machine when its canary's median factor is
above `slow_machine_factor` or more than `slow_share` of its samples are slow. The thresholds
are calibrated by self_measurement/canary_calibration.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fwbench.host.harness import Timing
from fwbench.io.cell_file import Cell
from fwbench.io.hardware_file import HardwareRecord, read_hardware_record
from fwbench.io.variables import V
from fwbench.memory.canary import Canary, CanaryWork, level_for
from fwbench.plan.request import CellRequest


@dataclass(frozen=True)
class SpeedThresholds:
    slow_sample_factor: float
    slow_machine_factor: float
    slow_share: float
    slow_on_cpu: float = 0.0  # 0: the on-CPU share marks nothing


@dataclass(frozen=True)
class Baseline:
    """The quiet medians of one level's probe (chain, read), from the hardware file."""

    work: CanaryWork
    chain_s: float
    read_s: float
    source: str


@dataclass
class SpeedReading:
    factor: np.ndarray  # per sample: the chain ÷ its baseline median
    read_factor: np.ndarray  # per sample: the level's read ÷ its baseline median (recorded)
    slow: np.ndarray  # per sample: factor above slow_sample_factor, or on-CPU share below
    on_cpu: np.ndarray  # per sample: process CPU time ÷ wall time (NaN where not read)
    median_factor: float
    cv_pct: float  # of the factors
    slow_share: float
    slow_machine: bool


def baseline_for(hardware: HardwareRecord | None, working_set_bytes: float) -> Baseline | None:
    """The baseline of the level the cell's working set fits in, from the hardware file's
    record; None without one."""
    if hardware is None or not hardware.canary:
        return None
    works = [level.work for level in hardware.canary]
    level = hardware.canary[works.index(level_for(works, working_set_bytes))]
    return Baseline(level.work, level.chain_median_s, level.read_median_s, hardware.source)


def read_speed(
    canary_s: np.ndarray,
    baseline: Baseline,
    thresholds: SpeedThresholds,
    on_cpu: np.ndarray | None = None,
) -> SpeedReading:
    """The reading of one timed loop's probes (samples × (chain, read) seconds) and, where
    it counts (a one-thread cell on CPU), each sample's on-CPU share."""
    probes = np.asarray(canary_s, dtype=float)
    factor = probes[:, 0] / baseline.chain_s
    read_factor = probes[:, 1] / baseline.read_s
    share = np.full(len(factor), np.nan) if on_cpu is None else np.asarray(on_cpu, dtype=float)
    slow = (factor > thresholds.slow_sample_factor) | (share < thresholds.slow_on_cpu)
    median = float(np.median(factor)) if len(factor) else math.nan
    cv = float(100 * np.std(factor, ddof=1) / np.mean(factor)) if len(factor) > 1 else math.nan
    slow_share = float(np.mean(slow)) if len(slow) else math.nan
    slow_machine = median > thresholds.slow_machine_factor or slow_share > thresholds.slow_share
    return SpeedReading(
        factor, read_factor, slow, share, median, cv, slow_share, bool(slow_machine)
    )


@dataclass
class CellCanary:
    """A cell's canary and the baseline its probes are read against."""

    canary: Canary
    baseline: Baseline

    @property
    def buffer_bytes(self) -> int:
        return self.baseline.work.buffer_bytes

    def probe(self) -> tuple[float, float]:
        return self.canary.probe()


def cell_canary(request: CellRequest, cell: Cell) -> CellCanary | None:
    """The canary of the cell's memory level (its working set, already in `cell`); None, with
    the reason recorded in the cell, where the hardware file holds no baseline."""
    hardware = read_hardware_record(request.hardware) if request.hardware else None
    baseline = baseline_for(hardware, cell.scalars["working_set_bytes"])
    if baseline is None:
        cell.attrs["canary"] = (
            "none: no hardware file given"
            if hardware is None
            else f"none: {request.hardware} has no canary baseline (rerun the hardware rule)"
        )
        return None
    work = baseline.work
    cell.attrs["canary"] = (
        f"{work.level}: {work.chain_iterations} × 16 dependent adds and {work.read_elements} "
        f"doubles read × {work.read_reps} of a {work.buffer_bytes} B buffer per piece; "
        f"baseline medians {baseline.chain_s * 1e6:.1f} µs (chain), "
        f"{baseline.read_s * 1e6:.1f} µs (read) from {baseline.source}"
    )
    cell.scalars |= {
        "canary_chain_baseline_s": baseline.chain_s,
        "canary_read_baseline_s": baseline.read_s,
    }
    return CellCanary(Canary(work), baseline)


def record_speed(cell: Cell, timing: Timing, speed: SpeedReading | None) -> None:
    """The canary's probes per sample and what they say, into the cell."""
    if speed is None:
        return
    cell.series |= {
        "speed_factor": speed.factor,
        "on_cpu": speed.on_cpu,
        "slow_sample": speed.slow.astype(float),
        "canary_chain_s": timing.canary_s[:, 0],
        "canary_read_s": timing.canary_s[:, 1],
    }
    cell.scalars |= {
        V.canary_factor: speed.median_factor,
        "canary_read_factor": float(np.median(speed.read_factor)),
        "on_cpu_median": float(np.median(speed.on_cpu)),
        "canary_cv_pct": speed.cv_pct,
        "slow_samples": float(np.sum(speed.slow)),
        "canary_share": timing.canary_wall_s / timing.loop_wall_s,
    }
    cell.attrs["slow_machine"] = int(speed.slow_machine)
