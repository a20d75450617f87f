"""Winners only with significance: Mann–Whitney U tests under Holm's correction.

A contest is one row of the winners table: the variants of one (arch, batch), within a scope
(e.g. compiled variants only, or all variants). The fastest by median is compared with every
other variant by a one-sided Mann–Whitney U test in the direction the medians show (H1: the
fastest's iterations tend to be shorter). That direction was read off the same data, so the
one-sided p is doubled (capped at 1): a false winner stays as rare as alpha says. All
comparisons of the table form one family and are corrected together with Holm's step-down
method (a comparison that two rows share, e.g. when the fastest of all variants is also the
fastest compiled one, is counted once).

When the cells were measured in several processes, a comparison instead tests the log ratio
of the two medians against the spread between processes (fwbench.analysis.process_spread: each
cell's σ of log process medians, pooled over its system's cells, and its count of processes), with
Student's t at the pooled degrees of freedom, doubled as above: the same model as the medians'
CIs. Iterations of one process are not independent draws of the variant's speed; processes are,
and two processes of one cell are too few to resample.

A row declares a winner only when every other variant, the runner-up included, is both
significantly slower (adjusted p < alpha) and slower by at least the minimum practical effect
(its median at least `min_effect_pct` % above the fastest's); otherwise it is a tie, and the
tied set is the fastest plus every variant that is not both.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fwbench.analysis.process_spread import slower_p

# A compared pair's verdict, in every table that reports one (compile speedups today).
FASTER, SLOWER, UNDETERMINED = "faster", "slower", "undetermined"


def speedup_verdicts(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Per speedup (old ÷ new: above 1 is faster) from its CI: FASTER where the CI lies above
    1, SLOWER where below, UNDETERMINED where it holds 1, '' where there is no CI."""
    verdicts = np.full(np.shape(low), "", dtype=object)
    known = np.isfinite(low) & np.isfinite(high)
    verdicts[known] = UNDETERMINED
    verdicts[known & (low > 1)] = FASTER
    verdicts[known & (high < 1)] = SLOWER
    return verdicts


WINNER, TIE, ONLY, NONE = "winner", "tie", "only", "none"


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN counts as 1), in the input order."""
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    if np.any((p < 0) | (p > 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p, kind="stable")
    scaled = (len(p) - np.arange(len(p))) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def mann_whitney_p(x: np.ndarray, y: np.ndarray, alternative: str = "two-sided") -> float:
    """Mann–Whitney U p-value of two samples (NaNs dropped); alternative 'less': x tends to be
    smaller than y."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if len(x) == 0 or len(y) == 0:
        raise ValueError(f"Mann–Whitney needs two non-empty samples, got {len(x)} and {len(y)}")
    return float(stats.mannwhitneyu(x, y, alternative=alternative).pvalue)


@dataclass(frozen=True)
class Contest:
    """The variants of one table row and their warm-iteration samples.

    `group` names what the samples are of (e.g. (arch, batch)): two contests of one group share
    their samples, so a comparison they both make is one test."""

    group: Hashable
    scope: str
    samples: Mapping[str, np.ndarray]
    # each variant's (σ, processes, dof) between processes, where cells had several
    spreads: Mapping[str, tuple[float, int, int]] | None = None


@dataclass(frozen=True)
class Verdict:
    verdict: str  # WINNER | TIE | ONLY (a single candidate) | NONE (no candidate)
    winner: str  # the declared winner, "" unless verdict is WINNER or ONLY
    fastest: str
    runner_up: str
    fastest_median_s: float
    runner_up_median_s: float
    p_value: float  # fastest vs runner-up, before correction
    p_holm: float  # the same, Holm-adjusted across the table
    tied: tuple[str, ...]  # the fastest and every variant not significantly slower
    candidates: int


def _by_median(samples: Mapping[str, np.ndarray]) -> list[tuple[str, np.ndarray, float]]:
    ranked = []
    for label, values in samples.items():
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        if len(values):
            ranked.append((label, values, float(np.median(values))))
    return sorted(ranked, key=lambda item: item[2])


def _one_sided_p(contest: Contest, fastest: tuple, rival: tuple) -> float:
    (fast_label, fast_values, fast_median), (label, values, median) = fastest, rival
    spreads = contest.spreads or {}
    if fast_label in spreads and label in spreads:
        return slower_p(fast_median, median, (spreads[fast_label], spreads[label]))
    return mann_whitney_p(fast_values, values, alternative="less")


def _family(
    contests: Sequence[Contest], ranked: Sequence[list[tuple[str, np.ndarray, float]]]
) -> dict[tuple[Hashable, str, str], float]:
    """{(group, fastest, rival): two-sided p} of every comparison the table makes: each
    contest's fastest against each of its rivals, one test for a comparison contests share."""
    family: dict[tuple[Hashable, str, str], float] = {}
    for contest, variants in zip(contests, ranked, strict=True):
        for rival in variants[1:]:
            key = (contest.group, variants[0][0], rival[0])
            if key not in family:
                one_sided = _one_sided_p(contest, variants[0], rival)
                family[key] = min(1.0, 2 * one_sided)
    return family


def _verdict(
    group: Hashable,
    variants: list[tuple[str, np.ndarray, float]],
    family: Mapping[tuple[Hashable, str, str], float],
    adjusted: Mapping[tuple[Hashable, str, str], float],
    alpha: float,
    factor: float,
) -> Verdict:
    """One contest's verdict from its variants ranked by median and the table's p-values
    (`family`, and Holm's `adjusted`): a rival ties with the fastest unless its adjusted p is
    below alpha and its median at least `factor` times the fastest's."""
    if not variants:
        return Verdict(NONE, "", "", "", math.nan, math.nan, math.nan, math.nan, (), 0)
    fastest, fastest_median = variants[0][0], variants[0][2]
    if len(variants) == 1:
        nan = math.nan
        return Verdict(ONLY, fastest, fastest, "", fastest_median, nan, nan, nan, (fastest,), 1)
    runner_up, runner_up_median = variants[1][0], variants[1][2]
    tied = [fastest] + [
        label
        for label, _, median in variants[1:]
        if adjusted[(group, fastest, label)] >= alpha or median < fastest_median * factor
    ]
    key = (group, fastest, runner_up)
    return Verdict(
        WINNER if len(tied) == 1 else TIE,
        fastest if len(tied) == 1 else "",
        fastest,
        runner_up,
        fastest_median,
        runner_up_median,
        family[key],
        float(adjusted[key]),
        tuple(tied),
        len(variants),
    )


def decide(contests: Sequence[Contest], alpha: float, min_effect_pct: float = 0.0) -> list[Verdict]:
    """One verdict per contest, all comparisons corrected together (see the module text)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not min_effect_pct >= 0:
        raise ValueError(f"min_effect_pct must be ≥ 0, got {min_effect_pct!r}")
    factor = 1 + min_effect_pct / 100
    ranked = [_by_median(contest.samples) for contest in contests]
    family = _family(contests, ranked)
    adjusted = dict(zip(family, holm(list(family.values())), strict=True))
    return [
        _verdict(contest.group, variants, family, adjusted, alpha, factor)
        for contest, variants in zip(contests, ranked, strict=True)
    ]
