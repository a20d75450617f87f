"""The hardware stage: identity, STREAM's counting and checking, peaks, ridge, the JSON; and the
file's one reading (fwbench.io.hardware_file.HardwareRecord) that the roofline, figures and report
share."""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from fwbench.analysis.roofline import (
    levels_from_json,
    levels_to_json,
    limits_from_record,
    read_hardware_limits,
    roofline,
)
from fwbench.hardware import characterize, theory, workers
from fwbench.host import identity
from fwbench.io.hardware_file import read_hardware_record, record_from_document, write_hardware
from fwbench.memory import levels, stream
from fwbench.present.plots_hardware import draw_hardware
from fwbench.present.report.hardware import hardware_section

from conftest import REPO
from synthetic import MEMORY_LEVELS, TRIAD_BPS, hardware_document

SCRIPT = REPO / "workflow" / "scripts" / "hardware.py"
PEAKS = REPO / "resources" / "peaks.yaml"
TINY_SETTINGS = {
    "stream_llc_multiple": 0.05,
    "stream_trials": 2,
    "sweep_min_bytes": 16384,
    "sweep_llc_multiple": 0.5,
    "sweep_points_per_octave": 1,
    "sweep_point_s": 0.002,
    "sweep_trials": 1,
    "gemm_min_n": 32,
    "gemm_max_n": 64,
    "gemm_tolerance": 0.02,
    "gemm_trials": 2,
    "dtypes": ["float32", "bfloat16"],
}


# ---------------------------------------------------------------- identity


def test_this_machines_identity_has_sane_cores_caches_and_memory():
    cpu = identity.cpu_identity()
    assert cpu["logical_cores"] >= cpu["physical_cores"] >= 1
    assert 1 <= cpu["affinity_cores"] <= cpu["logical_cores"]
    assert cpu["memory_total_bytes"] > 2**20
    assert set(cpu["isa"]) == set(identity.ISA_FLAGS)
    caches = cpu["caches"]
    for key in ("l1d_bytes", "l2_bytes", "l3_bytes", "llc_total_bytes"):
        assert caches[key] is None or caches[key] > 0, key
    assert caches["llc_total_bytes"], "STREAM cannot be sized on this machine"
    assert caches["source"]


def _fake_cache(root: Path, cpu: int, index: int, level: int, kind: str, size: str, shared: str):
    directory = root / f"cpu{cpu}" / "cache" / f"index{index}"
    directory.mkdir(parents=True)
    for name, value in {
        "level": level,
        "type": kind,
        "size": size,
        "shared_cpu_list": shared,
    }.items():
        (directory / name).write_text(f"{value}\n")


def test_sysfs_caches_are_per_instance_and_the_last_level_is_summed_over_instances(tmp_path):
    for cpu in (0, 1):
        _fake_cache(tmp_path, cpu, 0, 1, "Data", "48K", str(cpu))
        _fake_cache(tmp_path, cpu, 1, 1, "Instruction", "32K", str(cpu))
        _fake_cache(tmp_path, cpu, 2, 2, "Unified", "2048K", str(cpu))
        _fake_cache(tmp_path, cpu, 3, 3, "Unified", "16M", str(cpu))  # one L3 per CPU
    sizes = identity.cache_sizes(identity.read_sysfs_caches(tmp_path), info={})
    assert sizes["l1d_bytes"] == 48 * 1024
    assert sizes["l2_bytes"] == 2 * 2**20
    assert sizes["l3_bytes"] == 16 * 2**20
    assert sizes["llc_instances"] == 2
    assert sizes["llc_total_bytes"] == 32 * 2**20


def test_a_shared_cache_counts_once(tmp_path):
    for cpu in (0, 1):
        _fake_cache(tmp_path, cpu, 0, 2, "Unified", "1024K", "0-1")
    sizes = identity.cache_sizes(identity.read_sysfs_caches(tmp_path), info={})
    assert sizes["llc_level"] == 2
    assert sizes["llc_total_bytes"] == 2**20


def test_without_sysfs_the_caches_come_from_cpuinfo_and_say_so(tmp_path):
    info = {"l1_data_cache_size": 65536, "l2_cache_size": 4 * 2**20, "l3_cache_size": 0}
    sizes = identity.cache_sizes(identity.read_sysfs_caches(tmp_path), info)
    assert sizes["l3_bytes"] is None
    assert sizes["llc_level"] == 2
    assert sizes["llc_total_bytes"] == 4 * 2**20
    assert "py-cpuinfo" in sizes["source"]


@pytest.mark.parametrize(("text", "size"), [("32K", 32768), ("32768K", 2**25), ("2M", 2**21)])
def test_cache_sizes_parse_with_their_unit(text, size):
    assert identity.parse_size(text) == size


def test_an_unparseable_cache_size_is_named():
    with pytest.raises(ValueError, match="'lots'"):
        identity.parse_size("lots")


# ---------------------------------------------------------------- STREAM


