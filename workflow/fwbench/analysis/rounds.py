"""Ratios from the rounds (fwbench.measure.rounds): a randomized block design whose sets sample
the machine's states.

In each row's table (its sets' rounds files read as one, fwbench.io.rounds_file.joined_rows),
variant v in set s gives x[v, s], the log of the median over the rounds of its `warm`
samples. All variants of a set were sampled in the same rounds, each round in a shuffled
order, so whatever the machine did during the set reaches every variant of it; the sets are
blocks, and the sets of a row are spread over the sweep, so each samples the machine in
another state. A change of state does not move every variant by one factor (on this VM a
set that ran 26% faster moved torch compiled's int8 variant 46% and TensorFlow XLA's bf16 one
16%), so each variant has its own sensitivity γ[v] to the state b[s]:

    x[v, s] = μ[v] + γ[v] b[s] + ε[v, s]

b[s] is estimated robustly, as the median over the variants of x[v, s] − mean_s x[v, s] (one
noisy variant does not move it), and γ[v] by least squares on it (with three or more sets;
with two, γ = 1). ε holds what differs between fresh processes of a variant (layout, allocator,
compile) and the median's own sampling error; its variance σ²[v] is the variant's own (an eager
mode's processes differ by several per cent where an ONNX Runtime session's agree within a few
tenths: self_measurement/rounds_design.py), estimated from its residuals alone, pooled over the
system's tables at the batch that measured the variant (each S − 2 dof; S − 1 with two sets): a
variant is one framework, mode and precision on one machine, its spread between fresh processes
at a batch its own (pooled_by_batch).
An earlier model shrank each σ² towards the table's median one; with spreads unalike by
variant (3% eager, 0.3% ONNX Runtime) that halved an eager variant's σ and widened a quiet
pair's: simulated coverage 87–91% and 99% (self_measurement/rounds_coverage.py).

The log speedup of B over A is μ̂[A] − μ̂[B] (each the mean over the sets): the ratio at the
mean of the states the sweep's sets visited, an estimate of the one at the machine's mean
state. Its error has two parts: the processes', (σ²[A] + σ²[B]) / S, and the states': the
sweep's S sets are a sample of the machine's states, whose variance τ² is pooled over the
system's tables at the batch (each table's Σ b[s]² / (S − 1): the same machine over the same
sweep; the plan runs every architecture's sets at moments of their own,
fwbench.plan.sweep.Plan.order, so the tables' b are independent draws and the pooled dof are
earned; one job measures an architecture's set at every batch, so tables at other batches
share its moments and are not pooled with it), so
(γ[A] − γ[B])² τ² / S, with (γ̂[A] − γ̂[B])² less its expected estimation error
(σ²[A] + σ²[B]) / Σ b[s]² (at least 0). Two variants that respond alike to the machine (two
ONNX Runtime sessions, two XLA paths) get a narrow CI, two that respond unalike a wide one:
the independent-residual model (γ = 1) gave every pair the sum of both variants' spreads, too
wide for the first and too narrow for the second (both measured on three default sweeps with
`python -m fwbench reanalyse` and `agreement`: CHANGELOG, 2026-12-07). Student's t at
Welch–Satterthwaite's dof from the three terms' (fwbench.analysis.comparisons.judge decides).
The same γ and τ² say how far the machine's state moved a cell's own latency over the sweep,
γ²τ² (Rounds.state_variance), which every median's CI holds (fwbench.analysis.process_spread).
A variant that failed in any set is left out of its row's table (its comparisons fall back
to the cells); a table with fewer than two sets or two complete variants gives no estimate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
import xarray as xr

from fwbench.analysis.estimators import welch_satterthwaite
from fwbench.io.dims import STATUS_OK, CellKey
from fwbench.io.rounds_file import AFTER_SWITCH, WARM, replicated, variant_keys, variant_name
from fwbench.io.variables import R

Variant = tuple[str, str, str]  # (framework, mode, precision)


def _variant(key: CellKey) -> Variant:
    return key.framework, key.mode, key.precision


def _replicated(v: Variant) -> Variant:
    """The variant an A/A control's second worker measures (the variant itself otherwise)."""
    return v[0], replicated(v[1]), v[2]


