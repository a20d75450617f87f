"""Statistics, roofline and winners on synthetic samples whose answers are known."""

from __future__ import annotations

import json
import math
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats as scipy_stats

from fwbench.analysis.aggregate import aggregate_cells, write_aggregate
from fwbench.analysis.by_system import summarize_systems
from fwbench.analysis.comparisons import Estimate, Levels, judge
from fwbench.analysis.estimators import (
    break_even_iterations,
    describe,
    log_ratio_se,
    median_ci,
)
from fwbench.analysis.flags import high_cv, untrusted
from fwbench.analysis.roofline import (
    HardwareLimits,
    MemoryLevel,
    levels_from_json,
    levels_to_json,
    limits_from_document,
    no_hardware_limits,
    read_hardware_limits,
    roofline,
)
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.analysis.summary_variables import tidy
from fwbench.io.bench_file import read_bench
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.comparisons_file import read_comparisons_table
from fwbench.io.dims import STATUS_FAILED
from fwbench.io.hardware_file import write_hardware
from fwbench.io.per_system import one_system
from fwbench.io.rounds_file import write_rounds
from fwbench.io.stats_file import read_stats, write_stats
from fwbench.present.tables import TABLES, write_tables

from synthetic import rounds_dataset

REPO = Path(__file__).resolve().parents[1]
LIMITS = HardwareLimits(peak_flops_per_s=1e9, bandwidth_Bps=1e9, source="test")
SETTINGS = StatsSettings(bootstrap_resamples=200, table_batch=1)
HARDWARE = {  # the shape fwbench.hardware.characterize writes, trimmed to what the roofline reads
    "compute": {"dtypes": {"float32": {"best_flops_per_s": 4e11}}},
    "bandwidth": {
        "kernels": {"triad": {"best_bandwidth_Bps": 2.9e10}, "copy": {"best_bandwidth_Bps": 3.1e10}}
    },
    "ridge": {"per_dtype": {"float32": {"measured_flop_per_byte": 13.8}}},
}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- descriptive statistics and bootstrap CIs -----------------------------------------------


def test_descriptive_statistics_of_a_known_sample():
    result = describe(np.array([1.0, 2.0, 3.0, 4.0, 5.0, np.nan]))
    assert result["n"] == 5
    assert result["median_s"] == 3.0 and result["mean_s"] == 3.0
    assert result["std_s"] == pytest.approx(math.sqrt(2.5))  # ddof 1
    assert result["cv_pct"] == pytest.approx(100 * math.sqrt(2.5) / 3)  # 52.7 %
    assert result["iqr_s"] == 2.0
    assert result["min_s"] == 1.0
    assert result["p95_s"] == pytest.approx(4.8)


def test_describe_works_cell_by_cell_and_leaves_empty_cells_nan():
    samples = np.array([[1.0, 1.0, 1.0], [np.nan, np.nan, np.nan]])
    result = describe(samples)
    assert result["cv_pct"][0] == 0.0
    assert np.isnan(result["median_s"][1]) and result["n"][1] == 0


def test_median_ci_of_a_big_sample_contains_the_true_median_and_is_narrow():
    true_median = 2e-4
    sample = true_median * rng().lognormal(0.0, 0.1, 2001)  # lognormal median = exp(mu)
    low, high = median_ci(sample, 0.95, 1000, rng(1))
    assert low < true_median < high
    assert high - low < 0.02 * true_median


def test_median_ci_is_reproducible_with_the_same_seed_and_nan_for_one_sample():
    sample = rng().normal(1.0, 0.1, 30)
    assert median_ci(sample, 0.95, 300, rng(7)) == median_ci(sample, 0.95, 300, rng(7))
    assert all(math.isnan(v) for v in median_ci(np.array([1.0]), 0.95, 300, rng(7)))


def test_ratio_ci_contains_the_true_ratio_of_medians():
    eager = 1.25e-3 * rng(1).lognormal(0.0, 0.05, 400)
    compiled = 1.0e-3 * rng(2).lognormal(0.0, 0.05, 400)
    log_speedup = math.log(np.median(eager) / np.median(compiled))
    se = log_ratio_se(eager, compiled, 1000, rng(3))
    low, high, *_ = judge(Estimate(log_speedup, se, math.inf, "bootstrap"), Levels(0.95, 5))
    assert low < 1.25 < high
    assert high - low < 0.05


