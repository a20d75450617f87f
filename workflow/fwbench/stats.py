"""Statistics of the aggregate: results/summary/stats.nc, stats.csv and tables/*.md.

Per cell (framework, mode, arch, batch), from the warm iterations: median, mean, σ (ddof 1),
CV %, IQR, min, p95 and a bootstrap CI of the median; the roofline metrics (fwbench.roofline);
compile overhead (first call − median). Per compiled mode against the same framework's eager
cell: speedup (eager median / compiled median) with a bootstrap CI of that ratio, and the
break-even iteration count. Per (arch, batch): the winners (fwbench.significance). Flags:
`high_cv` (CV above the threshold), `contended` (the machine was busy during the cell),
`invalid_fast` (faster than the roofline allows), `not_compiled` (a compiled mode that the
framework ran eagerly). Failed cells stay in every output as failed rows with their error.

Bootstrap CIs use the percentile method: for a median of a few dozen timings the bootstrap
distribution is lumpy, and BCa's jackknife correction is unreliable there. Each cell's
resampling is seeded from (seed, the cell's name), so a CI does not depend on the other cells.
"""

from __future__ import annotations

import math
import os
import warnings
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as scipy_stats

from fwbench import dataset
from fwbench.aggregate import CELL_DIMS
from fwbench.atomic import write_text
from fwbench.roofline import INVALID_FAST, HardwareLimits, roofline
from fwbench.significance import WINNER, Contest, decide
from fwbench.tables import render_tables

EAGER_MODE = "eager"
SCOPES = ("compiled", "all")  # winners among compiled variants, and among all variants
FLAG_HIGH_CV, FLAG_CONTENDED, FLAG_NOT_COMPILED = "high_cv", "contended", "not_compiled"
FLAG_MEANINGS = {
    FLAG_HIGH_CV: "coefficient of variation above the threshold: too noisy to trust",
    FLAG_CONTENDED: "other processes used the CPU during the timed loop",
    INVALID_FAST: "faster than the roofline lower bound: a missing sync or a wrong cost model",
    FLAG_NOT_COMPILED: "a compiled mode that the framework ran uncompiled (a silent fallback)",
}
TABLES = ("latency", "compile_speedup", "efficiency", "winners", "failed", "flagged")

# The per-cell variables of stats.nc, with units; these are also the columns of stats.csv.
CELL_UNITS = {
    "n": "1",
    "median_s": "s",
    "mean_s": "s",
    "std_s": "s",
    "cv_pct": "%",
    "iqr_s": "s",
    "min_s": "s",
    "p95_s": "s",
    "median_ci_low_s": "s",
    "median_ci_high_s": "s",
    "first_call_s": "s",
    "compile_overhead_s": "s",
    "flops": "FLOP",
    "bytes": "B",
    "arithmetic_intensity": "FLOP/B",
    "achieved_flops_per_s": "FLOP/s",
    "lower_bound_s": "s",
    "efficiency": "1",
    "speedup_vs_eager": "1",
    "speedup_ci_low": "1",
    "speedup_ci_high": "1",
    "break_even_iterations": "1",
    "compiled": "1",
    "contended": "1",
    "busy_cpu_other": "cores",
}
CELL_TEXT = {
    "status": "'ok' | 'failed' | 'absent' (no cell for this position)",
    "error_type": "exception class of a failed cell",
    "error": "why the cell failed",
    "bound": "'compute' or 'memory': which roof sets the lower bound",
    "flags": "comma-separated: " + ", ".join(FLAG_MEANINGS),
}


