"""Ratios from the rounds (fwbench.measure.rounds): a randomized block design.

In each rounds file, variant v in set s gives x[v, s], the log of the median over the rounds of
its `warm` samples. All variants of a set were sampled in the same rounds, each round in a
shuffled order, so whatever the machine did during the set reaches every variant alike; the
sets are blocks:

    x[v, s] = μ[v] + β[s] + ε[v, s]

ε holds what differs between fresh processes of a variant (layout, allocator, compile), what
the interleaving did not cancel and the median's own sampling error; its variance σ²[v] is the
variant's own: an eager mode's processes differ by several per cent where an ONNX Runtime
session's agree within a few tenths (self_measurement/rounds_design.py). β[s] is estimated
robustly, as the median over the variants of x[v, s] − mean_s x[v, s] (one noisy variant does
not move it); each variant's residual variance s²[v] has S − 1 degrees of freedom, few with
a few sets, so it is moderated towards the file's typical one (Smyth's moderated variance,
limma): σ̃²[v] = ((S − 1) s²[v] + d₀ s₀²) / (S − 1 + d₀), s₀² the median of the s²[v] over
the median of χ²(S − 1)/(S − 1) (so that it estimates a typical σ², not half of it), d₀ =
PRIOR_DOF.

The log speedup of B over A is μ̂[A] − μ̂[B] (each the mean over the sets), its standard error
√((σ̃²[A] + σ̃²[B]) / S), Student's t at Welch–Satterthwaite's dof from the two moderated
variances' (fwbench.analysis.comparisons.judge decides). A variant that failed in any set is
left out of its file's table (its comparisons fall back to the cells); a file with fewer than
two sets or two complete variants gives no estimate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats as scipy_stats

from fwbench.io.dims import STATUS_OK, CellKey
from fwbench.io.rounds_file import AFTER_SWITCH, WARM, variant_name, variant_precisions

Variant = tuple[str, str, str]  # (framework, mode, precision)


def _variant(key: CellKey) -> Variant:
    return key.framework, key.mode, key.precision


METHOD = "rounds: sets of interleaved processes as blocks, moderated variances (Student's t)"
PRIOR_DOF = 4.0  # d₀: how many degrees of freedom the file's typical variance counts for


@dataclass(frozen=True)
class Block:
    """One rounds file's table: per complete variant its mean log median over the sets and its
    moderated residual variance (with its dof); the number of sets."""

    means: dict[Variant, float]  # (framework, mode, precision) -> mean over sets of x
    variances: dict[Variant, float]  # (framework, mode, precision) -> σ̃²
    variance_dof: float
    sets: int
    turn_cost: dict[Variant, float]  # median after_switch / warm sample

    def se_dof(self, a: Variant, b: Variant) -> tuple[float, float]:
        """The standard error of μ̂[a] − μ̂[b] and its Welch–Satterthwaite dof."""
        va, vb = self.variances[a] / self.sets, self.variances[b] / self.sets
        if va + vb == 0:
            return 0.0, math.inf
        return math.sqrt(va + vb), (va + vb) ** 2 / ((va**2 + vb**2) / self.variance_dof)


def moderated_variances(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Each row's moderated residual variance in the table x[v, s] (robust block effects),
    and the dof each carries."""
    centered = x - x.mean(axis=1, keepdims=True)
    block = np.median(centered, axis=0)
    residual = centered - (block - block.mean())
    own_dof = x.shape[1] - 1
    own = (residual**2).sum(axis=1) / own_dof
    # the median of s² with ν dof is σ² · median(χ²_ν)/ν (0.45 σ² for ν = 1): unbias it
    prior = float(np.median(own)) * own_dof / scipy_stats.chi2(own_dof).median()
    return (own_dof * own + PRIOR_DOF * prior) / (own_dof + PRIOR_DOF), own_dof + PRIOR_DOF


def block_of(ds: xr.Dataset) -> Block | None:
    """The design's table of one rounds file; None where it gives no estimate."""
    complete = np.flatnonzero((ds["status"] == STATUS_OK).all("set").values)
    samples = ds["latency_s"].isel(variant=complete)
    logs = np.log(samples.sel(sample=WARM).transpose("variant", "set", "round").values)
    if logs.shape[0] < 2 or logs.shape[1] < 2:
        return None
    x = np.nanmedian(logs, axis=-1)
    if not np.isfinite(x).all():
        return None
    variances, dof = moderated_variances(x)
    frameworks, modes = samples["framework"].values.tolist(), samples["mode"].values.tolist()
    names = list(zip(frameworks, modes, variant_precisions(samples), strict=True))
    cost = (samples.sel(sample=AFTER_SWITCH) / samples.sel(sample=WARM)).median(("set", "round"))
    return Block(
        means=dict(zip(names, x.mean(axis=1).tolist(), strict=True)),
        variances=dict(zip(names, variances.tolist(), strict=True)),
        variance_dof=dof,
        sets=x.shape[1],
        turn_cost=dict(zip(names, cost.values.tolist(), strict=True)),
    )