def test_stream_counts_two_arrays_for_copy_and_scale_three_for_add_and_triad():
    by_hand = {"copy": 2 * 1000 * 8, "scale": 2 * 1000 * 8, "add": 3 * 1000 * 8}
    by_hand["triad"] = 3 * 1000 * 8
    assert {k: stream.kernel_bytes(k, 1000, 8) for k in stream.KERNELS} == by_hand
    assert stream.kernel_bytes("triad", 1000, 4) == 12000


def test_stream_rejects_an_unknown_kernel_by_name():
    with pytest.raises(ValueError, match="'saxpy'"):
        stream.kernel_bytes("saxpy", 10, 8)


def test_stream_arrays_are_the_llc_multiple_of_the_last_level_cache():
    llc = 32 * 2**20
    assert stream.array_elements(llc, 4, 8) == 4 * llc // 8
    assert stream.array_elements(llc, 0.25, 8) == llc // 32
    assert stream.array_elements(1000, 1, 3) == 334  # rounds up: never below the multiple
    with pytest.raises(ValueError, match="-1"):
        stream.array_elements(llc, -1, 8)


def test_arrays_below_streams_four_times_rule_are_labelled_as_partly_cache():
    assert "cache bandwidth" in characterize._sizing(2**25, 0.5)["note"]
    assert "note" not in characterize._sizing(2**25, 4)


def test_stream_refuses_arrays_that_do_not_fit_in_memory():
    with pytest.raises(ValueError, match="3 arrays × 1000 elements"):
        stream.check_fits_in_memory(1000, 8, available_bytes=20000)
    stream.check_fits_in_memory(1000, 8, available_bytes=40000)


def test_streams_expected_values_follow_its_recurrence():
    # a=2 (STREAM doubles a=1), b=2, c=0; one round: c=a=2, b=3c=6, c=a+b=8, a=b+3c=30.
    assert stream.expected_values(1) == {"a": 30.0, "b": 6.0, "c": 8.0}


def test_numpy_stream_validates_and_reports_best_rate_per_kernel():
    result = stream.numpy_stream(elements=1000, trials=3)
    assert result["validation"]["passed"]
    for kernel, summary in result["kernels"].items():
        assert len(summary["times_s"]) == 3
        assert summary["best_s"] == min(summary["times_s"])
        expected = stream.kernel_bytes(kernel, 1000, 8) / summary["best_s"]
        assert summary["best_bandwidth_Bps"] == pytest.approx(expected)


def _arrays_after(iterations: int, elements: int = 1000) -> dict[str, np.ndarray]:
    return {k: np.full(elements, v) for k, v in stream.expected_values(iterations).items()}


def test_stream_validation_accepts_the_right_arrays():
    errors = stream.validate(_arrays_after(4), iterations=4, dtype="float64")
    assert errors == {"a": 0.0, "b": 0.0, "c": 0.0}


def test_stream_validation_catches_one_wrong_element():
    arrays = _arrays_after(4)
    arrays["b"][17] += 1.0
    with pytest.raises(stream.StreamValidationError, match="array b"):
        stream.validate(arrays, iterations=4, dtype="float64")


def test_stream_validation_catches_a_kernel_run_the_wrong_number_of_times():
    with pytest.raises(stream.StreamValidationError):
        stream.validate(_arrays_after(3), iterations=4, dtype="float64")


def test_stream_validation_catches_nan():
    arrays = _arrays_after(2)
    arrays["c"][0] = np.nan
    with pytest.raises(stream.StreamValidationError, match="array c"):
        stream.validate(arrays, iterations=2, dtype="float64")


# ---------------------------------------------------------------- peaks and ridge


def test_ridge_is_peak_over_bandwidth():
    assert theory.ridge_point(400e9, 20e9) == pytest.approx(20.0)
    with pytest.raises(ValueError, match="0"):
        theory.ridge_point(400e9, 0)


def test_gemm_rate_is_two_n_cubed_over_the_best_time():
    summary = workers.gemm_summary(100, [0.5, 0.25, 0.3])
    assert summary == {"n": 100, "flops": 2_000_000, "best_s": 0.25, "flops_per_s": 8_000_000.0}


class _FakeGemm:
    """A GEMM callable without a framework: `rates` FLOP/s per size; records every call."""

    def __init__(self, rates: dict[int, float], fails_for: str | None = None):
        self.rates, self.fails_for, self.calls = rates, fails_for, []

    def __call__(self, n: int, trials: int, dtype: str) -> dict:
        self.calls.append((n, dtype))
        if dtype == self.fails_for:
            raise TypeError(f"no {dtype} matmul here")
        return {"times_s": [2 * n**3 / self.rates[n]] * trials, "call": f"fake({dtype})"}


def test_gemm_sizes_are_powers_of_two_and_the_one_and_a_half_points_between():
    powers_and_halves = [256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192]
    assert workers.gemm_sizes(256, 8192) == powers_and_halves
    assert workers.gemm_sizes(32, 100) == [32, 48, 64, 96]
    assert workers.gemm_sizes(64, 64) == [64]