METHOD = (
    "rounds: sets of interleaved processes as blocks, each variant's sensitivity to the "
    "machine's state and its own variance pooled over the system's tables (Student's t)"
)


@dataclass(frozen=True)
class Block:
    """One row's table (its sets' rounds files): per complete variant its mean log median over
    the sets, its residuals' sum of squares (residual_dof each) and its sensitivity to the
    machine's state; the table's Σ b[s]², the number of sets. Set by pooled (Rounds): each
    variant's variance σ² with its dof, pooled over the system's tables that measured it, and
    the state variance τ² with its dof, pooled over the tables."""

    means: dict[Variant, float]  # (framework, mode, precision) -> mean over sets of x
    residual_ss: dict[Variant, float]  # Σ_s ε̂[v, s]²
    residual_dof: int  # S − 2 (S − 1 where γ is not fitted)
    sets: int
    turn_cost: dict[Variant, float]  # median after_switch / warm sample
    sensitivity: dict[Variant, float]  # γ̂
    state_ss: float  # Σ b[s]² of this table (0 where γ is not fitted)
    variances: dict[Variant, float] = field(default_factory=dict)  # σ², pooled
    variance_dofs: dict[Variant, float] = field(default_factory=dict)
    state_var: float = 0.0  # τ², pooled over the system's tables
    state_dof: float = math.inf

    def se_dof(self, a: Variant, b: Variant) -> tuple[float, float]:
        """The standard error of μ̂[a] − μ̂[b] and its Welch–Satterthwaite dof."""
        state, state_dof = self.state_term(a, b)
        total, dof = welch_satterthwaite(
            [
                (self.variances[a] / self.sets, self.variance_dofs[a]),
                (self.variances[b] / self.sets, self.variance_dofs[b]),
                (state / self.sets, state_dof),
            ]
        )
        return math.sqrt(total), dof

    def state_term(self, a: Variant, b: Variant) -> tuple[float, float]:
        """(γ[a] − γ[b])² τ², how far the pair's ratio moves with the machine's state, and its
        dof: the squared gap of the estimated sensitivities less its expected estimation error
        n² (at least 0), whose own variance (4 g² n² + 2 n⁴) joins τ²'s (2 τ⁴ / dof); at least
        one dof (a gap lost in its noise is a small term, not a t of no dof)."""
        if self.state_ss == 0:
            return 0.0, math.inf
        noise = (self.variances[a] + self.variances[b]) / self.state_ss
        gap = max(0.0, (self.sensitivity[a] - self.sensitivity[b]) ** 2 - noise)
        if gap == 0:
            return 0.0, math.inf
        relative = 2 / self.state_dof + (4 * gap * noise + 2 * noise**2) / gap**2
        return gap * self.state_var, max(1.0, 2 / relative)

    def state_share(self, v: Variant) -> float:
        """γ[v]², how much of the machine's state variance τ² reaches the variant's latency:
        γ̂² less its expected estimation error σ²[v] / Σ b² (at least 0); for a table that
        fitted γ (state_ss > 0)."""
        return max(0.0, self.sensitivity[v] ** 2 - self.variances[v] / self.state_ss)


def fit_table(x: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, float]:
    """In the table x[v, s]: each row's residual sum of squares, the dof each carries, its
    sensitivity γ̂ to the robust block effects b, and Σ b² (0 where γ is not fitted)."""
    sets = x.shape[1]
    centered = x - x.mean(axis=1, keepdims=True)
    block = np.median(centered, axis=0)
    block -= block.mean()
    state_ss = float(block @ block)
    fitted = sets >= 3 and state_ss > 0
    sensitivity = centered @ block / state_ss if fitted else np.ones(x.shape[0])
    residual = centered - sensitivity[:, None] * block
    own_dof = sets - 2 if fitted else sets - 1
    return (residual**2).sum(axis=1), own_dof, sensitivity, state_ss if fitted else 0.0