class Rounds:
    """One system's rounds, by (arch, batch); each block holds the variants (framework, mode,
    precision) its rounds measured together, float32's and, where the rounds ran them, the low
    precisions' (a file without precisions measured float32)."""

    def __init__(self, datasets: list[xr.Dataset]):
        self.blocks: dict[tuple[str, int], Block] = {}
        # per variant of a row: its warm samples by set (set × round; NaN where its worker
        # failed), and its workers' first calls
        self.by_set: dict[tuple[str, int, Variant], np.ndarray] = {}
        self.first_calls: dict[tuple[str, int, Variant], list[float]] = {}
        for ds in datasets:
            row = (str(ds.attrs["arch"]), int(ds.attrs["batch"]))
            block = block_of(ds)
            if block is not None:
                self.blocks[row] = block
            self._add_workers(row, ds)

    def _add_workers(self, row: tuple[str, int], ds: xr.Dataset) -> None:
        ok = (ds["status"] == STATUS_OK).transpose("variant", "set").values
        warm = ds["latency_s"].sel(sample=WARM).transpose("variant", "set", "round").values
        first = (
            ds["first_call_s"].transpose("variant", "set").values
            if "first_call_s" in ds
            else np.full(ok.shape, np.nan)
        )
        names = zip(ds["framework"].values, ds["mode"].values, variant_precisions(ds), strict=True)
        for v, (framework, mode, precision) in enumerate(names):
            key = (*row, (str(framework), str(mode), precision))
            self.by_set[key] = np.where(ok[v][:, None], warm[v], np.nan)
            self.first_calls[key] = [float(t) for t in first[v][ok[v]] if np.isfinite(t)]

    def process_tables(self) -> list[np.ndarray]:
        """Every variant's warm samples by set (set × round): each set a fresh worker, for the
        spread between processes (fwbench.analysis.process_spread)."""
        return list(self.by_set.values())

    def warm_first_calls(self, key: CellKey) -> list[float]:
        """The first calls of the variant's workers (fresh processes, warm compile cache)."""
        return self.first_calls.get((key.arch, key.batch, _variant(key)), [])

    def _block(self, key: CellKey) -> Block | None:
        block = self.blocks.get((key.arch, key.batch))
        return block if block and _variant(key) in block.means else None

    def log_median(self, key: CellKey) -> float | None:
        """The variant's mean log median in the rounds (None: not in them)."""
        block = self._block(key)
        return None if block is None else block.means[_variant(key)]

    def estimate(self, baseline: CellKey, candidate: CellKey) -> tuple[float, float, float] | None:
        """(log speedup of candidate over baseline, its se, dof), or None where the rounds do
        not hold both in one table."""
        block = self._block(baseline)
        if block is None or self._block(candidate) is not block:
            return None
        a, b = _variant(baseline), _variant(candidate)
        return block.means[a] - block.means[b], *block.se_dof(a, b)

    def describe(self) -> str:
        """JSON for stats.nc's attributes: the batches and sets of the rounds, the median turn
        cost over every variant (its median sample right after a switch over the warm one) and
        per (arch, batch) each variant's σ̃ (log) and turn cost; {} where none ran."""
        if not self.blocks:
            return "{}"
        costs = [c for block in self.blocks.values() for c in block.turn_cost.values()]
        return json.dumps(
            {
                "batches": sorted({batch for _, batch in self.blocks}),
                "sets": sorted({block.sets for block in self.blocks.values()}),
                "turn_cost_median": float(np.median(costs)),
                "tables": {
                    f"{arch}/b{batch}": {
                        "sigma_log": {
                            variant_name(*v): math.sqrt(s2) for v, s2 in b.variances.items()
                        },
                        "turn_cost": {variant_name(*v): c for v, c in b.turn_cost.items()},
                    }
                    for (arch, batch), b in sorted(self.blocks.items())
                },
            },
            sort_keys=True,
        )
