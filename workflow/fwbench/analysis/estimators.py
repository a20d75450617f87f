"""Estimators over raw timings: descriptive statistics, the bootstrap CI of a median and the
bootstrap standard error of a log ratio of medians, and the break-even iteration count of
compiling. The bootstraps serve a system without any spread between processes (every cell in
one process and no rounds: fwbench.analysis.process_spread) and the version compare
(fwbench.analysis.compare); where there is a spread, the medians' CIs and the ratios come
from it and from the rounds.

Bootstrap CIs use the percentile method: for a median of a few dozen timings the bootstrap
distribution is lumpy, and BCa's jackknife correction is unreliable there. The caller passes
the random generator (fwbench.rng.seeded_rng), so each CI can be seeded on its own.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from scipy import stats as scipy_stats

from fwbench.io.variables import V
from fwbench.rng import seeded_rng


def t_quantile(confidence: float, dof: float) -> float:
    """The two-sided quantile at `confidence`: Student's t at `dof`, the normal's at infinite
    dof (every interval the project prints takes its quantile here)."""
    law = scipy_stats.norm if math.isinf(dof) else scipy_stats.t(dof)
    return float(law.ppf((1 + confidence) / 2))


def log_interval(value: float, se: float, dof: float, confidence: float) -> tuple[float, float]:
    """value ± t · se on the log scale (t_quantile)."""
    half = t_quantile(confidence, dof) * se if se else 0.0
    return value - half, value + half


def welch_satterthwaite(terms: list[tuple[float, float]]) -> tuple[float, float]:
    """(Σ variance, its Welch–Satterthwaite dof) of independent variance terms, each
    (variance, dof); (0, ∞) where every term is 0; a term at infinite dof adds no
    uncertainty of its own."""
    total = sum(v for v, _ in terms)
    if total == 0:
        return 0.0, math.inf
    return total, total**2 / sum(v * v / dof for v, dof in terms if v)


def describe(latency_s: np.ndarray) -> dict[str, np.ndarray]:
    """Descriptive statistics over the last axis (the repeats), NaNs ignored; NaN for cells
    without samples (σ and CV need two)."""
    latency_s = np.asarray(latency_s, dtype=float)
    n = np.sum(np.isfinite(latency_s), axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices of absent cells
        q25, median, q75, p95 = np.nanpercentile(latency_s, [25, 50, 75, 95], axis=-1)
        mean = np.nanmean(latency_s, axis=-1)
        std = np.where(n >= 2, np.nanstd(latency_s, axis=-1, ddof=1), np.nan)
        return {
            "n": n.astype(float),
            V.median_s: median,
            "mean_s": mean,
            "std_s": std,
            "cv_pct": 100.0 * std / mean,
            "iqr_s": q75 - q25,
            "min_s": np.nanmin(latency_s, axis=-1),
            "p95_s": p95,
        }


def _bootstrap(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
):
    """scipy's percentile bootstrap of `statistic`, each sample resampled on its own and its
    NaNs dropped; None with fewer than two values in a sample."""
    samples = tuple(s[np.isfinite(s)] for s in (np.asarray(s, dtype=float) for s in samples))
    if min(len(s) for s in samples) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy_stats.DegenerateDataWarning)  # all equal
        return scipy_stats.bootstrap(
            samples,
            statistic,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            paired=False,
            rng=rng,
        )


def _median(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(sample, axis=axis)


def _log_ratio_of_medians(
    numerator: np.ndarray, denominator: np.ndarray, axis: int = -1
) -> np.ndarray:
    return np.log(np.median(numerator, axis=axis) / np.median(denominator, axis=axis))


def median_ci(
    sample: np.ndarray, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median; NaN with fewer than two samples."""
    result = _bootstrap((sample,), _median, confidence, resamples, rng)
    if result is None:
        return math.nan, math.nan
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def log_ratio_se(
    numerator: np.ndarray, denominator: np.ndarray, resamples: int, rng: np.random.Generator
) -> float:
    """The bootstrap standard error of log(median(numerator) / median(denominator)), each
    sample resampled on its own; NaN with fewer than two values in one."""
    result = _bootstrap((numerator, denominator), _log_ratio_of_medians, 0.95, resamples, rng)
    return math.nan if result is None else float(result.standard_error)


