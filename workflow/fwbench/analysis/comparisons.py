"""Every comparison fwbench reports, as one kind of record: a pair of cells, the speedup of the
candidate over the baseline (baseline median ÷ candidate median: above 1, the candidate is
faster), its CI, its p values and a verdict with three answers.

The estimate is the log of that ratio with a standard error and degrees of freedom:

- variants measured together in the rounds (fwbench.analysis.rounds: the sets of interleaved
  processes as blocks, each variant with its own sensitivity γ to the machine's state): the
  rounds' μ̂[A] − μ̂[B], se = √((σ²[A] + σ²[B] + (γA − γB)²τ²) / S), Student's t at
  Welch–Satterthwaite's dof;
- else, where the system has a spread between processes (fwbench.analysis.process_spread: σ of
  log process medians pooled over its cells measured in several processes, or over the rounds'
  variants; k the cell's processes, 1 for a cell measured in one): the cells' medians,
  se = √(σ₁²/k₁ + σ₂²/k₂) at the smaller pooled dof, Student's t (no state term);
- else (every cell in one process and no rounds): the bootstrap standard error of the log ratio
  of medians (each cell's timings resampled on their own, seeded from the pair's name), normal
  quantiles.

The verdict, from the CI at `stats.confidence` (the CI printed is the one decided on) and the
minimum practical effect δ = log(1 + min_effect_pct/100):

- FASTER / SLOWER: the CI excludes 1 and the speedup is at least 1 + δ (at most 1/(1 + δ));
- EQUIVALENT: the whole CI lies inside (1/(1 + δ), 1 + δ): two one-sided tests, each at
  (1 − confidence)/2;
- UNDETERMINED: neither: the data allow any speedup in the CI.

`p_difference` is the two-sided p of H0 speedup = 1, `p_equivalence` the larger of the two
one-sided p values against ±δ (below (1 − confidence)/2 exactly when EQUIVALENT).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from fwbench import frameworks
from fwbench.analysis.estimators import log_interval, log_ratio_se
from fwbench.analysis.process_spread import log_ratio_spread, spread_at
from fwbench.analysis.rounds import METHOD as ROUNDS_METHOD
from fwbench.analysis.rounds import Rounds
from fwbench.io.comparisons_file import (
    EQUIVALENT,
    FASTER,
    ROW_DIMS,
    SLOWER,
    UNDETERMINED,
)
from fwbench.io.dims import EAGER_MODE, FLOAT32, CellKey
from fwbench.rng import seeded_rng


@dataclass(frozen=True)
class Levels:
    """The one significance level and minimum effect every verdict uses (config `stats`)."""

    confidence: float
    min_effect_pct: float
    resamples: int = 2000
    seed: int = 0

    @property
    def delta(self) -> float:
        return math.log1p(self.min_effect_pct / 100)


@dataclass(frozen=True)
class Estimate:
    """The log speedup, its standard error and dof (inf: normal), and how it was made."""

    log_speedup: float
    se: float
    dof: float
    method: str


@dataclass(frozen=True)
class Comparison:
    kind: str
    baseline: CellKey
    candidate: CellKey
    speedup: float
    ci_low: float
    ci_high: float
    p_difference: float
    p_equivalence: float
    verdict: str
    estimate: Estimate

    def row(self) -> dict[str, Any]:
        """The comparison as one record (fwbench.io.comparisons_file.COLUMNS)."""
        fixed = {d: getattr(self.candidate, d) for d in ROW_DIMS}  # a precision's: bf16
        return {"kind": self.kind, **fixed} | {
            "baseline": f"{self.baseline.framework}/{self.baseline.mode}",
            "candidate": f"{self.candidate.framework}/{self.candidate.mode}",
            "speedup": self.speedup,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_difference": self.p_difference,
            "p_equivalence": self.p_equivalence,
            "verdict": self.verdict,
            "se_log": self.estimate.se,
            "dof": self.estimate.dof,
            "method": self.estimate.method,
        }


def judge(estimate: Estimate, levels: Levels) -> tuple[float, float, float, float, str]:
    """(ci_low, ci_high, p_difference, p_equivalence, verdict) of one estimate."""
    value, se, dof = estimate.log_speedup, estimate.se, estimate.dof
    if not (math.isfinite(value) and math.isfinite(se) and se >= 0 and dof > 0):
        return math.nan, math.nan, math.nan, math.nan, ""
    delta = levels.delta
    if se == 0:  # identical timings: the ratio is exact
        low = high = value
        p_difference, p_equivalence = float(value == 0), float(abs(value) >= delta)
    else:
        law = scipy_stats.norm if math.isinf(dof) else scipy_stats.t(dof)
        low, high = log_interval(value, se, dof, levels.confidence)
        p_difference = float(2 * law.sf(abs(value) / se))
        p_equivalence = float(max(law.sf((value + delta) / se), law.cdf((value - delta) / se)))
    if low > 0 and value >= delta:
        verdict = FASTER
    elif high < 0 and value <= -delta:
        verdict = SLOWER
    elif -delta < low and high < delta:
        verdict = EQUIVALENT
    else:
        verdict = UNDETERMINED
    return math.exp(low), math.exp(high), p_difference, p_equivalence, verdict


def aa_controls(rounds: Rounds, levels: Levels) -> list[dict[str, Any]]:
    """The rounds' A/A controls (Rounds.aa_controls) judged like any pair: per table its
    variant, the second worker's speedup over the first, its CI, p and verdict; a calibrated
    design's CIs exclude 1 in about 1 − levels.confidence of them."""
    found = []
    for row, variant, value, se, dof in rounds.aa_controls():
        low, high, p_difference, _, verdict = judge(Estimate(value, se, dof, ROUNDS_METHOD), levels)
        found.append(
            {
                "row": row,
                "variant": variant,
                "speedup": math.exp(value),
                "ci_low": low,
                "ci_high": high,
                "p_difference": p_difference,
                "verdict": verdict,
            }
        )
    return found