@pytest.mark.parametrize(("low", "high"), [(8, 64), (128, 64)])
def test_gemm_sizes_refuse_bad_bounds(low, high):
    with pytest.raises(ValueError, match=f"got {low}, {high}"):
        workers.gemm_sizes(low, high)


def test_the_gemm_sweep_stops_once_the_rate_stops_rising_and_keeps_the_best():
    sizes = workers.gemm_sizes(32, 8192)
    rising = {32: 1e9, 48: 2e9, 64: 4e9, 96: 8e9}
    # then flat: within the 2 % tolerance, the first of them a hair faster than 96's
    rates = rising | {n: 8.1e9 if n == 128 else 7.9e9 for n in sizes if n not in rising}
    gemm = _FakeGemm(rates)
    result = workers.sweep_one_dtype(gemm, sizes, trials=2, dtype="float32", tolerance=0.02)
    visited = sizes[: len(rising) + workers.GEMM_PATIENCE]
    assert [n for n, _ in gemm.calls] == visited
    assert [entry["n"] for entry in result["sizes"]] == visited
    assert result["stopped_at_n"] == visited[-1]
    assert result["best_n"] == 128
    assert result["flops_per_s"] == pytest.approx(8.1e9)
    assert result["call"] == "fake(float32)"
    assert all(len(entry["times_s"]) == 2 for entry in result["sizes"])


def test_large_gemm_sizes_get_fewer_trials_within_the_time_budget_but_at_least_two():
    sizes = [512, 1024, 2048, 4096]
    # 1e11 FLOP/s everywhere: 512 takes 2.7 ms a call, 4096 takes 1.37 s
    gemm = _FakeGemm(dict.fromkeys(sizes, 1e11))
    result = workers.sweep_one_dtype(gemm, sizes, trials=5, dtype="float32", tolerance=-1.0)
    trials = {entry["n"]: len(entry["times_s"]) for entry in result["sizes"]}
    assert workers.GEMM_SIZE_BUDGET_S == 1.0  # the counts below are written for 1 s
    # 2048 takes 0.17 s a call (5 fit in 1 s); 4096 takes 1.37 s (none fit: the floor of 2)
    assert trials == {512: 5, 1024: 5, 2048: 5, 4096: 2}


def test_a_rise_beyond_the_tolerance_restarts_the_gemm_sweeps_patience():
    sizes = [32, 48, 64, 96, 128, 192]
    # 48 is flat, 64 rises by 50 %: the sweep goes on past 64's flat successors
    rates = {32: 1e9, 48: 1.01e9, 64: 1.5e9, 96: 1.5e9, 128: 1.5e9, 192: 9e9}
    gemm = _FakeGemm(rates)
    result = workers.sweep_one_dtype(gemm, sizes, trials=1, dtype="float32", tolerance=0.02)
    assert workers.GEMM_PATIENCE == 2  # the rates above are written for a patience of 2
    assert [n for n, _ in gemm.calls] == [32, 48, 64, 96, 128]
    assert result["best_n"] == 64


def test_a_gemm_sweep_that_never_flattens_runs_every_size():
    sizes = [32, 48, 64, 96]
    gemm = _FakeGemm({n: n * 1e8 for n in sizes})
    result = workers.sweep_one_dtype(gemm, sizes, trials=1, dtype="float32", tolerance=0.02)
    assert result["stopped_at_n"] == 96 and result["best_n"] == 96
    assert len(result["sizes"]) == 4


def test_a_dtype_that_fails_is_recorded_and_the_others_still_run():
    gemm = _FakeGemm({32: 1e9, 48: 0.9e9, 64: 0.8e9}, fails_for="bfloat16")
    result = workers.gemm_sweep(
        gemm, min_n=32, max_n=64, trials=1, dtypes=["bfloat16", "float32"], tolerance=0.02
    )
    assert result["bfloat16"] == {"error": "TypeError: no bfloat16 matmul here"}
    assert result["float32"]["flops_per_s"] == pytest.approx(1e9)
    assert result["float32"]["best_n"] == 32


def _fake_cpuinfo(vendor: str, family: int, flags: list[str]) -> dict:
    return {
        "brand_raw": "Fake CPU",
        "vendor_id_raw": vendor,
        "family": family,
        "flags": flags,
        "hz_advertised": [2_000_000_000, 0],
    }