def break_even_iterations(
    eager_first_s: float, eager_median_s: float, compiled_first_s: float, compiled_median_s: float
) -> float:
    """Smallest n >= 1 with compiled_first + (n-1)·compiled_median <= eager_first +
    (n-1)·eager_median: the calls after which compiling has paid for itself. inf when it never
    does, NaN when an input is missing."""
    values = (eager_first_s, eager_median_s, compiled_first_s, compiled_median_s)
    if any(math.isnan(v) for v in values):
        return math.nan

    def compiled_wins(n: int) -> bool:
        return (
            compiled_first_s + (n - 1) * compiled_median_s
            <= eager_first_s + (n - 1) * eager_median_s
        )

    if compiled_wins(1):
        return 1.0
    gain_per_call = eager_median_s - compiled_median_s
    if gain_per_call <= 0:
        return math.inf
    n = 1 + math.ceil((compiled_first_s - eager_first_s) / gain_per_call)
    # The division rounds; settle the exact boundary with the inequality itself.
    while n > 2 and compiled_wins(n - 1):
        n -= 1
    while not compiled_wins(n):
        n += 1
    return float(n)


def cell_median_cis(
    latency: np.ndarray,
    ok: np.ndarray,
    names: np.ndarray,
    confidence: float,
    resamples: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of each `ok` cell's median CI over its timings (cells × repeat), seeded
    from (seed, the cell's name): the CI of a one-process sweep (several processes:
    fwbench.analysis.process_spread)."""
    low, high = np.full(ok.shape, np.nan), np.full(ok.shape, np.nan)
    for position in zip(*np.nonzero(ok), strict=True):
        rng = seeded_rng(seed, str(names[position]))
        low[position], high[position] = median_ci(latency[position], confidence, resamples, rng)
    return low, high


def ci_level(processes: int, spread: bool, from_rounds: bool = False) -> str:
    """Which variation a median's CI covers, for the report (`spread`: from the spread between
    processes, else the bootstrap; `from_rounds`: that spread pooled over the rounds' sets)."""
    if spread and from_rounds:
        return (
            f"between processes: cells measured in {processes} fresh process"
            f"{'es' if processes > 1 else ''} each (k, `process_count`); the medians' CIs are "
            "median × exp(± t·σ/√k), σ the spread of log medians between fresh workers of "
            "one variant pooled over the rounds' variants and tables (a worker in every set, "
            "the sets spread over the sweep; fwbench.analysis.process_spread): it holds the "
            "machine's hour-to-hour state as it reached the variants, so a CI covers the "
            "latency at the machine's mean state over the sweep; `state_sigma` reports how "
            "far that state moved the variant (γ²τ², fwbench.analysis.rounds), counted once, "
            "in σ. Where the rounds measured a variant, its median (`paired_median_s`) is the "
            "rounds', with a CI at the sets' mean state (σ²[v]/S)"
        )
    if spread:
        return (
            f"between processes: cells measured in up to {processes} fresh process"
            f"{'es' if processes > 1 else ''} (k, `process_count`); the medians' CIs are "
            "median × exp(± t·√(σ²/k + γ²τ²)), σ the spread of log process medians pooled over "
            "the system's cells measured in several processes "
            "(fwbench.analysis.process_spread), γ²τ² how far the machine's state moved "
            "the variant's latency between the rounds' sets (`state_sigma`; "
            "fwbench.analysis.rounds), so they cover between-process, within-process and the "
            "sweep's hour-to-hour variation; a ratio of two medians the rounds did not measure "
            "together adds both cells' σ²/k (Student's t)"
        )
    return (
        "bootstrap over the timings of one process (medians' CIs and every ratio's standard "
        "error): within-process variation only (the rounds, or bench.processes > 1, add the "
        "between-process level)"
    )