# --- break-even -----------------------------------------------------------------------------


def test_break_even_on_a_hand_example():
    # compiled: 5 s first call, then free; eager: 1 s per call. 5 + 0 <= 1 + 4 first at n = 5.
    assert break_even_iterations(1.0, 1.0, 5.0, 0.0) == 5
    # 2 s of compilation recovered at 50 µs per call: 40,000 more calls, so n = 40,001.
    assert break_even_iterations(0.0, 100e-6, 2.0, 50e-6) == 40_001


def test_break_even_is_one_when_compiling_costs_nothing_and_inf_when_it_never_pays():
    assert break_even_iterations(2.0, 1.0, 1.0, 1.5) == 1
    assert break_even_iterations(1.0, 1.0, 2.0, 1.0) == math.inf
    assert math.isnan(break_even_iterations(1.0, math.nan, 2.0, 0.5))


# --- significance ---------------------------------------------------------------------------


# --- roofline and hardware limits -----------------------------------------------------------


def test_roofline_on_a_hand_example():
    limits = HardwareLimits(peak_flops_per_s=100.0, bandwidth_Bps=10.0, source="hand")
    metrics = roofline(
        np.array([1000.0, 100.0]),
        np.array([10.0, 100.0]),
        np.array([50.0, 500.0]),
        np.array([20.0, 20.0]),
        limits,
    )
    np.testing.assert_allclose(metrics.lower_bound_s, [10.0, 10.0])  # compute / memory bound
    np.testing.assert_allclose(metrics.efficiency, [0.5, 0.5])
    np.testing.assert_allclose(metrics.dram_efficiency, [0.5, 0.5])  # no hierarchy: DRAM alone
    np.testing.assert_allclose(metrics.arithmetic_intensity, [100.0, 1.0])
    assert metrics.bound.tolist() == ["compute", "memory"]
    assert metrics.memory_level.tolist() == ["DRAM", "DRAM"]


HIERARCHY = (
    MemoryLevel("L1", 100.0, 1000.0, "triad"),
    MemoryLevel("L2", 1000.0, 100.0, "read"),
    MemoryLevel("DRAM", math.inf, 10.0, "triad"),
)


def test_the_cache_aware_roof_is_the_smallest_level_the_working_set_fits_in():
    limits = HardwareLimits(1e6, 10.0, source="hand", levels=HIERARCHY)
    # 100 B moved, 1 FLOP (memory-bound everywhere); working sets at each level's edge and past
    metrics = roofline(
        np.full(5, 1.0),
        np.full(5, 100.0),
        np.array([100.0, 101.0, 1000.0, 1001.0, np.nan]),
        np.full(5, 1.0),
        limits,
    )
    # an unknown working set (cells before schema 3): the fastest roof, still a true bound
    assert metrics.memory_level.tolist() == ["L1", "L2", "L2", "DRAM", "unknown (L1, the fastest)"]
    np.testing.assert_allclose(metrics.lower_bound_s, [0.1, 1.0, 1.0, 10.0, 0.1])
    np.testing.assert_allclose(metrics.dram_lower_bound_s, np.full(5, 10.0))
    # a cell at 2 s against DRAM's 10 s bound: 5× "too fast" for DRAM, fine for L1
    assert metrics.dram_efficiency[0] == pytest.approx(10.0)
    assert metrics.efficiency[0] == pytest.approx(0.1) and not metrics.invalid_fast[0]
    assert metrics.invalid_fast[3] and metrics.efficiency[4] == pytest.approx(0.1)


