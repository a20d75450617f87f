"""A cell measured in several fresh processes: the aggregate keeps them apart, `pool` makes one
cell of them, and the medians' CIs and the winners' tests see the spread between processes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fwbench.analysis.aggregate import aggregate_cells
from fwbench.analysis.comparisons import Estimate, Levels, judge
from fwbench.analysis.estimators import log_ratio_se, median_ci
from fwbench.analysis.process_spread import (
    cell_sigma,
    log_ratio_spread,
    pooled_sigma,
    spread_ci,
)
from fwbench.analysis.processes import pool
from fwbench.analysis.roofline import HardwareLimits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.comparisons_file import FASTER, UNDETERMINED
from fwbench.io.dims import STATUS_FAILED
from fwbench.rng import seeded_rng, seeded_shuffle

from synthetic import aggregate_of

PROVENANCE = {"host": "h", "device": "cpu", "framework_version": "1.0", "contended": 0}


def _cell(process: int, latency, **scalars) -> Cell:
    cell = Cell("torch", "eager", "mlp", 1, repeats=len(latency))
    cell.latency_s = np.asarray(latency, dtype=float)
    cell.scalars = {"first_call_s": 1.0 + process, "flops": 1e3, "bytes": 1e3, "compiled": 1.0}
    cell.scalars |= {"working_set_bytes": 2e3} | scalars
    cell.attrs = PROVENANCE | {"process": process}
    return cell


_bench = aggregate_of


def test_pool_keeps_the_system_dimension_of_an_aggregate(tmp_path):
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"s{i}.nc")
        write_cell(_cell(i // 2, [1.0 + i, 2.0 + i]), paths[-1])
    pooled = pool(aggregate_cells(paths, systems=["a", "b", "a"]))
    assert pooled["latency_s"].dims[:2] == ("system", "framework")
    cell = pooled["latency_s"].sel(
        framework="torch", mode="eager", arch="mlp", batch=1, precision="float32"
    )
    assert sorted(cell.sel(system="a").values.tolist()) == [1.0, 2.0, 3.0, 4.0]


def test_pool_stacks_the_timings_and_reduces_each_variable_by_its_meaning(tmp_path):
    bench = _bench(
        tmp_path,
        [
            _cell(0, [1.0, 2.0], busy_cpu_other=0.1, compiled=1.0),
            _cell(1, [3.0, 4.0], busy_cpu_other=0.6, compiled=0.0),
            _cell(2, [5.0, 6.0], busy_cpu_other=0.2, compiled=1.0),
        ],
    )
    pooled = pool(bench).sel(
        framework="torch", mode="eager", arch="mlp", batch=1, precision="float32"
    )
    assert sorted(pooled["latency_s"].values.tolist()) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert pooled["latency_by_process_s"].values.tolist() == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert pooled["busy_cpu_other"].item() == 0.6  # as disturbed as its worst process
    assert pooled["compiled"].item() == 0.0  # compiled only if every process was
    assert pooled["first_call_s"].item() == 1.0  # process 0's, the cold compile
    assert pooled["status"].item() == "ok"
    assert pool(bench).attrs["processes"] == 3


def test_one_failed_process_fails_the_cell_and_names_the_process(tmp_path):
    failed = _cell(1, [1.0, 1.0])
    failed.latency_s = None
    failed.attrs |= {"status": STATUS_FAILED, "error_message": "out of memory"}
    bench = _bench(tmp_path, [_cell(0, [1.0, 2.0]), failed])
    pooled = pool(bench).sel(
        framework="torch", mode="eager", arch="mlp", batch=1, precision="float32"
    )
    assert pooled["status"].item() == STATUS_FAILED
    assert pooled["error"].item() == "process 1: out of memory"


def test_an_aggregate_without_processes_is_pooled_as_it_is(tmp_path):
    bench = _bench(tmp_path, [_cell(0, [1.0, 2.0])]).sel(process=0, drop=True)
    assert pool(bench) is bench


def _processes(offsets, timings=40, spread=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return np.array([offset + spread * rng.standard_normal(timings) for offset in offsets])


def _spread(by_process, group=None):
    """A cell's (σ, processes, dof) as the statistics see it: pooled over `group` (the
    system's cells), the cell alone where no group is given."""
    sigma, dof = pooled_sigma(group if group is not None else [by_process])
    own, processes = cell_sigma(by_process, sigma)
    return own, processes, dof