@pytest.mark.parametrize(
    ("vendor", "family", "flags", "per_cycle"),
    [
        # AVX-512, 2 FMA units: 2 × 2 FLOP × 16 fp32 lanes; AMX bf16 1024 FLOP/cycle, int8
        # 2048 operations.
        ("GenuineIntel", 6, ["avx", "avx2", "fma", "avx512f", "amx_tile", "amx_bf16", "amx_int8",
                             "avx512_vnni"],
         {"float32": 64, "float64": 32, "bfloat16": 1024, "float16": None, "int8": 2048}),
        # AVX2 + FMA: 2 × 2 × 8 fp32 lanes; no bf16 or int8 dot-product instructions.
        ("GenuineIntel", 6, ["avx", "avx2", "fma"],
         {"float32": 32, "float64": 16, "bfloat16": None, "float16": None, "int8": None}),
        # Zen 4: AVX-512 on 256-bit units; VDPBF16PS 4 FLOP per fp32 lane × 8 lanes × 2;
        # VPDPBUSD 8 operations per 32-bit lane × 8 lanes × 2.
        ("AuthenticAMD", 25, ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"],
         {"float32": 32, "float64": 16, "bfloat16": 64, "float16": None, "int8": 128}),
        # AVX2 with AVX-VNNI (256-bit VPDPBUSD): 2 × 8 × 8.
        ("GenuineIntel", 6, ["avx", "avx2", "fma", "avx_vnni"],
         {"float32": 32, "float64": 16, "bfloat16": None, "float16": None, "int8": 128}),
        # AVX without FMA: one add and one multiply per lane per cycle.
        ("GenuineIntel", 6, ["avx"], {"float32": 16, "float64": 8, "bfloat16": None,
                                     "float16": None, "int8": None}),
    ],
)  # fmt: skip
def test_theoretical_peak_is_flop_per_cycle_times_cores_times_clock(
    tmp_path, vendor, family, flags, per_cycle
):
    cpu = identity.cpu_identity(_fake_cpuinfo(vendor, family, flags), root=tmp_path)
    assert cpu["clock_hz"] == 2e9
    peaks = theory.theoretical_cpu_peaks(cpu, cores=4)
    assert peaks["flop_per_cycle"] == per_cycle
    for dtype, flop in per_cycle.items():
        expected = None if flop is None else flop * 4 * 2e9
        assert peaks["flops_per_s"][dtype] == expected
    assert any("FMA units" in assumption for assumption in peaks["assumptions"])


ISA_CASES = [
    ("GenuineIntel", 6, ["avx", "avx2", "fma", "avx512f", "amx_tile", "amx_bf16", "amx_fp16"]),
    ("GenuineIntel", 6, ["avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16"]),
    ("GenuineIntel", 6, ["avx", "avx2", "fma"]),
    ("AuthenticAMD", 25, ["avx", "avx2", "fma", "avx512f", "avx512_bf16"]),
    ("AuthenticAMD", 23, ["avx", "avx2", "fma"]),
    ("GenuineIntel", 6, ["avx"]),
]


@pytest.mark.parametrize(("vendor", "family", "flags"), ISA_CASES)
def test_every_derived_flop_per_cycle_figure_names_its_source(tmp_path, vendor, family, flags):
    cpu = identity.cpu_identity(_fake_cpuinfo(vendor, family, flags), root=tmp_path)
    model = theory.isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    derived = {dtype for dtype, flop in model["flop_per_cycle"].items() if flop is not None}
    assert {"float32", "float64"} <= derived
    assert set(model["sources"]) == derived
    for dtype in derived:
        assert model["sources"][dtype].strip(), dtype


def test_amx_sets_bf16_to_1024_flop_per_cycle_citing_intel(tmp_path):
    flags = ["avx", "avx2", "fma", "avx512f", "amx_tile", "amx_bf16"]
    cpu = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, flags), root=tmp_path)
    model = theory.isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    assert model["flop_per_cycle"]["bfloat16"] == 1024
    assert model["sources"]["bfloat16"] == theory.AMX_SOURCE
    assert "AMX" in model["sources"]["bfloat16"] and "1024" in model["sources"]["bfloat16"]


def test_avx512_bf16_without_amx_cites_vdpbf16ps(tmp_path):
    flags = ["avx", "avx2", "fma", "avx512f", "avx512_bf16"]
    cpu = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, flags), root=tmp_path)
    model = theory.isa_flop_per_cycle(cpu["isa"], cpu["vendor"], cpu.get("family"))
    assert model["flop_per_cycle"]["bfloat16"] == 2 * 4 * 16
    assert "VDPBF16PS" in model["sources"]["bfloat16"]


def test_a_measured_clock_replaces_the_identity_clock_in_the_peaks(tmp_path):
    cpu = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, ["avx2", "fma"]), root=tmp_path)
    measured = {"clock_hz": 3.0e9, "method": "dependent adds (test)"}
    peaks = theory.theoretical_cpu_peaks(cpu, cores=4, measured_clock=measured)
    assert peaks["clock_hz"] == 3.0e9
    assert peaks["identity_clock_hz"] == 2e9
    assert peaks["clock_source"] == "measured: dependent adds (test)"
    assert peaks["flops_per_s"]["float32"] == 32 * 4 * 3.0e9

    without = theory.theoretical_cpu_peaks(cpu, cores=4)
    assert without["clock_hz"] == 2e9
    assert without["clock_source"].startswith("identity")
    assert without["flops_per_s"]["float32"] == 32 * 4 * 2e9