def test_memory_levels_are_read_from_the_sweep_and_dram_is_the_faster_of_sweep_and_stream():
    memory = {
        "levels": {
            "L1": {"capacity_bytes": 65536, "bandwidth_Bps": 5e11, "roof_kernel": "triad"},
            "L2": {"capacity_bytes": 2**21, "bandwidth_Bps": None, "problem": "no point"},
            "DRAM": {"capacity_bytes": None, "bandwidth_Bps": 2.5e10, "roof_kernel": "read"},
        }
    }
    limits = limits_from_document(HARDWARE | {"memory": memory}, "hw.json")
    assert [(lv.name, lv.bandwidth_Bps, lv.kernel) for lv in limits.levels] == [
        ("L1", 5e11, "triad"),
        # no plateau of its own: the level below's bandwidth, never a slower roof
        ("L2", 5e11, "L1's triad: no plateau of its own"),
        ("DRAM", 2.9e10, "STREAM triad"),  # STREAM's 29 GB/s beats the sweep's 25
    ]
    assert "L2: no point" in limits.levels_note
    assert levels_from_json(levels_to_json(limits.levels)) == limits.levels
    older = limits_from_document(HARDWARE, "hw.json")  # schema 1: no sweep
    assert [lv.name for lv in older.levels] == ["DRAM"]
    assert "DRAM only: no working-set sweep" in older.levels_note


def test_hardware_limits_use_measured_fp32_peak_and_triad(tmp_path):
    path = tmp_path / "host-cpu.json"
    write_hardware(HARDWARE, path)
    limits = read_hardware_limits(path)
    assert limits.peak_flops_per_s == 4e11 and limits.bandwidth_Bps == 2.9e10
    assert limits.problems == () and limits.reported_ridge_flop_per_byte == 13.8


def test_a_missing_limit_is_nan_with_the_reason_and_a_bad_one_raises():
    partial = {
        "compute": {"dtypes": {"float32": {"best_flops_per_s": None}}},
        "bandwidth": {"kernels": {"copy": {"best_bandwidth_Bps": 1e10}}},
    }
    limits = limits_from_document(partial, "hw.json")
    assert math.isnan(limits.peak_flops_per_s) and math.isnan(limits.bandwidth_Bps)
    assert "compute.dtypes.float32.best_flops_per_s is null in hw.json" in limits.problems
    assert "bandwidth.kernels.triad is missing in hw.json" in limits.problems
    bad = {"kernels": {"triad": {"best_bandwidth_Bps": -5}}}
    with pytest.raises(ValueError, match="-5"):
        limits_from_document(HARDWARE | {"bandwidth": bad}, "hw.json")


# --- the summary of an aggregate ------------------------------------------------------------


def cell(framework, mode, latency_s, arch="mlp", batch=1, **scalars) -> Cell:
    c = Cell(framework, mode, arch, batch, repeats=len(latency_s))
    c.latency_s = np.asarray(latency_s)
    c.scalars = {
        "first_call_s": 1.0,
        "flops": 1e3,
        "bytes": 1e3,
        "working_set_bytes": 2e3,
        "compiled": 1.0,
    } | scalars
    c.attrs = {"framework_version": "1.0", "host": "h", "device": "cpu", "contended": 0}
    return c


def bench_of(tmp_path: Path, cells: list[Cell]) -> xr.Dataset:
    paths = []
    for i, c in enumerate(cells):
        paths.append(tmp_path / f"cell{i}.nc")
        write_cell(c, paths[-1])
    return aggregate_cells(paths)


def noisy(median: float, n: int = 40, seed: int = 0, spread: float = 0.01) -> np.ndarray:
    return median * rng(seed).normal(1.0, spread, n)


def test_efficiency_above_one_is_flagged_and_not_clamped(tmp_path):
    # lower bound = max(4e3 FLOP / 1e9, 1e3 B / 1e9) = 4 µs; median 2 µs → efficiency 2
    bench = bench_of(tmp_path, [cell("torch", "eager", [2e-6] * 5, flops=4e3)])
    summary = summarize(bench, LIMITS, SETTINGS).sel(framework="torch", mode="eager")
    assert summary["efficiency"].item() == pytest.approx(2.0)
    assert "invalid_fast" in summary["flags"].item()


