"""The memory hierarchy: level capacities, the sweep's sizes, the plateaus read off a curve, and
the C kernels (fwbench.memory.native) that measure the curve and the clock."""

from __future__ import annotations

import math

import pytest

from fwbench.memory import levels, native

KiB, MiB = 2**10, 2**20
CACHES = {
    "l1d_bytes": 48 * KiB,
    "l2_bytes": 2 * MiB,
    "l3_bytes": 32 * MiB,
    "llc_level": 3,
    "llc_total_bytes": 64 * MiB,  # two L3 instances
}
# A synthetic machine: each level's true bandwidth per kernel (read, copy, triad).
CAPACITIES = {"L1": 32 * KiB, "L2": 1 * MiB, "L3": 32 * MiB}
TRUE_BPS = {
    "L1": {"read": 450e9, "copy": 400e9, "triad": 500e9},
    "L2": {"read": 200e9, "copy": 150e9, "triad": 180e9},
    "L3": {"read": 100e9, "copy": 70e9, "triad": 90e9},
    "DRAM": {"read": 20e9, "copy": 15e9, "triad": 18e9},
}


# ---------------------------------------------------------------- capacities


def test_private_levels_scale_with_threads_and_the_last_level_is_its_total():
    assert levels.cpu_level_capacities(CACHES, threads=4) == {
        "L1": 4 * 48 * KiB,
        "L2": 4 * 2 * MiB,
        "L3": 64 * MiB,
    }
    assert list(levels.cpu_level_capacities(CACHES, threads=1)) == ["L1", "L2", "L3"]


def test_a_level_the_identity_does_not_know_is_left_out():
    caches = {"l1d_bytes": 32 * KiB, "l2_bytes": 4 * MiB, "l3_bytes": None, "llc_level": 2}
    caches["llc_total_bytes"] = 4 * MiB
    assert levels.cpu_level_capacities(caches, threads=2) == {"L1": 64 * KiB, "L2": 4 * MiB}


def test_without_a_total_the_last_level_is_one_instance():
    caches = CACHES | {"llc_total_bytes": None}
    assert levels.cpu_level_capacities(caches, threads=8)["L3"] == 32 * MiB


def test_capacities_refuse_fewer_than_one_thread():
    with pytest.raises(ValueError, match="threads must be ≥ 1, got 0"):
        levels.cpu_level_capacities(CACHES, threads=0)


# ---------------------------------------------------------------- sweep sizes


def test_sweep_sizes_double_per_octave_from_min_to_max():
    assert levels.sweep_sizes(1024, 16 * KiB, 1) == [1024, 2048, 4096, 8192, 16384]


def test_sweep_sizes_are_geometric_with_points_per_octave():
    sizes = levels.sweep_sizes(1000, 8000, 2)
    assert sizes == [1000, 1414, 2000, 2828, 4000, 5657, 8000]
    ratios = [b / a for a, b in zip(sizes, sizes[1:], strict=False)]
    assert ratios == pytest.approx([math.sqrt(2)] * 6, rel=1e-3)


def test_sweep_sizes_stop_at_the_last_point_not_above_max():
    assert levels.sweep_sizes(1000, 5000, 1) == [1000, 2000, 4000]


@pytest.mark.parametrize(
    ("low", "high", "per_octave", "message"),
    [
        (0, 1024, 1, "0 < min < max"),
        (4096, 1024, 1, "0 < min < max"),
        (1024, 1024, 1, "0 < min < max"),
        (1024, 4096, 0, "points_per_octave must be ≥ 1, got 0"),
    ],
)
def test_sweep_sizes_refuse_bad_bounds(low, high, per_octave, message):
    with pytest.raises(ValueError, match=message):
        levels.sweep_sizes(low, high, per_octave)


# ---------------------------------------------------------------- plateaus


def test_each_plateau_is_read_well_inside_its_level():
    ranges = levels.plateau_ranges({"L1": 1000, "L2": 10_000, "L3": 100_000})
    assert ranges == {
        "L1": (0.0, 500.0),
        "L2": (2000.0, 5000.0),
        "L3": (20_000.0, 50_000.0),
        "DRAM": (400_000.0, math.inf),
    }
    assert list(ranges) == ["L1", "L2", "L3", "DRAM"]