def wrong_verdicts(rows: Iterable[Mapping[str, Any]], levels: Levels) -> dict[str, Any]:
    """How many of the comparisons (`rows`, Comparison.row()) were decided faster or slower,
    and the most a calibrated design calls the wrong way on average: each comparison's CI
    misses its true ratio on one given side with probability (1 − confidence) / 2 at most, so
    over N comparisons at most N (1 − confidence) / 2 verdicts point the wrong way, whatever
    the true ratios (a pair at 1 exactly reaches it; the A/A controls check the calibration)."""
    verdicts = [row["verdict"] for row in rows if row["verdict"]]
    return {
        "comparisons": len(verdicts),
        "decided": sum(v in (FASTER, SLOWER) for v in verdicts),
        "wrong_at_most": len(verdicts) * (1 - levels.confidence) / 2,
    }


class Cells:
    """What the comparisons read of one system's cells, by key: the pooled medians, the warm
    timings (repeats last), measured in several processes each cell's spread, and the rounds
    (fwbench.analysis.rounds), which own the ratios of the variants they measured together."""

    def __init__(
        self,
        coords: Mapping[str, Any],
        median_s: np.ndarray,
        latency: np.ndarray,
        spreads: dict[str, np.ndarray] | None,
        rounds: Rounds | None = None,
    ):
        self.coords, self.median_s, self.latency, self.spreads = coords, median_s, latency, spreads
        self.rounds = rounds or Rounds([])

    def median(self, key: CellKey) -> float:
        return float(self.median_s[key.position(self.coords)])

    def pace(self, key: CellKey) -> float:
        """What ranks the variants of a row: the rounds' median where they measured it (their
        ratios decide), else the cell's."""
        in_rounds = self.rounds.log_median(key)
        return self.median(key) if in_rounds is None else math.exp(in_rounds)

    def estimate(self, baseline: CellKey, candidate: CellKey, levels: Levels) -> Estimate:
        from_rounds = self.rounds.estimate(baseline, candidate)
        if from_rounds is not None:
            return Estimate(*from_rounds, ROUNDS_METHOD)
        ends = (baseline.position(self.coords), candidate.position(self.coords))
        value = math.log(self.median_s[ends[0]] / self.median_s[ends[1]])
        if self.spreads is not None:
            sigma, dof = log_ratio_spread([spread_at(self.spreads, end) for end in ends])
            return Estimate(value, sigma, dof, "between processes (Student's t)")
        rng = seeded_rng(levels.seed, f"compare/{baseline.name}/{candidate.name}")
        se = log_ratio_se(self.latency[ends[0]], self.latency[ends[1]], levels.resamples, rng)
        return Estimate(value, se, math.inf, "bootstrap of one process's timings (normal)")


def compare(
    cells: Cells, kind: str, baseline: CellKey, candidate: CellKey, levels: Levels
) -> Comparison:
    estimate = cells.estimate(baseline, candidate, levels)
    low, high, p_difference, p_equivalence, verdict = judge(estimate, levels)
    return Comparison(
        kind,
        baseline,
        candidate,
        math.exp(estimate.log_speedup),
        low,
        high,
        p_difference,
        p_equivalence,
        verdict,
        estimate,
    )


# --- which pairs are compared ---------------------------------------------------------------


def _pairs(
    ok: Iterable[CellKey], baseline_of: Callable[[CellKey], CellKey | None]
) -> list[tuple[CellKey, CellKey]]:
    """Each measured cell against the baseline `baseline_of` names for it, where that one was
    measured too (None: the cell has none)."""
    measured = set(ok)
    pairs = [(baseline_of(key), key) for key in sorted(measured, key=str)]
    return [(base, key) for base, key in pairs if base is not None and base in measured]


def compile_pairs(ok: Iterable[CellKey]) -> list[tuple[CellKey, CellKey]]:
    """Each measured non-eager cell against its framework's eager cell in the same row."""
    return _pairs(ok, lambda key: key.with_mode(EAGER_MODE) if key.mode != EAGER_MODE else None)


def precision_pairs(ok: Iterable[CellKey]) -> list[tuple[CellKey, CellKey]]:
    """Each measured low-precision cell against the same variant's float32 cell in its row."""
    return _pairs(ok, lambda key: key.with_precision(FLOAT32) if key.precision != FLOAT32 else None)


def best_own_mode(key: CellKey, ok: set[CellKey], median: Callable[[CellKey], float]) -> str:
    """The fastest of the key's framework's own (not export) modes measured in its row; ''."""
    own = [
        k
        for k in ok
        if k.row == key.row
        and k.framework == key.framework
        and not frameworks.is_export_mode(k.framework, k.mode)
    ]
    return min(own, key=median).mode if own else ""


def deployment_pairs(
    ok: Iterable[CellKey], median: Callable[[CellKey], float]
) -> list[tuple[CellKey, CellKey]]:
    """Each measured export-mode cell against its framework's fastest own mode in its row."""
    measured = set(ok)
    pairs = []
    for key in sorted(measured, key=str):
        if frameworks.is_export_mode(key.framework, key.mode):
            best = best_own_mode(key, measured, median)
            if best:
                pairs.append((key.with_mode(best), key))
    return pairs