def test_a_failed_cell_stays_visible_with_its_message(tmp_path):
    failed = cell("jax", "jit", [np.nan] * 5)
    failed.attrs |= {
        "status": STATUS_FAILED,
        "error_type": "XlaRuntimeError",
        "error_message": "RESOURCE_EXHAUSTED: out of memory",
    }
    bench = bench_of(tmp_path, [cell("jax", "eager", noisy(1e-3)), failed])
    summary = summarize(bench, LIMITS, SETTINGS)
    rows = tidy(summary).set_index("mode")
    assert rows.loc["jit", "status"] == "failed"
    assert rows.loc["jit", "error"] == "RESOURCE_EXHAUSTED: out of memory"
    assert np.isnan(rows.loc["jit", "median_s"]) and rows.loc["eager", "status"] == "ok"
    winners = summary["winner_verdict"].sel(arch="mlp", batch=1, scope="all").item()
    assert winners == "only"  # the failed variant does not compete


def test_absent_positions_are_not_rows_but_failed_ones_are(tmp_path):
    bench = bench_of(
        tmp_path, [cell("torch", "eager", noisy(1e-3)), cell("jax", "jit", noisy(1e-3, seed=1))]
    )
    rows = tidy(summarize(bench, LIMITS, SETTINGS))
    assert sorted(zip(rows["framework"], rows["mode"], strict=True)) == [
        ("jax", "jit"),
        ("torch", "eager"),
    ]


def test_one_process_cells_take_the_spread_of_the_rounds_sets_and_their_warm_first_calls(
    tmp_path,
):
    """Cells measured in one process: their CIs take σ pooled over the rounds' variants (a
    fresh worker per set, the sets' drift in it: the machine's state over the sweep that the
    rounds' sets saw, γ²τ², is reported apart and not added again), and their first call
    from a warm cache is the median of the workers'; a cell the rounds did not measure has
    none, and its state term is its variant's in the rows the rounds measured."""
    cells = [cell("torch", "eager", noisy(1e-3, seed=1)), cell("jax", "jit", noisy(2e-3, seed=2))]
    cells.append(cell("torch", "eager", noisy(3e-3, seed=3), batch=8))
    drift = (0.0, 0.1, -0.05)
    rounds = rounds_dataset(
        [("torch", "eager"), ("jax", "jit")],
        [1e-3, 2e-3],
        [0.02, 0.02],
        set_drift=drift,
        batch=1,
        first_call_s=0.5,
    )
    summary = summarize(bench_of(tmp_path, cells), LIMITS, SETTINGS, [rounds])
    log_medians = np.log(rounds["latency_s"].sel(sample="warm").median("round").values)
    deviations = log_medians - log_medians.mean(axis=1, keepdims=True)
    sigma = math.sqrt((deviations**2).sum() / 4)  # 2 variants × (3 sets − 1)
    eager = summary.sel(framework="torch", mode="eager", precision="float32", arch="mlp")
    assert eager["process_sigma"].values.tolist() == pytest.approx([sigma, sigma])
    assert eager["process_count"].values.tolist() == [1, 1]
    one = eager.sel(batch=1)
    state = one["state_sigma"].item()
    centered = np.asarray(drift) - np.mean(drift)
    assert state == pytest.approx(math.sqrt(centered @ centered / 2), rel=0.3)
    assert eager.sel(batch=8)["state_sigma"].item() == state
    half = math.log(one["median_ci_high_s"].item() / one["median_s"].item())
    # σ from the rounds' sets holds the machine's state already: not added again
    assert half == pytest.approx(scipy_stats.t.ppf(0.975, 4) * sigma)  # 4 dof pooled
    assert "pooled over the rounds' variants" in summary.attrs["median_ci_level"]
    assert "counted once" in summary.attrs["median_ci_level"]
    assert one["first_call_warm_s"].item() == pytest.approx(0.6)  # 0.5, 0.6, 0.7
    assert np.isnan(eager.sel(batch=8)["first_call_warm_s"].item())


def test_without_rounds_or_processes_the_ci_is_one_process_bootstrap(tmp_path):
    summary = summarize(bench_of(tmp_path, [cell("torch", "eager", noisy(1e-3))]), LIMITS, SETTINGS)
    assert summary.attrs["median_ci_level"].startswith("bootstrap over the timings of one process")
    assert np.isnan(summary["process_sigma"]).all() and np.isnan(summary["state_sigma"]).all()