def test_without_known_caches_everything_is_dram():
    assert levels.plateau_ranges({}) == {"DRAM": (0.0, math.inf)}


def test_a_level_under_four_times_the_one_below_reads_the_whole_span_between_them():
    # Sapphire-Rapids-like with 16 threads: L2 16 × 2 MiB = 32 MiB, L3 105 MiB shared
    ranges = levels.plateau_ranges({"L1": 786_432, "L2": 33_554_432, "L3": 110_100_480})
    assert ranges["L3"] == (33_554_432, 110_100_480)
    assert ranges["L2"] == (2 * 786_432, 0.5 * 33_554_432)  # wide enough: the usual range


def _level_of(size: float) -> str:
    for name, capacity in CAPACITIES.items():
        if size <= capacity:
            return name
    return "DRAM"


def _synthetic_curve(max_bytes: float) -> list[dict]:
    """Steps at the capacities; a point strictly within a factor 2 of a capacity mixes the two
    levels (the mean of both: a plateau read there would be off)."""
    curve = []
    for size in levels.sweep_sizes(4 * KiB, max_bytes, 2):
        below, above = _level_of(size / 2), _level_of(size * 2)
        mixed = any(c / 2 < size < 2 * c for c in CAPACITIES.values())
        for kernel in levels.SWEEP_KERNELS:
            bandwidth = TRUE_BPS[_level_of(size)][kernel]
            if mixed:
                bandwidth = (TRUE_BPS[below][kernel] + TRUE_BPS[above][kernel]) / 2
            curve.append({"kernel": kernel, "working_set_bytes": size, "bandwidth_Bps": bandwidth})
    return curve


def test_plateaus_recover_each_levels_bandwidth_and_its_fastest_kernel():
    found = levels.plateaus(_synthetic_curve(1024 * MiB), CAPACITIES)
    assert list(found) == ["L1", "L2", "L3", "DRAM"]
    for name, truth in TRUE_BPS.items():
        level = found[name]
        assert "problem" not in level, name
        for kernel, bandwidth in truth.items():
            assert level["kernels"][kernel]["bandwidth_Bps"] == bandwidth, (name, kernel)
        roof = max(truth, key=truth.get)
        assert level["roof_kernel"] == roof, name
        assert level["bandwidth_Bps"] == truth[roof], name
    assert found["L1"]["roof_kernel"] == "triad" and found["L2"]["roof_kernel"] == "read"
    assert found["L2"]["capacity_bytes"] == 1 * MiB
    assert found["DRAM"]["capacity_bytes"] is None


def test_a_plateau_reports_the_range_it_read_and_the_points_it_covered():
    found = levels.plateaus(_synthetic_curve(1024 * MiB), CAPACITIES)
    l2 = found["L2"]
    assert l2["range_bytes"] == [2 * 32 * KiB, 0.5 * MiB]
    # sizes 4 KiB × √2^k inside [64 KiB, 512 KiB]: 64, 91, 128, 181, 256, 362, 512 KiB
    assert l2["kernels"]["read"]["points"] == 7
    assert l2["kernels"]["read"]["working_set_bytes"] == [64 * KiB, 512 * KiB]
    assert found["DRAM"]["range_bytes"] == [4 * 32 * MiB, None]
    assert found["DRAM"]["kernels"]["triad"]["working_set_bytes"] == [128 * MiB, 1024 * MiB]


def test_a_plateau_is_the_median_so_one_outlier_does_not_move_it():
    curve = _synthetic_curve(1024 * MiB)
    l3_reads = [
        p for p in curve if p["kernel"] == "read" and 2 * MiB <= p["working_set_bytes"] <= 16 * MiB
    ]
    l3_reads[0]["bandwidth_Bps"] = 1e15
    assert levels.plateaus(curve, CAPACITIES)["L3"]["kernels"]["read"]["bandwidth_Bps"] == 100e9