@dataclass(frozen=True)
class StatsSettings:
    """The config's `stats` section (defaults as in the schema) and the run's seed."""

    cv_threshold_pct: float = 10.0
    alpha: float = 0.01
    confidence: float = 0.95
    bootstrap_resamples: int = 2000
    table_batch: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "cv_threshold_pct": self.cv_threshold_pct > 0,
            "alpha": 0 < self.alpha < 1,
            "confidence": 0 < self.confidence < 1,
            "bootstrap_resamples": self.bootstrap_resamples >= 1,
            "table_batch": self.table_batch >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"stats.{name}={getattr(self, name)!r} is out of range")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], seed: int = 0) -> StatsSettings:
        unknown = set(values) - {f for f in cls.__dataclass_fields__ if f != "seed"}
        if unknown:
            raise ValueError(f"unknown stats settings: {', '.join(sorted(unknown))}")
        return cls(**values, seed=seed)


# --- descriptive statistics ------------------------------------------------------------------


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
            "median_s": median,
            "mean_s": mean,
            "std_s": std,
            "cv_pct": 100.0 * std / mean,
            "iqr_s": q75 - q25,
            "min_s": np.nanmin(latency_s, axis=-1),
            "p95_s": p95,
        }


def seeded_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _bootstrap_ci(
    samples: tuple[np.ndarray, ...],
    statistic: Callable[..., np.ndarray],
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    samples = tuple(s[np.isfinite(s)] for s in (np.asarray(s, dtype=float) for s in samples))
    if min(len(s) for s in samples) < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy_stats.DegenerateDataWarning)  # all equal
        result = scipy_stats.bootstrap(
            samples,
            statistic,
            n_resamples=resamples,
            confidence_level=confidence,
            method="percentile",
            vectorized=True,
            paired=False,
            rng=rng,
        )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _median(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(sample, axis=axis)


def _ratio_of_medians(numerator: np.ndarray, denominator: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(numerator, axis=axis) / np.median(denominator, axis=axis)


def median_ci(
    sample: np.ndarray, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the median; NaN with fewer than two samples."""
    return _bootstrap_ci((sample,), _median, confidence, resamples, rng)


def ratio_of_medians_ci(
    numerator: np.ndarray,
    denominator: np.ndarray,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of median(numerator) / median(denominator), each sample
    resampled independently."""
    return _bootstrap_ci((numerator, denominator), _ratio_of_medians, confidence, resamples, rng)


# --- compile speedup -------------------------------------------------------------------------


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


# --- the summary -----------------------------------------------------------------------------


def _variant(framework: str, mode: str) -> str:
    return f"{framework}/{mode}"


def _cell_values(bench: xr.Dataset, name: str) -> np.ndarray:
    """A per-cell variable of the aggregate in CELL_DIMS order (NaN when it is missing)."""
    if name not in bench:
        return np.full(tuple(bench.sizes[d] for d in CELL_DIMS), np.nan)
    return bench[name].transpose(*CELL_DIMS).values


def _flags(
    cv_pct: np.ndarray,
    contended: np.ndarray,
    invalid_fast: np.ndarray,
    not_compiled: np.ndarray,
    threshold_pct: float,
) -> np.ndarray:
    flags = np.full(cv_pct.shape, "", dtype=object)
    for flag, mask in (
        (FLAG_HIGH_CV, cv_pct > threshold_pct),
        (FLAG_CONTENDED, contended == 1),
        (INVALID_FAST, invalid_fast),
        (FLAG_NOT_COMPILED, not_compiled),
    ):
        flags[mask] = [f"{old},{flag}" if old else flag for old in flags[mask]]
    return flags


def summarize(bench: xr.Dataset, limits: HardwareLimits, settings: StatsSettings) -> xr.Dataset:
    """stats.nc as a Dataset: per-cell statistics, speedups, winners; provenance in attrs."""
    frameworks, modes, archs, batches = (bench[d].values.tolist() for d in CELL_DIMS)
    status = _cell_values(bench, "status").astype(object)
    ok = status == dataset.STATUS_OK
    latency = bench["latency_s"].transpose(*CELL_DIMS, "repeat").values.copy()
    latency[~ok] = np.nan  # a failed cell's partial timings are not statistics

    cells: dict[str, np.ndarray] = describe(latency)
    cells["median_ci_low_s"] = np.full(ok.shape, np.nan)
    cells["median_ci_high_s"] = np.full(ok.shape, np.nan)
    for position in zip(*np.nonzero(ok), strict=True):
        f, m, a, b = position
        name = f"{frameworks[f]}/{modes[m]}/{archs[a]}/{batches[b]}"
        low, high = median_ci(
            latency[position],
            settings.confidence,
            settings.bootstrap_resamples,
            seeded_rng(settings.seed, name),
        )
        cells["median_ci_low_s"][position] = low
        cells["median_ci_high_s"][position] = high

    for name in ("first_call_s", "flops", "bytes", "compiled", "contended", "busy_cpu_other"):
        cells[name] = np.where(ok, _cell_values(bench, name), np.nan)
    cells["compile_overhead_s"] = cells["first_call_s"] - cells["median_s"]
    metrics = roofline(cells["flops"], cells["bytes"], cells["median_s"], limits)
    cells["arithmetic_intensity"] = metrics.arithmetic_intensity
    cells["achieved_flops_per_s"] = metrics.achieved_flops_per_s
    cells["lower_bound_s"] = metrics.lower_bound_s
    cells["efficiency"] = metrics.efficiency
    cells |= _speedups(latency, cells, frameworks, modes, archs, batches, settings)

    is_compiled_mode = np.array([m != EAGER_MODE for m in modes])[None, :, None, None]
    text = {
        "status": status,
        "error_type": _cell_values(bench, "error_type").astype(object),
        "error": _cell_values(bench, "error").astype(object),
        "bound": metrics.bound,
        "flags": _flags(
            cells["cv_pct"],
            cells["contended"],
            metrics.invalid_fast,
            ok & is_compiled_mode & (cells["compiled"] == 0),
            settings.cv_threshold_pct,
        ),
    }
    data_vars: dict[str, Any] = {
        name: (CELL_DIMS, cells[name], {"units": unit}) for name, unit in CELL_UNITS.items()
    }
    data_vars |= {
        name: (CELL_DIMS, values, {"description": CELL_TEXT[name]}) for name, values in text.items()
    }
    if "framework_version" in bench:
        data_vars["framework_version"] = bench["framework_version"]
    data_vars |= _winners(latency, ok, frameworks, modes, archs, batches, settings.alpha)

    summary = xr.Dataset(data_vars, coords={d: bench[d].values for d in CELL_DIMS})
    summary = summary.assign_coords(scope=list(SCOPES))
    summary.attrs.update(bench.attrs)
    summary.attrs |= {f"stats_{key}": value for key, value in asdict(settings).items()}
    summary.attrs |= {
        "roofline": limits.describe(),
        "roofline_peak_flops_per_s": limits.peak_flops_per_s,
        "roofline_bandwidth_Bps": limits.bandwidth_Bps,
        "roofline_ridge_flop_per_byte": limits.ridge_flop_per_byte,
        "roofline_reported_ridge_flop_per_byte": limits.reported_ridge_flop_per_byte,
        "flags": "; ".join(f"{flag}: {meaning}" for flag, meaning in FLAG_MEANINGS.items()),
        "bootstrap": "percentile method, each cell seeded from (stats_seed, cell name)",
        "title": "fwbench: statistics, roofline efficiency, compile speedups and winners",
    }
    return summary


def _speedups(
    latency: np.ndarray,
    cells: dict[str, np.ndarray],
    frameworks: list[str],
    modes: list[str],
    archs: list[str],
    batches: list[int],
    settings: StatsSettings,
) -> dict[str, np.ndarray]:
    """Each compiled mode against its framework's eager cell at the same (arch, batch)."""
    out = {
        name: np.full(cells["median_s"].shape, np.nan)
        for name in (
            "speedup_vs_eager",
            "speedup_ci_low",
            "speedup_ci_high",
            "break_even_iterations",
        )
    }
    if EAGER_MODE not in modes:
        return out
    eager = modes.index(EAGER_MODE)
    median, first = cells["median_s"], cells["first_call_s"]
    for f, a, b in np.ndindex(len(frameworks), len(archs), len(batches)):
        if math.isnan(median[f, eager, a, b]):
            continue
        for m, mode in enumerate(modes):
            if m == eager or math.isnan(median[f, m, a, b]):
                continue
            name = f"speedup/{frameworks[f]}/{mode}/{archs[a]}/{batches[b]}"
            out["speedup_vs_eager"][f, m, a, b] = median[f, eager, a, b] / median[f, m, a, b]
            low, high = ratio_of_medians_ci(
                latency[f, eager, a, b],
                latency[f, m, a, b],
                settings.confidence,
                settings.bootstrap_resamples,
                seeded_rng(settings.seed, name),
            )
            out["speedup_ci_low"][f, m, a, b] = low
            out["speedup_ci_high"][f, m, a, b] = high
            out["break_even_iterations"][f, m, a, b] = break_even_iterations(
                first[f, eager, a, b], median[f, eager, a, b], first[f, m, a, b], median[f, m, a, b]
            )
    return out


def _winners(
    latency: np.ndarray,
    ok: np.ndarray,
    frameworks: list[str],
    modes: list[str],
    archs: list[str],
    batches: list[int],
    alpha: float,
) -> dict[str, Any]:
    """The winners variables, dims (arch, batch, scope)."""
    contests = []
    for a, b in np.ndindex(len(archs), len(batches)):
        for scope in SCOPES:
            samples = {
                _variant(framework, mode): latency[f, m, a, b]
                for f, framework in enumerate(frameworks)
                for m, mode in enumerate(modes)
                if ok[f, m, a, b] and (scope == "all" or mode != EAGER_MODE)
            }
            contests.append(Contest(group=(a, b), scope=scope, samples=samples))
    verdicts = decide(contests, alpha)
    shape = (len(archs), len(batches), len(SCOPES))
    dims = ("arch", "batch", "scope")
    columns: dict[str, list[Any]] = {}
    for verdict in verdicts:
        row = asdict(verdict)
        row["tied"] = ", ".join(verdict.tied)
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    units = {
        "fastest_median_s": "s",
        "runner_up_median_s": "s",
        "p_value": "1",
        "p_holm": "1",
        "candidates": "1",
    }
    out: dict[str, Any] = {}
    for key, values in columns.items():
        array = np.array(values, dtype=float if key in units else object).reshape(shape)
        attrs = {"units": units[key]} if key in units else {}
        out[f"winner_{key}" if not key.startswith("winner") else key] = (dims, array, attrs)
    out["winner_verdict"][2]["description"] = (
        f"'{WINNER}': fastest by median and significantly faster than every other variant "
        f"(two-sided Mann–Whitney U, Holm-adjusted p < {alpha} across the table); 'tie': "
        "winner_tied names the variants not significantly slower; 'only': a single variant; "
        "'none': no variant measured"
    )
    return out


# --- outputs ---------------------------------------------------------------------------------


def tidy(summary: xr.Dataset) -> pd.DataFrame:
    """stats.csv: one row per measured or failed cell (absent positions left out)."""
    frame = summary[list(CELL_TEXT) + list(CELL_UNITS)].to_dataframe().reset_index()
    frame = frame[frame["status"] != "absent"]
    if "framework_version" in summary:
        versions = summary["framework_version"].to_series()
        frame.insert(1, "framework_version", frame["framework"].map(versions))
    return frame.reset_index(drop=True)


def write_outputs(
    summary: xr.Dataset,
    stats_nc: str | os.PathLike,
    stats_csv: str | os.PathLike,
    tables: Mapping[str, str | os.PathLike],
) -> None:
    """Write stats.nc, stats.csv and the tables named in TABLES to their paths."""
    missing = [name for name in TABLES if name not in tables]
    if missing:
        raise ValueError(f"no output path for the tables {', '.join(missing)}")
    dataset.write_atomic(summary, stats_nc)
    write_text(tidy(summary).to_csv(index=False), stats_csv)
    for name, text in render_tables(summary).items():
        write_text(text, tables[name])
