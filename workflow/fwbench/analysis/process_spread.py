"""How far a cell's median moves between fresh processes, and the CIs that cover it.

A sweep measures a share of each variant's batches in a few processes (bench.processes,
bench.multi_process_share: fwbench.plan.processes; every low-precision cell in one); a few
processes are too few to bootstrap over (two draws of a process cannot leave the range of the
two), so the spread between processes is pooled over a system's cells (a sweep of one process
per cell pools it over the rounds' variants instead, a fresh worker per set: their medians
span a minute of alternated turns and hold less of the moment's drift than a cell's blocked
samples, σ 0.045 against 0.055 on the 2-core Xeon VM, self_measurement/spread_sources.py): the
log process medians of every cell deviate from their cell's mean by a common scale σ, the
pooled sample standard deviation √(Σ(deviations²) / Σ(k − 1)), with Σ(k − 1) degrees of
freedom. A cell's σ is the larger of its system's and its own (a cell measured in one process:
its system's, at k = 1); without the machine's state (below), its median's CI is
median × exp(± t · σ / √k), Student's t at the pooled degrees of freedom. This is a one-way
random-effects model on log latency;
`python -m fwbench variation` measures how often it covers the median of more
processes than it saw.

A cell's processes ran minutes apart, in whatever state the machine was in then; on a cloud VM
whose speed moves by the hour, σ holds little of that (sweep sC on the 2-core Xeon VM: σ 0.086,
while its rounds' sets, spread over the sweep, saw a state σ of 0.18, and a 5-process rerun
two hours later ran 0.74× its process 0). Where the rounds fitted the machine's state, the CI
adds it as it reaches the variant, γ²τ² (fwbench.analysis.rounds.Rounds.state_variance), not
divided by k: median × exp(± t · √(σ²/k + γ²τ²)), Welch–Satterthwaite's dof. The rerun's
medians, held in 18 % of cells without it, are in 83 % with it (an honest CI of the latency at
the machine's mean state holds a rerun made in another state less often than its level: both
carry the state's variance: 83–88 % where it dominates, by the t of its dof).

Why over the system, not per variant, and why not a robust scale: what differs between two
processes is the host and the process's start (memory layout, allocator, thread placement),
and on the 2-core VMs the variants' own σ (0.11–0.19 from about ten pairs each) differ no more
than ten pairs' sampling error; pooled per variant, one variant whose pairs happened to agree
(jax eager, σ 0.06) got CIs that missed a 5-process median. A slow process whose canary read a
normal machine is the user's reality, so the rare 1.5–2× process belongs in σ (a median
absolute deviation ignored it).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from fwbench.analysis.estimators import log_interval, welch_satterthwaite

MIN_SAMPLES = 2  # a process with fewer usable timings has no median worth pooling
# cell_spreads' key: True where σ was pooled over the rounds' sets, spread over the sweep, so
# it holds the machine's state between them already (spread_cis adds it only to cells' σ)
FROM_ROUNDS = "from_rounds"


def log_process_medians(by_process: np.ndarray) -> np.ndarray:
    """Per process (rows; NaN-padded timings), the log of its median; NaN for processes with
    fewer than MIN_SAMPLES timings."""
    rows = np.asarray(by_process, dtype=float)
    counts = np.sum(np.isfinite(rows), axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        medians = np.nanmedian(rows, axis=-1)
    return np.where(counts >= MIN_SAMPLES, np.log(medians), np.nan)


def _deviations(log_medians: np.ndarray) -> np.ndarray:
    """A cell's log process medians less their mean; empty with fewer than two."""
    values = log_medians[np.isfinite(log_medians)]
    return values - values.mean() if len(values) >= 2 else np.empty(0)


def pooled_sigma(cells: Sequence[np.ndarray]) -> tuple[float, int]:
    """The pooled standard deviation of log process medians over cells (each a process ×
    iteration array) and its degrees of freedom; (NaN, 0) where no cell has two processes."""
    deviations = [_deviations(log_process_medians(cell)) for cell in cells]
    dof = sum(max(len(d) - 1, 0) for d in deviations)
    if dof == 0:
        return math.nan, 0
    return math.sqrt(sum(float(np.sum(d * d)) for d in deviations) / dof), dof


def cell_sigma(by_process: np.ndarray, group_sigma: float) -> tuple[float, int]:
    """A cell's σ (the larger of its group's and its own spread) and its usable processes."""
    log_medians = log_process_medians(by_process)
    values = log_medians[np.isfinite(log_medians)]
    own = float(np.std(values, ddof=1)) if len(values) >= 2 else 0.0
    return max(group_sigma, own), len(values)