def test_a_level_without_points_gets_a_problem_instead_of_numbers():
    found = levels.plateaus(_synthetic_curve(16 * MiB), CAPACITIES)  # stops below 4 × L3
    dram = found["DRAM"]
    assert dram["bandwidth_Bps"] is None and dram["roof_kernel"] is None
    assert dram["kernels"] == {}
    assert dram["problem"] == "no sweep point between 1.34e+08 and inf bytes"
    assert found["L3"]["bandwidth_Bps"] == TRUE_BPS["L3"]["read"]


def test_a_kernel_missing_from_the_curve_is_missing_from_the_level():
    reads = [p for p in _synthetic_curve(1024 * MiB) if p["kernel"] == "read"]
    found = levels.plateaus(reads, CAPACITIES)
    assert set(found["L1"]["kernels"]) == {"read"}
    assert found["L1"]["roof_kernel"] == "read"


# ---------------------------------------------------------------- the C kernels


@pytest.mark.parametrize(
    ("working_set", "kernel", "threads", "elements"),
    [
        (16 * KiB, "read", 1, 2048),  # 16 KiB / 8 B
        (16 * KiB, "copy", 2, 512),  # 16 KiB / (2 arrays × 2 threads × 8 B)
        (16 * KiB, "triad", 1, 672),  # 682.7 rounded down to the unroll of 32
        (100, "triad", 4, 32),  # never below one unroll
    ],
)
def test_elements_per_thread_round_down_to_the_unroll(working_set, kernel, threads, elements):
    assert native.elements_per_thread(working_set, kernel, threads) == elements
    assert elements % native.LANES == 0


def test_a_missing_compiler_is_named(monkeypatch):
    monkeypatch.setenv("CC", "no-such-cc-fwbench")
    with pytest.raises(RuntimeError, match="no C compiler 'no-such-cc-fwbench' on PATH"):
        native.compiler_command()


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> native.NativeKernels:
    try:
        native.compiler_command()
    except RuntimeError as error:
        pytest.skip(f"no C compiler: {error}")
    return native.build(tmp_path_factory.mktemp("native"))


def test_the_build_records_the_compiler_and_its_flags(kernels):
    assert "-fopenmp" in kernels.compiler["command"]
    assert kernels.compiler["version"]
    assert kernels.threads >= 1


@pytest.mark.parametrize("kernel", levels.SWEEP_KERNELS)
def test_one_tiny_sweep_point_per_kernel_moves_bytes_at_a_positive_rate(kernels, kernel):
    threads = kernels.threads
    elements = native.elements_per_thread(16 * KiB, kernel, threads)
    point = native.time_point(kernels, kernel, elements, threads, min_seconds=0.001, trials=2)
    arrays = levels.ARRAYS_PER_KERNEL[kernel]
    assert point["working_set_bytes"] == arrays * elements * 8 * threads
    assert 16 * KiB - arrays * native.LANES * 8 * threads < point["working_set_bytes"] <= 16 * KiB
    assert len(point["times_s"]) == 2 and point["reps"] >= 1
    moved = point["working_set_bytes"] * point["reps"]
    assert point["bandwidth_Bps"] == pytest.approx(moved / min(point["times_s"]))
    assert 1e8 < point["bandwidth_Bps"] < 1e14  # 0.1 GB/s to 100 TB/s


@pytest.mark.parametrize(("elements", "reps"), [(40, 1), (16, 1), (64, 0)])
def test_the_c_kernels_refuse_bad_arguments(kernels, elements, reps):
    with pytest.raises(RuntimeError, match="bad arguments"):
        kernels.point_seconds("read", elements, reps)


def test_the_clock_is_one_plausible_frequency_per_thread(kernels):
    per_thread = kernels.clock_hz(iterations=2_000_000)  # 32 M adds: about 10 ms
    if not per_thread:
        pytest.skip("no dependent-add chain for this ISA")
    assert len(per_thread) == kernels.threads
    for hz in per_thread:
        assert 0.5e9 < hz < 7e9