def block_of(ds: xr.Dataset) -> Block | None:
    """The design's table of one row (its sets' rounds files joined along `set`; its state
    variance its own until Rounds pools it); None where it gives no estimate."""
    complete = np.flatnonzero((ds[R.status] == STATUS_OK).all("set").values)
    samples = ds[R.latency_s].isel(variant=complete)
    logs = np.log(samples.sel(sample=WARM).transpose("variant", "set", "round").values)
    if logs.shape[0] < 2 or logs.shape[1] < 2:
        return None
    x = np.nanmedian(logs, axis=-1)
    if not np.isfinite(x).all():
        return None
    residual_ss, dof, sensitivity, state_ss = fit_table(x)
    names = variant_keys(samples)
    cost = (samples.sel(sample=AFTER_SWITCH) / samples.sel(sample=WARM)).median(("set", "round"))
    block = Block(
        means=dict(zip(names, x.mean(axis=1).tolist(), strict=True)),
        residual_ss=dict(zip(names, residual_ss.tolist(), strict=True)),
        residual_dof=dof,
        sets=x.shape[1],
        turn_cost=dict(zip(names, cost.values.tolist(), strict=True)),
        sensitivity=dict(zip(names, sensitivity.tolist(), strict=True)),
        state_ss=state_ss,
    )
    return pooled([block])[0]


def pooled(blocks: list[Block]) -> list[Block]:
    """The blocks with each variant's σ² pooled over the blocks that measured it (Σ of its
    residuals' squares over Σ of their dof; an A/A control's second worker with its variant's
    own: the same variant in another fresh process) and the machine's state variance τ² pooled over
    those that fit γ (each Σ b² with S − 1 dof)."""
    ss: dict[Variant, float] = {}
    dofs: dict[Variant, float] = {}
    for block in blocks:
        for v, value in block.residual_ss.items():
            same = _replicated(v)
            ss[same] = ss.get(same, 0.0) + value
            dofs[same] = dofs.get(same, 0.0) + block.residual_dof
    fitted = [block for block in blocks if block.state_ss > 0]
    state_dof = sum(block.sets - 1 for block in fitted)
    state = (
        {"state_var": sum(b.state_ss for b in fitted) / state_dof, "state_dof": state_dof}
        if state_dof
        else {}
    )
    return [
        replace(
            block,
            variances={v: ss[_replicated(v)] / dofs[_replicated(v)] for v in block.means},
            variance_dofs={v: dofs[_replicated(v)] for v in block.means},
            **state,
        )
        for block in blocks
    ]