def spread_ci(
    median_s: float,
    sigma: float,
    processes: int,
    dof: float,
    confidence: float,
    state: tuple[float, float] = (0.0, math.inf),
) -> tuple[float, float]:
    """median × exp(± t · √(σ² / k + γ²τ²)); `state` the machine's state's variance reaching
    the cell over the sweep, γ²τ², and its dof (fwbench.analysis.rounds: not divided by k, a
    cell's processes ran in the same sweep), Student's t at Welch–Satterthwaite's dof; NaN
    without a σ."""
    if not (dof > 0 and processes > 0 and math.isfinite(sigma) and median_s > 0):
        return math.nan, math.nan
    variance, dof = welch_satterthwaite([(sigma * sigma / processes, dof), state])
    low, high = log_interval(math.log(median_s), math.sqrt(variance), dof, confidence)
    return math.exp(low), math.exp(high)


def log_ratio_spread(spreads: Sequence[tuple[float, int, int]]) -> tuple[float, int]:
    """The σ and dof of the log ratio of two cells' medians from each one's (σ, processes,
    dof): the variances of the two log medians add, at the smaller dof; (NaN, 0) where a
    cell has no spread."""
    if not all(k > 0 and dof > 0 and math.isfinite(s) for s, k, dof in spreads):
        return math.nan, 0
    return math.sqrt(sum(s * s / k for s, k, _ in spreads)), min(dof for _, _, dof in spreads)


def cell_spreads(
    by_process: np.ndarray, ok: np.ndarray, fallback: Sequence[np.ndarray] = ()
) -> dict[str, np.ndarray] | None:
    """Per `ok` cell of one system's (cell dims..., process, iteration) array: its σ, usable
    processes and the dof pooled over all the system's `ok` cells, or, where none was measured
    in two processes, over `fallback` (process × iteration arrays of the same system: the
    rounds' variants, a fresh worker per set; FROM_ROUNDS says which); NaN / 0 elsewhere; None
    where neither has two processes."""
    shape = ok.shape
    out = {"sigma": np.full(shape, np.nan), "processes": np.zeros(shape), "dof": np.zeros(shape)}
    members = list(zip(*np.nonzero(ok), strict=True))
    group_sigma, dof = pooled_sigma([by_process[position] for position in members])
    out[FROM_ROUNDS] = np.array(dof == 0)
    if dof == 0:
        group_sigma, dof = pooled_sigma(fallback)
    if dof == 0:
        return None
    for position in members:
        sigma, k = cell_sigma(by_process[position], group_sigma)
        out["sigma"][position], out["processes"][position], out["dof"][position] = sigma, k, dof
    return out


def spread_at(spreads: dict[str, np.ndarray], position: tuple) -> tuple[float, int, int]:
    """One cell's (σ, processes, dof) out of cell_spreads' arrays."""
    return (
        float(spreads["sigma"][position]),
        int(spreads["processes"][position]),
        int(spreads["dof"][position]),
    )


def spread_cis(
    spreads: dict[str, np.ndarray],
    ok: np.ndarray,
    median_s: np.ndarray,
    confidence: float,
    state_of: Callable[[tuple], tuple[float, float]] = lambda position: (0.0, math.inf),
) -> dict[str, np.ndarray]:
    """The medians' CIs from the spread between processes and the machine's state over the
    sweep (`state_of`: a cell's position to its γ²τ² and dof, spread_ci; not where σ came from
    the rounds' sets, FROM_ROUNDS, which hold the state already: counted once), each cell's σ
    of log process medians, its state's σ (√γ²τ², reported on its own; NaN where the rounds
    fitted no state) and its count of usable processes."""
    low, high = np.full(ok.shape, np.nan), np.full(ok.shape, np.nan)
    state_sigma = np.full(ok.shape, np.nan)
    holds_state = bool(spreads.get(FROM_ROUNDS, False))
    for position in zip(*np.nonzero(ok), strict=True):
        sigma, processes, dof = spread_at(spreads, position)
        state = state_of(position)
        state_sigma[position] = math.sqrt(state[0]) if math.isfinite(state[1]) else math.nan
        low[position], high[position] = spread_ci(
            median_s[position],
            sigma,
            processes,
            dof,
            confidence,
            (0.0, math.inf) if holds_state else state,
        )
    return {
        "median_ci_low_s": low,
        "median_ci_high_s": high,
        "process_sigma": spreads["sigma"],
        "state_sigma": state_sigma,
        "process_count": np.where(ok, spreads["processes"], np.nan),
    }
