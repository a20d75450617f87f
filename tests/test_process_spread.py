"""CIs from the spread between processes, and what the statistics do with the samples the
canary marks slow."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fwbench.analysis.comparisons import Estimate, Levels, judge
from fwbench.analysis.machine import (
    MACHINE,
    OWN,
    apply_choice,
    canary_correlation,
    noise_source,
    slow_processes,
)
from fwbench.analysis.process_spread import (
    FROM_ROUNDS,
    cell_sigma,
    cell_spreads,
    log_ratio_spread,
    pooled_sigma,
    spread_at,
    spread_ci,
    spread_cis,
)
from fwbench.analysis.roofline import HardwareLimits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.cell_file import Cell

from synthetic import aggregate_of

SIGMA = 0.1  # between processes, on log latency


def _cell_processes(rng, processes: int, center: float, samples: int = 20) -> np.ndarray:
    """One cell's timings by process: a lognormal process effect, small within-process noise."""
    effects = np.exp(rng.normal(0, SIGMA, processes))
    return center * effects[:, None] * (1 + 0.002 * rng.standard_normal((processes, samples)))


def test_the_pooled_sigma_recovers_a_known_spread_between_processes():
    rng = np.random.default_rng(1)
    cells = [_cell_processes(rng, 2, rng.uniform(1e-5, 1e-2)) for _ in range(40)]
    sigma, dof = pooled_sigma(cells)
    assert dof == 40
    assert 0.06 < sigma < 0.15


def test_a_cell_noisier_than_its_system_keeps_its_own_spread():
    wide = np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
    sigma, processes = cell_sigma(wide, group_sigma=0.01)
    assert processes == 2 and sigma == pytest.approx(np.std(np.log([1.0, 2.0]), ddof=1))
    assert pooled_sigma([np.ones((1, 5))]) == (pytest.approx(np.nan, nan_ok=True), 0)


def test_two_process_cis_cover_the_median_of_many_processes_in_nine_cells_of_ten():
    """The default sweep's design: two processes per cell, σ pooled over a system's 70 cells;
    the target is the cell's median over 25 processes."""
    rng = np.random.default_rng(7)
    covered = total = 0
    for _ in range(6):  # systems
        centers = rng.uniform(1e-5, 1e-2, 70)
        runs = [_cell_processes(rng, 27, center) for center in centers]
        sigma, dof = pooled_sigma([run[:2] for run in runs])
        for run in runs:
            seen, target = run[:2], np.median(run[2:])
            cell, k = cell_sigma(seen, sigma)
            low, high = spread_ci(float(np.median(seen)), cell, k, dof, 0.95)
            covered += low <= target <= high
            total += 1
    assert covered / total >= 0.9, covered / total


def test_the_machines_state_widens_a_medians_ci_at_welch_satterthwaites_dof():
    sigma, state = 0.05, 0.1**2
    low, high = spread_ci(1.0, sigma, 1, 20, 0.95, (state, 10))
    variance = sigma**2 + state
    dof = variance**2 / (sigma**4 / 20 + state**2 / 10)
    assert np.log(high) == pytest.approx(stats.t.ppf(0.975, dof) * np.sqrt(variance))
    assert np.log(low) == pytest.approx(-np.log(high))
    alone = spread_ci(1.0, sigma, 1, 20, 0.95)
    assert alone == spread_ci(1.0, sigma, 1, 20, 0.95, (0.0, np.inf))
    assert np.log(alone[1]) == pytest.approx(stats.t.ppf(0.975, 20) * sigma)


def test_with_the_machines_state_a_one_process_ci_holds_the_latency_at_its_mean_state():
    """Cells whose latency moves with the machine's state (σ 15 %, sensitivity 0.5–1.5) beside
    their processes' spread (σ 5 %), each measured in one process at a moment's state: with the
    state's variance (γ²τ², 10 dof) the CIs hold the latency at the mean state in 94–99 % of
    cells (the variances given exactly, Student's t over-covers a little: 96–97 %); from the
    spread between processes alone, in under 70 %."""
    rng = np.random.default_rng(11)
    tau, sigma, dof = 0.15, 0.05, 40
    gamma = rng.uniform(0.5, 1.5, 2000)
    measured = gamma * rng.normal(0, tau, gamma.size) + rng.normal(0, sigma, gamma.size)
    with_state = [
        np.log(spread_ci(1.0, sigma, 1, dof, 0.95, ((g * tau) ** 2, 10))[1]) for g in gamma
    ]
    alone = np.log(spread_ci(1.0, sigma, 1, dof, 0.95)[1])
    assert 0.94 <= np.mean(np.abs(measured) <= with_state) <= 0.99
    assert np.mean(np.abs(measured) <= alone) < 0.7