def pooled_by_batch(blocks: dict[tuple[str, int], Block]) -> dict[tuple[str, int], Block]:
    """The (arch, batch) tables pooled batch by batch: a variant's spread between fresh
    processes and the machine's state variance pooled over the architectures measured at one
    batch (each of their sets a job at a moment of its own, Plan.order), not across batches:
    one job measures an architecture's set at every batch, so its batches' tables share their
    moments, and a variant's spread at batch 1 need not be its spread at batch 128."""
    found: dict[tuple[str, int], Block] = {}
    for batch in sorted({batch for _, batch in blocks}):
        rows = [row for row in blocks if row[1] == batch]
        found.update(zip(rows, pooled([blocks[row] for row in rows]), strict=True))
    return {row: found[row] for row in blocks}


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
        self.blocks = pooled_by_batch(self.blocks)
        # per (row, variant) of the tables that fitted the state: γ² (Block.state_share)
        self.state_shares = {
            (row, v): block.state_share(v)
            for row, block in self.blocks.items()
            for v in block.means
            if block.state_ss > 0
        }

    def _add_workers(self, row: tuple[str, int], ds: xr.Dataset) -> None:
        ok = (ds[R.status] == STATUS_OK).transpose("variant", "set").values
        warm = ds[R.latency_s].sel(sample=WARM).transpose("variant", "set", "round").values
        first = (
            ds[R.first_call_warm_s].transpose("variant", "set").values
            if R.first_call_warm_s in ds
            else np.full(ok.shape, np.nan)
        )
        for v, name in enumerate(variant_keys(ds)):
            key = (*row, name)
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

    def aa_controls(self) -> list[tuple[str, str, float, float, float]]:
        """Per table with an A/A control: (row as arch/b<batch>, the variant's name, the log
        speedup of its second worker over its first, se, dof): a pair whose truth is 1."""
        found = []
        for (arch, batch), block in sorted(self.blocks.items()):
            for second in (v for v in block.means if v != _replicated(v)):
                first = _replicated(second)
                if first in block.means:
                    value = block.means[first] - block.means[second]
                    found.append(
                        (
                            f"{arch}/b{batch}",
                            variant_name(*first),
                            value,
                            *block.se_dof(first, second),
                        )
                    )
        return found

    def log_median(self, key: CellKey) -> float | None:
        """The variant's mean log median in the rounds (None: not in them)."""
        block = self._block(key)
        return None if block is None else block.means[_variant(key)]

    def paired_median(self, key: CellKey) -> tuple[float, float, float] | None:
        """(log median, its se, dof) of the variant in the rounds: the mean over its sets of
        its log set medians, se √(σ²[v] / S) at σ²[v]'s dof (the latency at the mean of the
        states its sets met: the state's own share, γ²τ², is state_variance's); None where
        the rounds did not measure it."""
        block = self._block(key)
        if block is None:
            return None
        v = _variant(key)
        return block.means[v], math.sqrt(block.variances[v] / block.sets), block.variance_dofs[v]

    def estimate(self, baseline: CellKey, candidate: CellKey) -> tuple[float, float, float] | None:
        """(log speedup of candidate over baseline, its se, dof), or None where the rounds do
        not hold both in one table."""
        block = self._block(baseline)
        if block is None or self._block(candidate) is not block:
            return None
        a, b = _variant(baseline), _variant(candidate)
        return block.means[a] - block.means[b], *block.se_dof(a, b)

    def state_variance(self, key: CellKey) -> tuple[float, float]:
        """How far the machine's state moved the cell's latency over the sweep, as a variance
        of its log, γ²τ², with τ²'s dof: γ² of the variant in its row's table; for a variant
        the rounds did not measure in that row, the mean of its γ² over the rows that measured
        it, else over every variant (the typical one: γ = 1 on average); (0, inf) where no
        table fitted the state."""
        if not self.state_shares:
            return 0.0, math.inf
        v = _variant(key)
        share = self.state_shares.get(((key.arch, key.batch), v))
        if share is None:
            same = [share for (_, other), share in self.state_shares.items() if other == v]
            share = float(np.mean(same or list(self.state_shares.values())))
        block = next(iter(self.blocks.values()))
        return share * block.state_var, block.state_dof

    def _state(self) -> dict[str, float | None]:
        """The machine's state σ (log) pooled over the tables and its dof (None: not fitted)."""
        block = next(iter(self.blocks.values()))
        fitted = math.isfinite(block.state_dof)
        return {
            "state_sigma_log": math.sqrt(block.state_var) if fitted else None,
            "state_dof": block.state_dof if fitted else None,
        }

    def describe(self) -> str:
        """JSON for stats.nc's attributes: the batches and sets of the rounds, the median turn
        cost over every variant (its median sample right after a switch over the warm one) and
        per (arch, batch) each variant's σ (log, pooled over the tables), sensitivity to the
        machine's state and turn cost; the state's σ (log, τ) pooled over the tables and its
        dof; {} where none ran."""
        if not self.blocks:
            return "{}"
        costs = [c for block in self.blocks.values() for c in block.turn_cost.values()]
        return json.dumps(
            {
                "batches": sorted({batch for _, batch in self.blocks}),
                "sets": sorted({block.sets for block in self.blocks.values()}),
                "turn_cost_median": float(np.median(costs)),
                **self._state(),
                "tables": {
                    f"{arch}/b{batch}": {
                        "sigma_log": {
                            variant_name(*v): math.sqrt(s2) for v, s2 in b.variances.items()
                        },
                        "sensitivity": {variant_name(*v): g for v, g in b.sensitivity.items()},
                        "turn_cost": {variant_name(*v): c for v, c in b.turn_cost.items()},
                    }
                    for (arch, batch), b in sorted(self.blocks.items())
                },
            },
            sort_keys=True,
        )
