"""Statistics of one system's aggregate: stats.nc, stats.csv and comparisons.csv (the tables,
<system>/tables/*.md, are rendered from stats.nc by the `tables` rule).

Per cell (framework, mode, arch, precision, batch), from the warm iterations of its processes
pooled: median, mean, σ (ddof 1), CV %, IQR, min, p95 and a CI of the median (where the system
has a spread between processes, from its cells measured in several or from the rounds' sets:
that spread and the machine's state over the sweep, fwbench.analysis.process_spread; without
one, a bootstrap, fwbench.analysis.estimators); the speed canary's reading
(fwbench.analysis.machine); the roofline metrics (fwbench.analysis.roofline); where the time
goes (fwbench.analysis.attribution); compile overhead (first call − median). Per non-eager
mode against the same framework's eager cell, per export mode against its framework's best
own mode and per low-precision cell against its float32 variant: the speedup with its CI and
verdict (fwbench.analysis.comparisons: from the rounds where they measured both variants,
else from the cells' spread between processes, else a bootstrap), and for each non-eager
mode the break-even iteration count (fwbench.analysis.speedups). Per (arch, precision,
batch): the winners (fwbench.analysis.winners). Flags: fwbench.analysis.flags.FLAG_MEANINGS.
Failed cells stay in every output as failed rows with their error.

Each cell's resampling is seeded from (seed, the cell's name), so a CI does not depend on the
other cells.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import xarray as xr

from fwbench.analysis.attribution import attribution_variables
from fwbench.analysis.comparisons import Cells, Levels, aa_controls, wrong_verdicts
from fwbench.analysis.estimators import cell_median_cis, ci_level, describe, log_interval
from fwbench.analysis.flags import FLAG_MEANINGS, cell_flags, untrusted
from fwbench.analysis.machine import (
    CHOICES,
    DROP,
    apply_choice,
    canary_correlation,
    describe_choice,
    dropped_total,
    slow_processes,
)
from fwbench.analysis.over_cells import over_cells
from fwbench.analysis.process_spread import FROM_ROUNDS, cell_spreads, spread_cis
from fwbench.analysis.processes import WARM, later_first_calls, pool, processes
from fwbench.analysis.roofline import (
    ROOFLINE_VARIABLES,
    HardwareLimits,
    levels_to_json,
    roofline,
)
from fwbench.analysis.rounds import Rounds
from fwbench.analysis.speedups import speedups
from fwbench.analysis.summary_variables import (
    FROM_CELLS,
    cell_values,
    cell_variables,
    text_variables,
    tidy,
)
from fwbench.analysis.winners import winner_variables
from fwbench.io.comparisons_file import (
    comparison_variables,
    comparisons_table,
    write_comparisons_table,
)
from fwbench.io.dims import CELL_DIMS, STATUS_OK, CellKey, along, keys_where, nearest_batch
from fwbench.io.per_system import one_system
from fwbench.io.stats_file import write_stats, write_stats_table
from fwbench.io.variables import SCOPE, SCOPES, V


@dataclass(frozen=True)
class StatsSettings:
    """The config's `stats` section (defaults as in the schema) and the run's seed."""

    cv_threshold_pct: float = 10.0
    cv_machine_factor: float = 2.0
    min_effect_pct: float = 5.0
    confidence: float = 0.95
    bootstrap_resamples: int = 2000
    table_batch: int = 32
    slow_samples: str = DROP
    seed: int = 0

    def __post_init__(self) -> None:
        checks = {
            "cv_threshold_pct": self.cv_threshold_pct > 0,
            "cv_machine_factor": self.cv_machine_factor >= 1,
            "min_effect_pct": self.min_effect_pct >= 0,
            "confidence": 0 < self.confidence < 1,
            "bootstrap_resamples": self.bootstrap_resamples >= 1,
            "table_batch": self.table_batch >= 1,
            "slow_samples": self.slow_samples in CHOICES,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"stats.{name}={getattr(self, name)!r} is out of range")

    def levels(self) -> Levels:
        """The one level and minimum effect of every verdict (fwbench.analysis.comparisons)."""
        return Levels(self.confidence, self.min_effect_pct, self.bootstrap_resamples, self.seed)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], seed: int = 0) -> StatsSettings:
        unknown = set(values) - {f for f in cls.__dataclass_fields__ if f != "seed"}
        if unknown:
            raise ValueError(f"unknown stats settings: {', '.join(sorted(unknown))}")
        return cls(**values, seed=seed)


# --- the summary -----------------------------------------------------------------------------


def _series(bench: xr.Dataset, name: str) -> np.ndarray:
    """A per-sample series of the pooled aggregate (cell × repeat); NaN where it is missing."""
    if name not in bench:
        return np.full(bench["latency_s"].transpose(*CELL_DIMS, "repeat").shape, np.nan)
    return bench[name].transpose(*CELL_DIMS, "repeat").values


def _timings(bench: xr.Dataset, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pooled warm iterations (cell × repeat) and the same as cell × process × iteration;
    NaN for cells that did not succeed (a failed cell's partial timings are not statistics)."""
    latency = bench["latency_s"].transpose(*CELL_DIMS, "repeat").values.copy()
    latency[~ok] = np.nan
    if "latency_by_process_s" not in bench:  # an aggregate written before processes
        return latency, latency[..., None, :]
    by_process = bench["latency_by_process_s"].transpose(*CELL_DIMS, "process", "iteration")
    by_process = by_process.values.copy()
    by_process[~ok] = np.nan
    return latency, by_process