def test_compile_speedup_overhead_and_break_even_per_compiled_mode(tmp_path):
    eager = cell("torch", "eager", [4e-3] * 5, first_call_s=0.010)
    compiled = cell("torch", "compiled", [2e-3] * 5, first_call_s=2.010)
    summary = summarize(bench_of(tmp_path, [eager, compiled]), LIMITS, SETTINGS)
    row = summary.sel(framework="torch", mode="compiled", arch="mlp", batch=1)
    assert row["speedup_vs_eager"].item() == pytest.approx(2.0)
    assert row["speedup_ci_low"].item() == pytest.approx(2.0)  # constant samples
    assert row["compile_overhead_s"].item() == pytest.approx(2.008)
    assert row["break_even_iterations"].item() == 1001  # 2 s / 2 ms saved per call, plus one
    assert np.isnan(summary["speedup_vs_eager"].sel(mode="eager").item())


def test_noise_flags_follow_the_threshold_and_contention(tmp_path):
    quiet = cell("torch", "eager", noisy(1e-3, spread=0.01))
    loud = cell("jax", "eager", noisy(1e-3, spread=0.3, seed=2))
    busy = cell("tensorflow", "eager", noisy(1e-3, seed=3))
    busy.attrs["contended"] = 1
    fallback = cell("torch", "compiled", noisy(1e-3, seed=4), compiled=0.0)
    summary = summarize(bench_of(tmp_path, [quiet, loud, busy, fallback]), LIMITS, SETTINGS)
    flags = summary["flags"].sel(arch="mlp", batch=1)
    assert flags.sel(framework="torch", mode="eager").item() == ""
    assert flags.sel(framework="jax", mode="eager").item() == "high_cv"
    assert flags.sel(framework="tensorflow", mode="eager").item() == "contended"
    assert flags.sel(framework="torch", mode="compiled").item() == "not_compiled"


def test_winners_among_compiled_and_among_all_variants(tmp_path):
    cells = [
        cell("torch", "eager", noisy(0.90e-3, seed=1)),  # fastest overall, but eager
        cell("torch", "compiled", noisy(1.00e-3, seed=2)),
        cell("jax", "jit", noisy(1.10e-3, seed=3)),
    ]
    summary = summarize(bench_of(tmp_path, cells), LIMITS, SETTINGS)
    verdicts = summary.sel(arch="mlp", batch=1)
    assert verdicts["winner"].sel(scope="all").item() == "torch/eager"
    assert verdicts["winner"].sel(scope="compiled").item() == "torch/compiled"
    assert verdicts["winner_candidates"].sel(scope="compiled").item() == 2


def test_missing_hardware_limits_leave_the_roofline_nan_and_say_why(tmp_path):
    bench = bench_of(tmp_path, [cell("torch", "eager", noisy(1e-3))])
    summary = summarize(bench, no_hardware_limits("no hardware file was given"), SETTINGS)
    assert np.isnan(summary["efficiency"]).all()
    assert "no hardware file was given" in summary.attrs["roofline"]
    assert summary["median_s"].sel(framework="torch", mode="eager").item() > 0


def test_settings_reject_bad_values_by_name():
    with pytest.raises(ValueError, match="confidence=1.5"):
        StatsSettings(confidence=1.5)
    with pytest.raises(ValueError, match="cv_threshold"):
        StatsSettings.from_mapping({"cv_threshold": 5})


# --- outputs --------------------------------------------------------------------------------