def test_a_variant_whose_processes_happened_to_agree_takes_the_systems_spread():
    # (framework, mode, arch, batch, process, iteration): variant 0's pairs agree to 1 %,
    # variant 1's differ by 30 %; both are one system's, and the spread is the host's.
    rng = np.random.default_rng(3)
    by_process = np.empty((1, 2, 1, 5, 2, 20))
    for variant, gap in enumerate((1.01, 1.3)):
        for batch in range(5):
            centers = np.array([1.0, gap])[:, None] * 1e-3 * (batch + 1)
            by_process[0, variant, 0, batch] = centers * (1 + 1e-3 * rng.random((2, 20)))
    spreads = cell_spreads(by_process, np.ones(by_process.shape[:4], dtype=bool))
    agreeing, differing = spreads["sigma"][0, 0, 0], spreads["sigma"][0, 1, 0]
    expected = np.sqrt(np.mean([np.log(1.01) ** 2, np.log(1.3) ** 2]) / 2)
    assert agreeing == pytest.approx(np.full(5, expected), rel=0.01)
    assert differing == pytest.approx(np.full(5, np.log(1.3) / np.sqrt(2)), rel=0.01)
    assert (spreads["dof"] == 10).all() and (spreads["processes"] == 2).all()
    ok = np.ones(by_process.shape[:4], dtype=bool)
    cis = spread_cis(spreads, ok, np.full(ok.shape, 1e-3), 0.95)  # no rounds: no state fitted
    assert np.isnan(cis["state_sigma"]).all() and np.isfinite(cis["median_ci_low_s"]).all()


def ratio_ci(ratio: float, spreads, confidence: float) -> tuple[float, float]:
    """The CI every comparison prints (fwbench.analysis.comparisons.judge) from the spreads."""
    sigma, dof = log_ratio_spread(spreads)
    low, high, *_ = judge(Estimate(np.log(ratio), sigma, dof, "between"), Levels(confidence, 5))
    return low, high


def test_a_speedup_ci_adds_both_cells_spreads():
    low, high = ratio_ci(2.0, [(0.1, 2, 20), (0.1, 2, 20)], 0.95)
    assert low < 2.0 < high
    assert np.log(high / 2.0) == pytest.approx(2.086 * np.sqrt(0.01 / 2 + 0.01 / 2), rel=0.01)
    assert np.isnan(ratio_ci(2.0, [(0.1, 2, 0), (0.1, 2, 20)], 0.95)[0])


# --- slow samples --------------------------------------------------------------------------------


def _cell(process: int, latency, slow, slow_machine: int = 0, read: float = 1.0) -> Cell:
    cell = Cell("torch", "eager", "mlp", 1, repeats=len(latency))
    cell.latency_s = np.asarray(latency, dtype=float)
    cell.series = {
        "slow_sample": np.asarray(slow, dtype=float),
        "speed_factor": np.where(np.asarray(slow) > 0, 2.0, 1.0),
    }
    cell.scalars = {"first_call_s": 1.0, "flops": 1e3, "bytes": 1e3, "compiled": 1.0}
    cell.scalars |= {"working_set_bytes": 2e3, "slow_samples": float(np.sum(slow))}
    cell.scalars |= {"canary_factor": 1.0, "canary_read_factor": read}
    cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1.0", "contended": 0}
    cell.attrs |= {"process": process, "slow_machine": slow_machine}
    return cell


_bench = aggregate_of


def _summary(bench, choice: str):
    limits = HardwareLimits(1e12, 1e12, source="test")
    settings = StatsSettings(bootstrap_resamples=200, slow_samples=choice)
    return summarize(bench, limits, settings).sel(framework="torch", mode="eager", arch="mlp")


