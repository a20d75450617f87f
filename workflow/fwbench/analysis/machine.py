"""What the speed canary said of each cell, for the statistics: which samples they use.

A sample the canary marks slow (`slow_sample`, bench.slow_sample_factor) was taken while the
machine ran slow; `stats.slow_samples: drop` (the default) leaves it out of the statistics,
`keep` keeps it. A process flagged slow_machine keeps every sample: its samples are all the
machine's, and the flag says so. Dropped samples are counted per cell (`slow_samples_dropped`)
and the aggregate keeps them all.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from fwbench.io.variables import V

DROP, KEEP = "drop", "keep"
CHOICES = (DROP, KEEP)


def slow_mask(bench: xr.Dataset) -> xr.DataArray:
    """Per sample of the aggregate (process dimension and all): slow, in a process that the
    canary did not flag slow_machine; all False for aggregates without a canary."""
    if "slow_sample" not in bench:
        return xr.zeros_like(bench["latency_s"], dtype=bool)
    slow = bench["slow_sample"] == 1
    if "slow_machine" in bench:
        slow &= bench["slow_machine"] != 1
    return slow


def apply_choice(bench: xr.Dataset, choice: str) -> tuple[xr.Dataset, xr.DataArray]:
    """The aggregate with the slow samples' latencies NaN under DROP, and the count dropped
    per cell and process (0 under KEEP)."""
    if choice not in CHOICES:
        raise ValueError(f"stats.slow_samples={choice!r}: choose one of {', '.join(CHOICES)}")
    mask = slow_mask(bench)
    if choice == KEEP:
        return bench, xr.zeros_like(mask.isel(repeat=0), dtype=float)
    dropped = mask.sum("repeat").astype(float)
    kept = bench.copy()
    kept["latency_s"] = bench["latency_s"].where(~mask)
    return kept, dropped


def describe_choice(choice: str) -> str:
    if choice == KEEP:
        return "kept: samples the canary marked slow count in the statistics"
    return (
        "dropped: samples the canary marked slow are left out of the statistics (counted in "
        "slow_samples_dropped), except in processes flagged slow_machine, which keep all"
    )


def dropped_total(dropped: xr.DataArray) -> np.ndarray:
    """Per cell, summed over its processes (the process dimension, where there is one)."""
    return dropped.sum("process").values if "process" in dropped.dims else dropped.values


MACHINE, OWN = "machine", "framework"
MACHINE_RHO = (
    0.5  # rank correlation of samples with their canary above which noise is the machine's
)
MIN_PAIRS = 8


def canary_correlation(latency: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Per cell (samples last): Spearman's ρ between each sample and its canary factor, over
    the samples both have; NaN with fewer than MIN_PAIRS or a constant side."""
    from scipy import stats as scipy_stats

    rho = np.full(latency.shape[:-1], np.nan)
    for index in np.ndindex(*latency.shape[:-1]):
        x, y = latency[index], factor[index]
        both = np.isfinite(x) & np.isfinite(y)
        if both.sum() >= MIN_PAIRS and np.ptp(x[both]) > 0 and np.ptp(y[both]) > 0:
            rho[index] = scipy_stats.spearmanr(x[both], y[both]).statistic
    return rho


def noise_source(rho: np.ndarray, slow_machine: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Per measured cell, whose its noise is: the machine's where a process ran on a slow
    machine or the samples follow the canary (ρ ≥ MACHINE_RHO), else the framework's own; ''
    for cells without a canary or not measured."""
    source = np.full(ok.shape, "", dtype=object)
    known = ok & (np.isfinite(rho) | (slow_machine == 1))
    machine = (slow_machine == 1) | (np.nan_to_num(rho) >= MACHINE_RHO)
    source[known & machine] = MACHINE
    source[known & ~machine] = OWN
    return source


SLOW_PROCESS = 1.10  # a process this much slower than its cell's median process is slow


def slow_processes(bench: xr.Dataset, cell_dims: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per cell of the aggregate (before pooling), its slow processes (median above
    SLOW_PROCESS × the median of the cell's process medians), attributed: to the machine where
    the process was flagged slow_machine or its canary, the chain's or the read's, ran slower
    than in the cell's other processes by at least half as much (in log) as its samples did;
    else to the process itself (between-process variation). Processes without a canary are
    not attributed.

    The read decides here though not for a slow sample: its factor moves with the framework's
    footprint, which is the same in every process of one cell, and with the speed of the
    last-level cache, which on a shared VM moves by up to 1.4× for seconds at a time. Across
    the two processes of 116 cells of one sweep, the log ratio of their medians followed the
    log ratio of their read factors (Pearson 0.76, slope 0.89), and took its sign in all 40
    pairs whose read factors differed by more than 15%; the chain's, 0.53."""
    shape = tuple(bench.sizes[d] for d in cell_dims)
    counts = {"slow_processes_machine": np.zeros(shape), "slow_processes_own": np.zeros(shape)}
    if bench.sizes.get("process", 1) < 2:
        return counts
    latency = bench["latency_s"].transpose(*cell_dims, "process", "repeat").values
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells (absent, failed)
        medians = np.nanmedian(latency, axis=-1)
        excess = np.log(medians / np.nanmedian(medians, axis=-1, keepdims=True))
        canary_excess = np.fmax(
            _excess(_per_process(bench, V.canary_factor, cell_dims)),
            _excess(_per_process(bench, "canary_read_factor", cell_dims)),
        )
    flagged = _per_process(bench, "slow_machine", cell_dims) == 1
    slow = excess > np.log(SLOW_PROCESS)
    known = np.isfinite(canary_excess) | flagged
    machine = slow & (flagged | (np.nan_to_num(canary_excess, nan=-np.inf) >= 0.5 * excess))
    counts["slow_processes_machine"] = np.sum(machine, axis=-1).astype(float)
    counts["slow_processes_own"] = np.sum(slow & known & ~machine, axis=-1).astype(float)
    return counts


def _excess(factor: np.ndarray) -> np.ndarray:
    """Each process's log factor over its cell's median process (processes last)."""
    return np.log(factor / np.nanmedian(factor, axis=-1, keepdims=True))


def _per_process(bench: xr.Dataset, name: str, cell_dims: tuple[str, ...]) -> np.ndarray:
    if name not in bench:
        return np.full(tuple(bench.sizes[d] for d in (*cell_dims, "process")), np.nan)
    return bench[name].transpose(*cell_dims, "process").values.astype(float)