def test_the_spread_ci_widens_with_between_process_variation():
    by_process = _processes([1.0, 1.2, 0.9, 1.1, 1.3])  # processes differ by far more than σ
    median = float(np.median(by_process))
    low, high = spread_ci(median, *_spread(by_process)[:2], _spread(by_process)[2], 0.95)
    flat_low, flat_high = median_ci(by_process.ravel(), 0.95, 2000, seeded_rng(0, "test"))
    assert low < median < high
    assert (high - low) > 5 * (flat_high - flat_low)  # the pooled bootstrap pretends to know


def test_the_spread_ci_is_narrow_when_processes_agree():
    by_process = _processes([1.0] * 5)
    sigma, processes, dof = _spread(by_process)
    low, high = spread_ci(float(np.median(by_process)), sigma, processes, dof, 0.95)
    assert low < 1.0 < high and high - low < 0.02


def test_the_spread_needs_two_processes_somewhere_and_ignores_nan_padding():
    alone = _spread(_processes([1.0]))
    assert math.isnan(alone[0]) and alone[2] == 0
    assert all(math.isnan(bound) for bound in spread_ci(1.0, *alone, 0.95))
    padded = _processes([1.0, 2.0], timings=10)
    padded[1, 5:] = np.nan  # the second process kept 5 timings
    sigma, processes, dof = _spread(padded)
    # one pair's deviations are ±log(2)/2: a sample σ of log(2)/√2 at one degree of freedom
    assert processes == 2 and dof == 1
    assert sigma == pytest.approx(math.log(2) / math.sqrt(2), rel=0.05)


def test_a_cell_in_one_process_takes_its_systems_spread_and_a_wider_ci():
    system = [_processes([1.0, 1.1], seed=s) for s in range(6)]
    single = _processes([1.0], seed=9)
    sigma, processes, dof = _spread(single, group=system)
    assert processes == 1 and dof == 6 and sigma > 0.03
    low, high = spread_ci(1.0, sigma, processes, dof, 0.95)
    two_low, two_high = spread_ci(1.0, sigma, 2, dof, 0.95)
    assert low < two_low < 1.0 < two_high < high
    assert math.log(high / low) == pytest.approx(math.sqrt(2) * math.log(two_high / two_low))


def test_stats_resample_processes_and_say_which_level_the_ci_covers(tmp_path):
    cells = [_cell(p, list(1.0 + 0.2 * p + 0.001 * np.arange(20))) for p in range(4)]
    summary = summarize(
        _bench(tmp_path, cells),
        HardwareLimits(1e12, 1e12, source="test"),
        StatsSettings(bootstrap_resamples=500),
    )
    assert summary.attrs["processes"] == 4
    assert "between processes" in summary.attrs["median_ci_level"]
    cell = summary.sel(framework="torch", mode="eager", arch="mlp", batch=1, precision="float32")
    assert cell["n"].item() == 80
    # the four processes sit at 1.0, 1.2, 1.4, 1.6: the CI spans most of them
    assert cell["median_ci_high_s"].item() - cell["median_ci_low_s"].item() > 0.2


def test_the_seeded_shuffle_is_a_permutation_that_reruns_identically():
    items = [f"cell{i}" for i in range(50)]
    order = seeded_shuffle(items, 0, "bench order")
    assert sorted(order) == sorted(items) and order != items
    assert seeded_shuffle(items, 0, "bench order") == order
    assert seeded_shuffle(items, 1, "bench order") != order