def test_a_failed_clock_measurement_falls_back_to_the_identity_clock(tmp_path):
    cpu = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, ["avx2", "fma"]), root=tmp_path)
    failed = {"clock_hz": None, "problem": "no dependent-add chain for this ISA"}
    peaks = theory.theoretical_cpu_peaks(cpu, cores=1, measured_clock=failed)
    assert peaks["clock_hz"] == 2e9 and peaks["clock_source"].startswith("identity")


def test_the_theoretical_peak_source_states_flop_per_cycle_cores_and_clock(tmp_path):
    cpu = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, ["avx2", "fma"]), root=tmp_path)
    measured = {"clock_hz": 3.0e9, "method": "test"}
    peaks = theory.theoretical_peaks("cpu", cpu, None, 4, [], measured)
    assert peaks["flops_per_s"]["float32"] == 32 * 4 * 3.0e9
    source = peaks["flops_source"]["float32"]
    assert "32 FLOP/cycle/core × 4 cores × 3.000 GHz" in source
    assert theory.INTEL_OPTIMIZATION_MANUAL in source
    assert peaks["flops_source"]["bfloat16"] == "not derivable"


def test_ridges_are_given_per_memory_level_with_a_bandwidth():
    compute = {"dtypes": {"float32": {"best_flops_per_s": 4e11}}}
    theory_doc = {"bandwidth_Bps": None, "flops_per_s": {"float32": None}}
    memory_levels = {
        "L1": {"bandwidth_Bps": 4e12},
        "L2": {"bandwidth_Bps": 1e12},
        "DRAM": {"bandwidth_Bps": None, "problem": "no sweep point"},
    }
    ridge = theory.ridges(["float32"], compute, 2e10, theory_doc, memory_levels)
    per_dtype = ridge["per_dtype"]["float32"]
    assert per_dtype["measured_flop_per_byte"] == pytest.approx(20.0)
    assert per_dtype["measured_flop_per_byte_per_level"] == {
        "L1": pytest.approx(0.1),
        "L2": pytest.approx(0.4),
    }


def test_no_theoretical_peak_is_invented_for_an_isa_without_a_model(tmp_path):
    cpu = identity.cpu_identity(_fake_cpuinfo("ARM", 0, ["asimd", "fphp"]), root=tmp_path)
    peaks = theory.theoretical_cpu_peaks(cpu, cores=8)
    assert set(peaks["flops_per_s"].values()) == {None}
    assert "not derived" in peaks["derivation"]


def test_bf16_is_skipped_with_a_reason_where_the_hardware_lacks_it(tmp_path):
    without = identity.cpu_identity(_fake_cpuinfo("GenuineIntel", 6, ["avx2"]), root=tmp_path)
    with_bf16 = identity.cpu_identity(
        _fake_cpuinfo("AuthenticAMD", 25, ["avx2", "avx512_bf16"]), root=tmp_path
    )
    assert "bf16" in identity.dtype_support("cpu", without, None)["bfloat16"]
    assert identity.dtype_support("cpu", with_bf16, None)["bfloat16"] is None
    assert (
        "8.0" in identity.dtype_support("cuda", without, {"compute_capability": "7.0"})["bfloat16"]
    )
    assert (
        identity.dtype_support("cuda", without, {"compute_capability": "9.0"})["bfloat16"] is None
    )


@pytest.mark.parametrize(
    ("name", "entry", "bandwidth"),
    [
        ("NVIDIA H200", "NVIDIA H200 SXM", 4.8e12),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 3.35e12),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB", 2.039e12),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB", 1.555e12),
        ("Apple M3", "Apple M3", 100e9),
    ],
)
def test_known_devices_are_found_by_name_with_vendor_figures(name, entry, bandwidth):
    found = theory.match_known_device(name, theory.load_known_devices(PEAKS))
    assert found["name"] == entry
    assert found["bandwidth_Bps"] == bandwidth
    assert found["source"]


@pytest.mark.parametrize(
    "name", ["NVIDIA H200 NVL", "NVIDIA H100 PCIe", "Apple M3 Max", "AMD EPYC"]
)
def test_other_devices_do_not_borrow_a_known_devices_figures(name):
    assert theory.match_known_device(name, theory.load_known_devices(PEAKS)) is None


def test_known_device_bf16_figures_are_dense_not_sparse():
    by_name = {d["name"]: d for d in theory.load_known_devices(PEAKS)}
    assert by_name["NVIDIA H100 SXM"]["bfloat16_flops_per_s"] == 989.5e12
    assert by_name["NVIDIA A100 SXM4 80GB"]["bfloat16_flops_per_s"] == 312e12


def test_a_known_device_figure_that_is_not_a_number_is_named(tmp_path):
    table = tmp_path / "peaks.yaml"
    table.write_text("devices:\n  - {name: X, match: X, bandwidth_Bps: 1.0e12, source: s}\n")
    with pytest.raises(ValueError, match=r"X\.bandwidth_Bps = '1\.0e12'"):
        theory.load_known_devices(table)


def test_settings_with_an_unknown_dtype_are_refused_by_name():
    with pytest.raises(ValueError, match="int4"):
        characterize.check_settings(TINY_SETTINGS | {"dtypes": ["int4"]}, ["torch"], "cpu")