def _with_warm_first_calls(bench: xr.Dataset, later: np.ndarray, together: Rounds) -> xr.Dataset:
    """The pooled aggregate with each cell's first call from a warm compile cache: pool's
    median over its later processes, and where the rounds measured the variant, the median over
    those (`later`: cell dims × processes after 0) and the rounds' workers."""
    if V.first_call_warm_s not in bench:
        return bench
    warm = bench[V.first_call_warm_s].transpose(*CELL_DIMS).values.copy()
    coords = {d: bench[d].values.tolist() for d in CELL_DIMS}
    for index in np.ndindex(*warm.shape):
        key = CellKey.of({d: coords[d][i] for d, i in zip(CELL_DIMS, index, strict=True)})
        workers = together.warm_first_calls(key)
        if workers:
            warm[index] = float(np.median([*later[index][np.isfinite(later[index])], *workers]))
    return bench.assign({V.first_call_warm_s: (CELL_DIMS, warm, WARM)})


def _cell_statistics(
    bench: xr.Dataset,
    latency: np.ndarray,
    ok: np.ndarray,
    coords: tuple[list, ...],
    settings: StatsSettings,
    spreads: dict[str, np.ndarray] | None,
    together: Rounds,
) -> dict[str, np.ndarray]:
    """Per cell: the descriptive statistics, the median's CI (from the spread between
    processes, `spreads`, and the machine's state over the sweep, `together`'s; without a
    spread, a bootstrap, each cell seeded from its name), the aggregate's values for
    succeeded cells (FROM_CELLS) and the compile overhead."""
    cells: dict[str, np.ndarray] = describe(latency)
    if spreads is None:
        names = np.array(["/".join(map(str, key)) for key in itertools.product(*coords)])
        cells["median_ci_low_s"], cells["median_ci_high_s"] = cell_median_cis(
            latency,
            ok,
            names.reshape(ok.shape),
            settings.confidence,
            settings.bootstrap_resamples,
            settings.seed,
        )
        cells["process_sigma"] = np.full(ok.shape, np.nan)
        cells["state_sigma"] = np.full(ok.shape, np.nan)
        cells["process_count"] = np.where(ok, 1.0, np.nan)
    else:

        def state_of(position: tuple) -> tuple[float, float]:
            named = {d: coord[i] for d, coord, i in zip(CELL_DIMS, coords, position, strict=True)}
            return together.state_variance(CellKey.of(named))

        cells |= spread_cis(spreads, ok, cells[V.median_s], settings.confidence, state_of)
    cells |= paired_medians(together, ok, coords, settings.confidence)
    for name in FROM_CELLS:
        cells[name] = np.where(ok, cell_values(bench, name), np.nan)
    cells["compile_overhead_s"] = cells[V.first_call_s] - cells[V.median_s]
    start = cells[V.import_s] + cells[V.build_s]
    cells[V.first_answer_s] = start + cells[V.first_call_s]
    cells[V.first_answer_warm_s] = start + cells[V.first_call_warm_s]
    return cells