def test_the_rule_script_writes_every_output(tmp_path):
    from snakemake.iocontainers import Namedlist

    failed = cell("tensorflow", "xla", [np.nan] * 5)
    failed.attrs |= {"status": STATUS_FAILED, "error_message": "unsupported op While"}
    bench = bench_of(
        tmp_path,
        [
            cell("torch", "eager", noisy(1.0e-3, seed=1)),
            cell("torch", "compiled", noisy(0.5e-3, seed=2)),
            cell("tensorflow", "eager", noisy(2.0e-3, seed=3)),
            failed,
        ],
    )
    bench.to_netcdf(tmp_path / "bench.nc", engine="h5netcdf")
    write_hardware(HARDWARE, tmp_path / "hw.json")
    out = tmp_path / "summary"
    outputs = {"nc": out / "stats.nc", "csv": out / "stats.csv", "comparisons": out / "c.csv"}
    tables = {name: out / "local" / "tables" / f"{name}.md" for name in TABLES}
    fake = type("Snakemake", (), {})()
    # the rounds measured mlp/b1's in-framework variants together: torch eager is the fastest
    # there, whatever the cells (measured at other moments) say
    rounds = [("torch", "eager"), ("torch", "compiled"), ("tensorflow", "eager")]
    write_rounds(
        rounds_dataset(rounds, [0.4e-3, 0.5e-3, 2.0e-3], [0.005] * 3, batch=1),
        tmp_path / "b1.nc",
    )
    fake.input = Namedlist(
        fromdict={
            "bench": str(tmp_path / "bench.nc"),
            "hardware": [str(tmp_path / "hw.json")],
            "rounds": [str(tmp_path / "b1.nc")],
        }
    )
    fake.output = Namedlist(fromdict={k: str(v) for k, v in outputs.items()})
    fake.params = Namedlist(
        fromdict={
            "stats": {"confidence": 0.99, "table_batch": 1, "bootstrap_resamples": 200},
            "seed": 3,
            "systems": ["local"],
        }
    )
    fake.log = Namedlist([str(tmp_path / "stats.log")])
    runpy.run_path(str(REPO / "workflow/scripts/stats.py"), init_globals={"snakemake": fake})
    table_job = type("Snakemake", (), {})()
    table_job.input = Namedlist(fromdict={"stats": str(outputs["nc"])})
    table_job.output = Namedlist(fromdict={name: str(path) for name, path in tables.items()})
    table_job.wildcards = Namedlist(fromdict={"system": "local"})
    table_job.log = Namedlist([str(tmp_path / "tables.log")])
    runpy.run_path(str(REPO / "workflow/scripts/tables.py"), init_globals={"snakemake": table_job})

    csv = pd.read_csv(outputs["csv"])
    assert len(csv) == 4 and set(csv["status"]) == {"ok", "failed"}
    assert set(csv["system"]) == {"local"}
    with xr.open_dataset(outputs["nc"]) as stats:
        one = one_system(stats, "local")
        assert one.attrs["stats_seed"] == 3 and one.attrs["roofline_bandwidth_Bps"] == 2.9e10
        fastest_us = one["median_s"].sel(framework="torch", mode="compiled").item() * 1e6
    (mlp_row,) = [row for row in tables["latency"].read_text().splitlines() if "| mlp |" in row]
    assert f"**{fastest_us:,.1f}**" in mlp_row and mlp_row.count("**") == 2  # fastest in bold
    assert "| failed |" in mlp_row
    assert "unsupported op While" in tables["failed"].read_text()
    winners = tables["winners"].read_text()
    assert "torch/eager" in winners and "from the rounds" in winners
    found = read_comparisons_table(outputs["comparisons"])
    ranked = found[found["kind"] == "winner"]
    assert set(ranked["candidate"]) == {"torch/eager"}
    assert ranked["method"].str.startswith("rounds").all()
    # the rounds' ratio (0.4 ms / 0.5 ms), not the cells' medians' (≈ 1 ms / 0.5 ms)
    assert "0.80 [" in tables["compile_speedup"].read_text()
    assert "GB/s (STREAM triad)" in tables["efficiency"].read_text()
    compared = read_comparisons_table(outputs["comparisons"])
    compile_row = compared[compared["kind"] == "compile"].iloc[0]
    assert (compile_row["system"], compile_row["baseline"]) == ("local", "torch/eager")
    assert compile_row["candidate"] == "torch/compiled" and compile_row["verdict"] == "slower"
    assert compile_row["speedup"] == pytest.approx(0.8, rel=0.02)
    assert compile_row["ci_low"] < compile_row["speedup"] < compile_row["ci_high"]
    assert set(compared["kind"]) == {"compile", "winner"} and compared["batch"].dtype == int