# ---------------------------------------------------------------- workers and the script


def test_a_failing_worker_raises_with_its_exit_code():
    with pytest.raises(RuntimeError, match="numpy/bogus exited with 1"):
        workers.run_worker("numpy", "bogus", {}, threads=1, device="cpu")


def test_without_torch_stream_falls_back_to_numpy_and_says_so():
    result = characterize._measure_stream(["jax"], "cpu", 1, elements=1000, trials=2, log=None)
    assert result["runner"] == "numpy"
    assert "single-threaded" in result["method"]
    assert result["validation"]["passed"]


def _start_script(output: Path, lock: Path, log: Path, frameworks: list[str]) -> subprocess.Popen:
    """The Snakemake script in its own process (it pins and sets threads for its process), with
    a stand-in for the `snakemake` object Snakemake injects."""
    fake = {
        "output": [str(output)],
        "log": [str(log)],
        "params": {"settings": TINY_SETTINGS, "frameworks": frameworks}
        | {"system": {"device": "cpu", "threads": 1}},
        "config": {"timing_lock": str(lock)},
        "peaks": str(PEAKS),
    }
    code = textwrap.dedent(f"""
        import json, runpy
        from types import SimpleNamespace
        fake = json.loads({json.dumps(fake)!r})
        snakemake = SimpleNamespace(
            output=fake["output"], log=fake["log"], input=SimpleNamespace(peaks=fake["peaks"]),
            params=SimpleNamespace(**fake["params"]), config=fake["config"],
            wildcards=SimpleNamespace(system="box"),
        )
        runpy.run_path({str(SCRIPT)!r}, init_globals={{"snakemake": snakemake}})
    """)
    return subprocess.Popen([sys.executable, "-c", code])


def _wait_until_blocked_on(lock: Path, job: subprocess.Popen, timeout_s: float = 120) -> None:
    """Return once something (only `job` here) waits for the flock on `lock`: Linux lists a
    blocked waiter in /proc/locks with '->' before its entry, naming the file's inode."""
    inode = f":{lock.stat().st_ino} "
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert job.poll() is None, f"the script exited with {job.returncode} before taking the lock"
        waiters = [line for line in Path("/proc/locks").read_text().splitlines() if "->" in line]
        if any(inode in line for line in waiters):
            return
        time.sleep(0.05)
    raise AssertionError(f"the script did not wait for {lock} within {timeout_s} s")


@pytest.mark.e2e  # the hardware job with every framework's GEMM
def test_the_script_waits_for_the_lock_and_writes_a_json_with_every_field(tmp_path):
    output, lock, log = tmp_path / "hw" / "host-cpu.json", tmp_path / "lock", tmp_path / "hw.log"
    frameworks = ["torch", "jax", "tensorflow"]
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    job = _start_script(output, lock, log, frameworks)
    try:
        _wait_until_blocked_on(lock, job)  # not a fixed sleep: imports vary by machine
        time.sleep(1.0)
        assert job.poll() is None and not output.exists(), "ran while the lock was held elsewhere"
    finally:
        fcntl.flock(holder, fcntl.LOCK_UN)
        os.close(holder)
    try:
        assert job.wait(timeout=120) == 0
    finally:
        job.kill()

    result = json.loads(output.read_text())
    assert [p.name for p in output.parent.iterdir()] == ["host-cpu.json"]  # no temp left
    assert {"identity", "bandwidth", "memory", "clock", "compute", "theoretical"} <= set(result)
    assert {"ridge", "provenance"} <= set(result)
    assert result["schema_version"] == 4
    assert set(result["canary"]["levels"]) >= {"L1", "DRAM"}
    assert result["system"] == "box" and result["node"]["cpu_model"]  # the node it measured
    assert result["provenance"]["lock_wait_s"] >= 0.9
    assert result["provenance"]["threads"]["threads"] == 1

    cpu = result["identity"]["cpu"]
    bandwidth = result["bandwidth"]
    assert bandwidth["runner"] == "torch" and bandwidth["validation"]["passed"]
    assert bandwidth["elements_per_array"] == stream.array_elements(
        cpu["caches"]["llc_total_bytes"], TINY_SETTINGS["stream_llc_multiple"], 8
    )
    assert bandwidth["llc_multiple"] == 0.05 and "note" in bandwidth
    triad = bandwidth["kernels"]["triad"]
    assert triad["best_bandwidth_Bps"] > 0

    bf16_reason = identity.dtype_support("cpu", cpu, None)["bfloat16"]
    for dtype in TINY_SETTINGS["dtypes"]:
        entry = result["compute"]["dtypes"][dtype]
        if dtype == "bfloat16" and bf16_reason:
            assert entry["skipped_reason"] == bf16_reason and not entry["per_framework"]
            continue
        expected = frameworks + ["numpy"] * (dtype == "float32")
        assert sorted(entry["per_framework"]) == sorted(expected)
        rates = {fw: r["flops_per_s"] for fw, r in entry["per_framework"].items()}
        assert entry["best_flops_per_s"] == max(rates.values())
        assert rates[entry["best_framework"]] == entry["best_flops_per_s"]
        ridge = result["ridge"]["per_dtype"][dtype]["measured_flop_per_byte"]
        assert ridge == pytest.approx(entry["best_flops_per_s"] / triad["best_bandwidth_Bps"])
        assert entry["best_n"] in workers.gemm_sizes(32, 64)
        for framework, measured in entry["per_framework"].items():
            visited = [size["n"] for size in measured["sizes"]]
            assert visited == workers.gemm_sizes(32, 64)[: len(visited)], framework
            assert measured["best_n"] in visited

    compute = result["compute"]
    assert compute["gemm_sweep"] == {"min_n": 32, "max_n": 64, "trials": 2, "tolerance": 0.02}
    assert compute["dtypes"]["float32"]["best_n"] in (32, 48, 64)
    _check_memory_and_clock(result, cpu)

    settings = result["provenance"]["framework_settings"]
    assert settings["torch"]["num_threads"] == 1
    assert settings["tensorflow"]["intra_op_threads"] == 1
    assert "lock acquired" in log.read_text()