@pytest.mark.parametrize("processes", [1, 3])
def test_process_count_is_recorded_even_for_one(tmp_path, processes):
    bench = _bench(tmp_path, [_cell(p, [1.0, 2.0, 3.0]) for p in range(processes)])
    summary = summarize(
        bench, HardwareLimits(1e12, 1e12, source="test"), StatsSettings(bootstrap_resamples=200)
    )
    assert summary.attrs["processes"] == processes
    assert ("between processes" in summary.attrs["median_ci_level"]) == (processes > 1)


def test_the_spread_speedup_ci_holds_the_ratio_and_sees_process_variation():
    eager = _processes([2.0, 2.4, 1.8, 2.2, 2.6], seed=1)
    compiled = _processes([1.0, 1.2, 0.9, 1.1, 1.3], seed=2)
    ratio = float(np.median(eager) / np.median(compiled))
    levels = Levels(confidence=0.95, min_effect_pct=5)
    sigma, dof = log_ratio_spread([_spread(eager), _spread(compiled)])
    low, high, *_ = judge(Estimate(math.log(ratio), sigma, dof, "between"), levels)
    se = log_ratio_se(eager.ravel(), compiled.ravel(), 2000, seeded_rng(0, "ratio"))
    flat_low, flat_high, *_ = judge(Estimate(math.log(ratio), se, math.inf, "timings"), levels)
    assert low < 2.0 < high
    assert (high - low) > 3 * (flat_high - flat_low)


def _between(medians, spreads, a: str, b: str, levels: Levels) -> tuple:
    """judge() of b's median over a's (above 1: a is faster) from the two spreads."""
    sigma, dof = log_ratio_spread((spreads[a], spreads[b]))
    return judge(Estimate(math.log(medians[b] / medians[a]), sigma, dof, "t"), levels)


def test_a_winner_over_processes_needs_the_processes_not_only_the_timings_to_differ():
    # The same five process speeds for both, the second 4 % slower in each: 200 timings each
    # make a bootstrap of the timings certain, but five processes that scatter by ±15 % cannot
    # tell them apart.
    offsets = [1.0, 1.3, 0.85, 1.15, 0.95]
    fast = _processes(offsets, seed=3)
    slow = _processes([1.04 * o for o in offsets], seed=4)
    far = _processes([2.0 * o for o in offsets], seed=5)
    cells = {"a": fast, "b": slow, "c": far}
    spreads = {name: _spread(cell) for name, cell in cells.items()}
    medians = {name: float(np.median(cell)) for name, cell in cells.items()}
    levels = Levels(confidence=0.99, min_effect_pct=0)
    se = log_ratio_se(slow.ravel(), fast.ravel(), 500, seeded_rng(0, "pooled"))
    pooled = judge(Estimate(math.log(medians["b"] / medians["a"]), se, math.inf, "t"), levels)
    assert pooled[-1] == FASTER  # the timings alone: certain
    assert _between(medians, spreads, "a", "b", levels)[-1] == UNDETERMINED
    assert _between(medians, spreads, "a", "c", levels)[-1] == FASTER


def test_two_processes_per_cell_do_not_make_a_winner_certain():
    # Two processes of each of 10 cells, the processes scattering by 20 %: a true 5 % gap is
    # undetermined, and its p is nowhere near the 1e-83 the old bootstrap z-test gave.
    group = [_processes([1.0, 1.0 + 0.2 * (-1) ** s], seed=s) for s in range(10)]
    sigma, dof = pooled_sigma(group)
    spreads = {"a": (sigma, 2, dof), "b": (sigma, 2, dof), "c": (sigma, 2, dof)}
    medians = {"a": 1.0, "b": 1.05, "c": 3.0}
    levels = Levels(confidence=0.95, min_effect_pct=0)
    close = _between(medians, spreads, "a", "b", levels)
    assert close[-1] == UNDETERMINED and close[2] > 0.1
    far = _between(medians, spreads, "a", "c", levels)
    assert far[-1] == FASTER and far[2] < 1e-3