def test_slow_samples_are_dropped_counted_and_kept_by_choice(tmp_path):
    latency = [1.0] * 18 + [5.0, 5.0]
    slow = [0] * 18 + [1, 1]
    bench = _bench(tmp_path, [_cell(0, latency, slow)])
    dropped = _summary(bench, "drop").sel(batch=1)
    assert dropped["n"].item() == 18 and dropped["mean_s"].item() == pytest.approx(1.0)
    assert dropped["slow_samples_dropped"].item() == 2 and dropped["slow_samples"].item() == 2
    kept = _summary(bench, "keep").sel(batch=1)
    assert kept["n"].item() == 20 and kept["slow_samples_dropped"].item() == 0
    assert "slow_samples_choice" in _summary(bench, "keep").attrs
    with pytest.raises(ValueError, match="stats.slow_samples='toss'"):
        apply_choice(bench, "toss")


def test_a_slow_machine_process_keeps_all_its_samples_and_flags_the_cell(tmp_path):
    latency, slow = [1.0] * 10 + [5.0] * 10, [0] * 10 + [1] * 10
    bench = _bench(tmp_path, [_cell(0, latency, slow, slow_machine=1)])
    summary = _summary(bench, "drop").sel(batch=1)
    assert summary["n"].item() == 20 and summary["slow_samples_dropped"].item() == 0
    assert "slow_machine" in summary["flags"].item()
    assert summary["noise"].item() == MACHINE


def test_noise_that_follows_the_canary_is_the_machines():
    rng = np.random.default_rng(3)
    factor = 1 + 0.1 * rng.random((2, 40))
    latency = np.stack([factor[0] * 1e-3, 1e-3 * (1 + 0.1 * rng.random(40))])
    rho = canary_correlation(latency, factor)
    assert rho[0] > 0.99 and abs(rho[1]) < 0.5
    ok = np.array([True, True])
    assert list(noise_source(rho, np.zeros(2), ok)) == [MACHINE, OWN]
    assert list(noise_source(np.full(2, np.nan), np.zeros(2), ok)) == ["", ""]


@pytest.mark.parametrize(
    ("slow_read", "machine", "own"),
    [(1.4, 1, 0), (1.05, 0, 1), (1.0, 0, 1)],
)
def test_a_slow_process_is_the_machines_where_its_read_canary_ran_slow(
    tmp_path, slow_read, machine, own
):
    """Process 1 runs 30% slower with the same chain factor: the machine's when its read ran
    slower by at least half as much (in log), else the process's own."""
    quiet = _cell(0, [1.0] * 20, [0] * 20)
    slow = _cell(1, [1.3] * 20, [0] * 20, read=slow_read)
    bench = _bench(tmp_path, [quiet, slow])
    cell_dims = ("framework", "mode", "arch", "precision", "batch")
    bench = bench.isel(system=0) if "system" in bench.dims else bench
    counts = slow_processes(bench, cell_dims)
    assert counts["slow_processes_machine"].sum() == machine
    assert counts["slow_processes_own"].sum() == own


def test_a_spread_pooled_over_the_rounds_sets_holds_the_state_and_is_not_given_it_twice():
    """Cells in one process each: σ comes from the rounds' sets, spread over the sweep, which
    hold the machine's state already; the CI adds no γ²τ² on top (it is reported apart)."""
    rng = np.random.default_rng(3)
    by_process = rng.normal(1.0, 0.01, (2, 1, 20))  # two cells, one process each
    ok = np.array([True, True])
    tables = [np.exp(rng.normal(0, 0.1, (3, 1))) * rng.normal(1, 0.01, (3, 20)) for _ in range(8)]
    spreads = cell_spreads(by_process, ok, tables)
    assert spreads[FROM_ROUNDS]
    median = np.array([1.0, 1.0])
    found = spread_cis(spreads, ok, median, 0.95, lambda position: (0.2**2, 10))
    sigma, processes, dof = spread_at(spreads, (0,))
    assert found["median_ci_high_s"][0] == pytest.approx(
        spread_ci(1.0, sigma, processes, dof, 0.95)[1]
    )
    assert found["state_sigma"][0] == pytest.approx(0.2)  # reported, not added
    # measured in two processes per cell, σ is the cells' own and the state is added
    two = cell_spreads(rng.normal(1.0, 0.01, (2, 2, 20)), ok, tables)
    assert not two[FROM_ROUNDS]
    added = spread_cis(two, ok, median, 0.95, lambda position: (0.2**2, 10))
    assert added["median_ci_high_s"][0] > 1.2