def _check_memory_and_clock(result: dict, cpu: dict) -> None:
    """The working-set sweep and the clock of the end-to-end run (threads = 1)."""
    memory, clock = result["memory"], result["clock"]
    if shutil.which(os.environ.get("CC", "cc")) is None:  # no C kernels: said, not invented
        assert memory["error"] and clock["clock_hz"] is None and clock["problem"]
        return
    assert memory["runner"] == "native" and memory["capacity_rule"] == levels.CAPACITY_RULE
    assert memory["capacities_bytes"] == levels.cpu_level_capacities(cpu["caches"], 1)
    assert memory["threads_used"] == 1 and "-fopenmp" in memory["compiler"]["command"]
    largest = TINY_SETTINGS["sweep_llc_multiple"] * max(memory["capacities_bytes"].values())
    sizes = levels.sweep_sizes(TINY_SETTINGS["sweep_min_bytes"], largest, 1)
    assert len(memory["curve"]) == len(sizes) * len(levels.SWEEP_KERNELS)
    assert all(point["bandwidth_Bps"] > 0 for point in memory["curve"])
    measured = {n: v for n, v in memory["levels"].items() if v["bandwidth_Bps"]}
    assert measured, memory["levels"]
    for name, level in memory["levels"].items():
        if level["bandwidth_Bps"] is None:
            assert level["problem"], name
            continue
        roof = level["kernels"][level["roof_kernel"]]["bandwidth_Bps"]
        assert (
            level["bandwidth_Bps"]
            == roof
            == max(k["bandwidth_Bps"] for k in level["kernels"].values())
        )
    # the sweep stops at half the last level: DRAM's plateau (from 4 × it) is not reached
    assert "no sweep point" in memory["levels"]["DRAM"]["problem"]
    assert "dram_triad_over_stream" not in memory

    assert 0.5e9 < clock["clock_hz"] < 7e9 and len(clock["per_thread_hz"]) == 1
    theoretical = result["theoretical"]
    if theoretical["flops_per_s"]["float32"] is not None:
        assert theoretical["isa_model"]["clock_hz"] == clock["clock_hz"]
        assert theoretical["isa_model"]["clock_source"].startswith("measured")
        assert f"{clock['clock_hz'] / 1e9:.3f} GHz" in theoretical["flops_source"]["float32"]
    ridge = result["ridge"]["per_dtype"]["float32"]["measured_flop_per_byte_per_level"]
    best = result["compute"]["dtypes"]["float32"]["best_flops_per_s"]
    assert ridge == {n: pytest.approx(best / v["bandwidth_Bps"]) for n, v in measured.items()}


# --- the hardware file's one reading: the record every reader takes -----------------------------


def _with_levels(**bandwidths: float | None) -> dict:
    """The synthetic hardware document with some sweep levels' plateaus replaced (None: the
    sweep had no point on it, as fwbench.memory.levels.plateaus writes it)."""
    document = hardware_document()
    for name, bandwidth in bandwidths.items():
        entry = document["memory"]["levels"][name]
        entry |= {"bandwidth_Bps": bandwidth, "roof_kernel": "read" if bandwidth else None}
        if bandwidth is None:
            entry["problem"] = "no sweep point between 2.62e+05 and 1.68e+06 bytes"
    return document