PAIRED = (V.paired_median_s, V.paired_median_ci_low_s, V.paired_median_ci_high_s)


def paired_medians(
    together: Rounds, ok: np.ndarray, coords: tuple[list, ...], confidence: float
) -> dict[str, np.ndarray]:
    """Per ok cell the rounds measured: its rounds median and that median's CI
    (Rounds.paired_median, Student's t); NaN elsewhere."""
    found = {name: np.full(ok.shape, np.nan) for name in PAIRED}
    for position in zip(*np.nonzero(ok), strict=True):
        named = {d: coord[i] for d, coord, i in zip(CELL_DIMS, coords, position, strict=True)}
        paired = together.paired_median(CellKey.of(named))
        if paired is None:
            continue
        log_median, se, dof = paired
        low, high = log_interval(log_median, se, dof, confidence)
        for name, value in zip(PAIRED, (log_median, low, high), strict=True):
            found[name][position] = math.exp(value)
    return found


def _summary_attrs(
    bench: xr.Dataset,
    limits: HardwareLimits,
    settings: StatsSettings,
    process_count: int,
    spreads: dict[str, np.ndarray] | None,
) -> dict[str, Any]:
    """stats.nc's attributes: the aggregate's, the settings (stats_*), the roofline and how
    the statistics were made."""
    return (
        dict(bench.attrs)
        | {f"stats_{key}": value for key, value in asdict(settings).items()}
        | {
            "roofline": limits.describe(),
            "roofline_peak_flops_per_s": limits.peak_flops_per_s,
            "roofline_bandwidth_Bps": limits.bandwidth_Bps,
            "roofline_bf16_peak_flops_per_s": limits.bf16_peak_flops_per_s,
            "roofline_levels": levels_to_json(limits.levels),
            "roofline_ridge_flop_per_byte": limits.ridge_flop_per_byte,
            "roofline_reported_ridge_flop_per_byte": limits.reported_ridge_flop_per_byte,
            "roofline_node": json.dumps(limits.node, sort_keys=True),
            "flags": "; ".join(f"{flag}: {meaning}" for flag, meaning in FLAG_MEANINGS.items()),
            "bootstrap": "percentile method, each cell seeded from (stats_seed, cell name)",
            "processes": process_count,
            "median_ci_level": ci_level(
                process_count, spreads is not None, bool(spreads and spreads[FROM_ROUNDS])
            ),
            "slow_samples_choice": describe_choice(settings.slow_samples),
            "title": "fwbench: statistics, roofline efficiency, compile speedups and winners",
        }
    )


def _with_roofline(cells: dict[str, np.ndarray], bench: xr.Dataset, limits: HardwareLimits):
    """Each cell's roofline metrics, against its own precision's peak, put into `cells`."""
    peaks = along([limits.peak_of(str(p)) for p in bench["precision"].values], "precision")
    metrics = roofline(
        cells["flops"],
        cells["bytes"],
        cells["working_set_bytes"],
        cells[V.median_s],
        limits,
        peaks,
        cells["median_ci_high_s"],
    )
    for name in ROOFLINE_VARIABLES:
        cells[name] = getattr(metrics, name)
    return metrics