def test_each_system_is_held_against_its_own_hardware_file(tmp_path):
    paths = []
    for system in ("slow", "fast"):
        for framework, mode in (("torch", "eager"), ("torch", "compiled")):
            c = cell(framework, mode, noisy(4e-6, seed=len(paths)), flops=4e3)
            c.attrs |= {"system": system, "cpu_model": "Zen 3" if system == "slow" else "Zen 4"}
            paths.append(tmp_path / f"{system}-{mode}.nc")
            write_cell(c, paths[-1])
    bench = aggregate_cells(paths)
    slow = limits_from_document(HARDWARE | {"node": {"cpu_model": "Zen 3"}}, "slow.json")
    fast_peak = {"compute": {"dtypes": {"float32": {"best_flops_per_s": 4e9}}}}
    fast = limits_from_document(HARDWARE | fast_peak | {"node": {"cpu_model": "Zen 5"}}, "f.json")
    stats = summarize_systems(bench, {"slow": slow, "fast": fast}, SETTINGS)
    assert stats["system"].values.tolist() == ["slow", "fast"]
    cells = stats.sel(framework="torch", mode="eager", arch="mlp", batch=1)
    # Same timings, each against its own roofs over 4 µs: slow's bound is memory (1e3 B at
    # 29 GB/s: 34 ns, above 4e3 FLOP at 400 GFLOP/s), fast's compute (4e3 FLOP at 4 GFLOP/s).
    assert cells["efficiency"].sel(system="slow").item() == pytest.approx(
        1e3 / 2.9e10 / 4e-6, rel=0.05
    )
    assert cells["efficiency"].sel(system="fast").item() == pytest.approx(0.25, rel=0.05)
    # The fast system's cells ran on another CPU than its hardware file measured.
    assert "node_mismatch" not in cells["flags"].sel(system="slow").item()
    assert "node_mismatch" in cells["flags"].sel(system="fast").item()
    assert one_system(stats, "fast").attrs["roofline_peak_flops_per_s"] == 4e9
    assert one_system(stats, "slow").attrs["roofline_peak_flops_per_s"] == 4e11
    with pytest.raises(ValueError, match="no hardware limits for the system"):
        summarize_systems(bench, {"slow": slow}, SETTINGS)


def test_tables_need_a_path_each(tmp_path):
    summary = summarize(bench_of(tmp_path, [cell("torch", "eager", noisy(1e-3))]), LIMITS, SETTINGS)
    with pytest.raises(ValueError, match="winners"):
        write_tables(summary, {n: tmp_path / n for n in TABLES if n != "winners"})


def test_a_flagged_cell_does_not_compete_and_is_listed_as_excluded(tmp_path):
    cells = [
        cell("torch", "eager", noisy(0.80e-3, seed=1)),  # fastest, but measured while contended
        cell("torch", "compiled", noisy(1.00e-3, seed=2)),
        cell("jax", "jit", noisy(1.20e-3, seed=3)),
    ]
    cells[0].attrs["contended"] = 1
    verdicts = summarize(bench_of(tmp_path, cells), LIMITS, SETTINGS).sel(arch="mlp", batch=1)
    assert verdicts["winner"].sel(scope="all").item() == "torch/compiled"
    assert verdicts["winner_excluded"].sel(scope="all").item() == "torch/eager"
    assert verdicts["winner_excluded"].sel(scope="compiled").item() == ""


def test_a_cell_with_one_process_on_another_cpu_is_flagged_node_mismatch(tmp_path):
    paths = []
    for process, model in enumerate(("Zen 3", "Zen 4")):
        c = cell("torch", "eager", noisy(1e-3, seed=process))
        c.attrs |= {"process": process, "cpu_model": model, "host": f"n{process}"}
        paths.append(tmp_path / f"p{process}.nc")
        write_cell(c, paths[-1])
    limits = limits_from_document(HARDWARE | {"node": {"cpu_model": "Zen 3"}}, "hw.json")
    summary = summarize(aggregate_cells(paths), limits, SETTINGS)
    flags = summary["flags"].sel(framework="torch", mode="eager", arch="mlp", batch=1).item()
    assert "node_mismatch" in flags  # process 1 ran on a Zen 4, the hardware file is a Zen 3's