def test_a_level_the_sweep_missed_is_one_filled_roof_for_the_roofline_figures_and_report(
    tmp_path,
):
    path = tmp_path / "hw.json"
    write_hardware(_with_levels(L2=None), path)
    limits, record = read_hardware_limits(path), read_hardware_record(path)
    (roof,) = [level for level in limits.levels if level.name == "L2"]
    (shown,) = [level for level in record.levels if level.name == "L2"]
    l1_Bps = MEMORY_LEVELS["L1"][1]
    assert roof == shown and roof.filled_from == "L1" and roof.bandwidth_Bps == l1_Bps
    assert roof.capacity_bytes == MEMORY_LEVELS["L2"][0]
    # a cell whose working set fits in L2 is held against L1's bandwidth, not L3's slower one
    cell = roofline([1.0], [1e6], [1e6], [1e-4], limits)
    assert cell.memory_level.tolist() == ["L2"]
    assert cell.lower_bound_s[0] == pytest.approx(1e6 / l1_Bps)
    # stats.nc carries the same level (the roofline figure draws it from there) ...
    assert levels_from_json(levels_to_json(limits.levels)) == record.levels
    # ... the report's hardware table shows it, marked as filled ...
    stats = xr.Dataset(attrs={"roofline": limits.describe()})
    section = hardware_section(None, SimpleNamespace(hardware=record, stats=stats))
    assert f"| L2 bandwidth (GB/s) | {l1_Bps / 1e9:.1f} (filled from L1) |" in section
    assert "L2: no sweep point between" in section
    # ... and the hardware figure's note names it
    figure = draw_hardware(SimpleNamespace(hardware=record))
    notes = " ".join(text.get_text() for text in figure.texts).replace("\n", " ")
    assert "L2: no plateau of its own" in notes and f"L1's {l1_Bps / 1e9:.1f} GB/s" in notes


def test_a_level_above_a_filled_one_takes_the_measured_level_below_both():
    record = record_from_document(_with_levels(L2=None, L3=None), "hw.json")
    names = [(level.name, level.bandwidth_Bps, level.filled_from) for level in record.levels]
    l1_Bps = MEMORY_LEVELS["L1"][1]
    assert names[:3] == [("L1", l1_Bps, ""), ("L2", l1_Bps, "L1"), ("L3", l1_Bps, "L1")]
    assert record.levels[2].kernel == "L1's triad: no plateau of its own"


@pytest.mark.parametrize(
    ("sweep_Bps", "stream_Bps", "dram_Bps", "kernel"),
    [
        (2.5e10, 2.9e10, 2.9e10, "STREAM triad"),  # the sweep's plateau undershot
        (3.5e10, 2.9e10, 3.5e10, "read"),  # STREAM undershot
        (None, 2.9e10, 2.9e10, "STREAM triad"),  # the sweep never reached DRAM
        (3.5e10, None, 3.5e10, "read"),  # no STREAM measurement
    ],
)
def test_dram_is_the_faster_of_the_sweeps_plateau_and_streams_triad_naming_which(
    sweep_Bps, stream_Bps, dram_Bps, kernel
):
    document = _with_levels(DRAM=sweep_Bps)
    document["bandwidth"]["kernels"]["triad"]["best_bandwidth_Bps"] = stream_Bps
    record = record_from_document(document, "hw.json")
    limits = limits_from_record(record)
    dram = record.levels[-1]
    assert (dram.name, dram.capacity_bytes, dram.bandwidth_Bps, dram.kernel) == (
        "DRAM",
        math.inf,
        dram_Bps,
        kernel,
    )
    assert limits.levels == record.levels and not dram.filled_from
    # the DRAM-roof efficiency (comparable to earlier runs) stays against STREAM's triad alone
    if stream_Bps:
        assert limits.bandwidth_Bps == stream_Bps and limits.problems == ()
    else:
        assert math.isnan(limits.bandwidth_Bps)
        assert limits.problems == ("bandwidth.kernels.triad.best_bandwidth_Bps is null in hw.json",)


def test_a_complete_file_keeps_every_plateau_the_sweep_measured():
    record = record_from_document(hardware_document(), "hw.json")
    assert [(lv.name, lv.bandwidth_Bps, lv.kernel) for lv in record.levels] == [
        (name, bandwidth, kernel) for name, (_, bandwidth, kernel) in MEMORY_LEVELS.items()
    ]
    assert not any(level.filled_from for level in record.levels) and record.levels_note == ""
    assert limits_from_record(record).levels == record.levels


def test_without_a_sweep_dram_is_streams_triad_alone_and_the_record_says_why():
    document = hardware_document()
    document["memory"] = {"error": "cache sizes unknown: no working-set sweep"}
    record = record_from_document(document, "hw.json")
    assert [(lv.name, lv.bandwidth_Bps, lv.kernel) for lv in record.levels] == [
        ("DRAM", TRIAD_BPS, "STREAM triad")
    ]
    assert record.levels_note == "DRAM only: cache sizes unknown: no working-set sweep"


def test_the_identity_names_the_int8_dot_product_instructions(tmp_path):
    flags = ["avx2", "avx512f", "avx512_bf16", "avx512_vnni"]  # Zen 4: VNNI, no AMX
    cpu = identity.cpu_identity(_fake_cpuinfo("AuthenticAMD", 25, flags), root=tmp_path)
    assert cpu["isa"]["avx512_vnni"] and not cpu["isa"]["avx_vnni"]
    assert not cpu["isa"]["amx_int8"]