def summarize(
    bench: xr.Dataset,
    limits: HardwareLimits,
    settings: StatsSettings,
    rounds: Sequence[xr.Dataset] = (),
) -> xr.Dataset:
    """stats.nc as a Dataset: per-cell statistics, speedups, winners; provenance in attrs.
    The samples the canary marks slow are dropped or kept (settings.slow_samples), then a
    cell's processes are pooled (analysis.processes); with more than one, the medians' CIs come
    from the spread between processes (analysis.process_spread) and the machine's state between
    the rounds' sets; the system's rounds files own the ratios of the variants they measured
    together (analysis.rounds)."""
    bench = one_system(bench)  # raises for several: summarize them one at a time
    process_count = processes(bench)
    bench, dropped = apply_choice(bench, settings.slow_samples)
    slow = slow_processes(bench, CELL_DIMS)
    together = Rounds(list(rounds))
    bench = _with_warm_first_calls(pool(bench), later_first_calls(bench), together)
    coords = tuple(bench[d].values.tolist() for d in CELL_DIMS)
    ok = cell_values(bench, "status").astype(object) == STATUS_OK
    latency, by_process = _timings(bench, ok)
    spreads = cell_spreads(by_process, ok, together.process_tables())
    cells = _cell_statistics(bench, latency, ok, coords, settings, spreads, together)
    order = [d for d in (*CELL_DIMS, "process") if d in dropped.dims]
    cells["slow_samples_dropped"] = np.where(ok, dropped_total(dropped.transpose(*order)), np.nan)
    cells |= {name: np.where(ok, counts, np.nan) for name, counts in slow.items()}
    cells["canary_rho"] = np.where(
        ok, canary_correlation(latency, _series(bench, "speed_factor")), np.nan
    )
    metrics = _with_roofline(cells, bench, limits)
    cells |= attribution_variables(cells, coords)
    named = dict(zip(CELL_DIMS, coords, strict=True))
    compared = Cells(named, cells[V.median_s], latency, spreads, together)
    levels = settings.levels()
    ok_keys = list(keys_where(compared.coords, ok))
    found, comparisons = speedups(compared, ok_keys, cells[V.first_call_s], levels)
    cells |= found
    flags = cell_flags(
        bench,
        cells,
        metrics.invalid_fast,
        ok,
        limits.node,
        settings.cv_threshold_pct,
        settings.cv_machine_factor,
    )
    data_vars = cell_variables(bench, cells, text_variables(bench, ok, metrics, flags, cells))
    flagged = set(keys_where(compared.coords, untrusted(flags)))
    winners, rivalries = winner_variables(compared, ok_keys, flagged, levels)
    rows = [c.row() for c in rivalries + comparisons]
    data_vars |= winners | comparison_variables(rows)
    summary = xr.Dataset(data_vars, coords={d: bench[d].values for d in CELL_DIMS})
    summary = _with_over_cells(summary.assign_coords({SCOPE: list(SCOPES)}), ok, settings)
    summary.attrs.update(
        _summary_attrs(bench, limits, settings, process_count, spreads)
        | _rounds_attrs(together, rows, levels)
    )
    return summary


def _rounds_attrs(together: Rounds, rows: list[dict[str, Any]], levels: Levels) -> dict[str, str]:
    """stats.nc's attributes of the rounds, their A/A controls and the comparisons' verdicts."""
    return {
        "rounds": together.describe(),
        "aa_control": json.dumps(aa_controls(together, levels), sort_keys=True),
        "wrong_verdicts": json.dumps(wrong_verdicts(rows, levels), sort_keys=True),
    }


def _with_over_cells(summary: xr.Dataset, ok: np.ndarray, settings: StatsSettings) -> xr.Dataset:
    """The summary with its table batch (attribute) and the variables over many cells."""
    batch = table_batch(summary["batch"].values.tolist(), ok, settings.table_batch)
    summary = summary.assign(over_cells(summary, batch))
    summary.attrs["table_batch"] = batch
    return summary


def table_batch(batches: list[int], ok: np.ndarray, wanted: int) -> int:
    """The batch every table, figure and finding shows: `wanted` (stats.table_batch) where a
    cell ran at it, else the batch nearest to it on a log scale (the larger of two as near)
    among those where one ran (`ok` over CELL_DIMS; batch last)."""
    ran = [int(b) for i, b in enumerate(batches) if ok[..., i].any()] or [int(b) for b in batches]
    return nearest_batch(ran, wanted)


# --- outputs ---------------------------------------------------------------------------------


def write_outputs(
    summary: xr.Dataset,
    stats_nc: str | os.PathLike,
    stats_csv: str | os.PathLike,
    comparisons_csv: str | os.PathLike,
) -> None:
    """Write stats.nc, stats.csv and comparisons.csv (the tables: the `tables` rule's)."""
    write_stats(summary, stats_nc)
    write_stats_table(tidy(summary), stats_csv)
    write_comparisons_table(comparisons_table(summary), comparisons_csv)