def test_high_cv_is_noise_above_the_threshold_and_above_the_machines_beside_it():
    cells = {
        "cv_pct": np.array([5.0, 15.0, 15.0, 15.0, 40.0]),
        "canary_cv_pct": np.array([1.0, 1.0, 10.0, np.nan, 25.0]),
    }
    # quiet; own noise; the machine's (15 < 2 × 10); no canary: the threshold alone; 40 < 50
    assert high_cv(cells, 10.0, 2.0).tolist() == [False, True, False, True, False]
    assert high_cv(cells, 10.0, 1.0).tolist() == [False, True, True, True, True]


def test_only_flags_about_the_measurement_keep_a_cell_out_of_the_winners():
    flags = np.array(
        [["", "not_compiled", "partially_compiled"], ["high_cv", "not_compiled,contended", ""]],
        dtype=object,
    )
    # a cell's own noise is in its CIs: high_cv competes; contention is about the moment
    assert untrusted(flags).tolist() == [[False, False, False], [False, True, False]]
    assert untrusted(np.array(["invalid_fast", "node_mismatch"], dtype=object)).all()


def test_the_statistics_do_not_inherit_the_aggregates_file_version(tmp_path):
    paths = []
    for i, c in enumerate([cell("torch", "eager", noisy(1e-3)), cell("jax", "jit", noisy(2e-3))]):
        paths.append(tmp_path / f"cell{i}.nc")
        write_cell(c, paths[-1])
    write_aggregate(paths, tmp_path / "bench.nc")  # written with bench.nc's schema_version
    stats = summarize_systems(read_bench(tmp_path / "bench.nc"), {"local": LIMITS}, SETTINGS)
    assert "schema_version" not in stats.attrs
    assert "schema_version" not in json.loads(stats["system_attrs"].sel(system="local").item())
    write_stats(stats, tmp_path / "stats.nc")
    assert "schema_version" not in one_system(read_stats(tmp_path / "stats.nc"), "local").attrs


def test_the_stats_script_imports_nothing_from_present():
    """The statistics are computed, not rendered: the tables are the tables rule's."""
    source = (REPO / "workflow/scripts/stats.py").read_text()
    imported = [line for line in source.splitlines() if line.startswith(("from ", "import "))]
    assert imported and not [line for line in imported if "fwbench.present" in line]


def test_a_bf16_cell_is_held_against_the_bf16_peak_and_float32_against_its_own(tmp_path):
    fp32 = cell("torch", "eager", noisy(1e-3), flops=4e9, bytes=1.0, working_set_bytes=1.0)
    bf16 = cell("torch", "eager", noisy(1e-3), flops=4e9, bytes=1.0, working_set_bytes=1.0)
    bf16.precision = "bfloat16"
    limits = HardwareLimits(1e12, 1e12, source="hand", bf16_peak_flops_per_s=2e12)
    stats = summarize(bench_of(tmp_path, [fp32, bf16]), limits, StatsSettings())
    bound = stats["lower_bound_s"].sel(framework="torch", mode="eager", arch="mlp", batch=1)
    assert float(bound.sel(precision="float32")) == pytest.approx(4e-3)  # 4e9 / 1e12
    assert float(bound.sel(precision="bfloat16")) == pytest.approx(2e-3)  # 4e9 / 2e12
    unmeasured = HardwareLimits(1e12, 1e12, source="hand")
    stats = summarize(bench_of(tmp_path, [fp32, bf16]), unmeasured, StatsSettings())
    bound = stats["lower_bound_s"].sel(framework="torch", mode="eager", arch="mlp", batch=1)
    assert math.isnan(float(bound.sel(precision="bfloat16")))  # no bf16 peak: no roof


def test_a_cell_beyond_the_roof_by_less_than_its_ci_is_not_invalid_fast():
    """The roofs were measured at one moment of a machine whose speed moves: a cell 5 % past
    its roof whose median's CI reaches 10 % slower is not flagged; one 2× past it is."""
    metrics = roofline(
        np.full(3, 1e3),
        np.full(3, 1.0),
        np.full(3, np.nan),
        np.array([1e-6 / 1.05, 0.5e-6, 1e-6 / 1.05]),
        LIMITS,
        slowest_s=np.array([1.1e-6, 0.55e-6, np.nan]),
    )
    assert metrics.efficiency[0] == pytest.approx(1.05)
    assert metrics.invalid_fast.tolist() == [False, True, True]  # no CI: the median decides
