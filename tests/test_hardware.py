"""The hardware stage: identity, STREAM's counting and checking, peaks, ridge, the JSON."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from fwbench.hardware import characterize, identity, stream, theory, workers

from conftest import REPO

SCRIPT = REPO / "workflow" / "scripts" / "hardware.py"
PEAKS = REPO / "resources" / "peaks.yaml"
TINY_SETTINGS = {
    "stream_llc_multiple": 0.05,
    "stream_trials": 2,
    "gemm_n": 64,
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
    assert summary == {"flops": 2_000_000, "best_s": 0.25, "flops_per_s": 8_000_000.0}


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
        # AVX-512, 2 FMA units: 2 × 2 FLOP × 16 fp32 lanes; AMX bf16 1024 FLOP/cycle.
        ("GenuineIntel", 6, ["avx", "avx2", "fma", "avx512f", "amx_tile", "amx_bf16"],
         {"float32": 64, "float64": 32, "bfloat16": 1024, "float16": None}),
        # AVX2 + FMA: 2 × 2 × 8 fp32 lanes; no bf16 instructions.
        ("GenuineIntel", 6, ["avx", "avx2", "fma"],
         {"float32": 32, "float64": 16, "bfloat16": None, "float16": None}),
        # Zen 4: AVX-512 on 256-bit units; VDPBF16PS 4 FLOP per fp32 lane × 8 lanes × 2.
        ("AuthenticAMD", 25, ["avx", "avx2", "fma", "avx512f", "avx512_bf16"],
         {"float32": 32, "float64": 16, "bfloat16": 64, "float16": None}),
        # AVX without FMA: one add and one multiply per lane per cycle.
        ("GenuineIntel", 6, ["avx"], {"float32": 16, "float64": 8, "bfloat16": None,
                                     "float16": None}),
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
    with pytest.raises(ValueError, match="int8"):
        characterize.check_settings(TINY_SETTINGS | {"dtypes": ["int8"]}, ["torch"], "cpu")


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
        "params": {"settings": TINY_SETTINGS, "frameworks": frameworks, "device": "cpu"}
        | {"threads": 1},
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
        )
        runpy.run_path({str(SCRIPT)!r}, init_globals={{"snakemake": snakemake}})
    """)
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.mark.slow
def test_the_script_waits_for_the_lock_and_writes_a_json_with_every_field(tmp_path):
    output, lock, log = tmp_path / "hw" / "host-cpu.json", tmp_path / "lock", tmp_path / "hw.log"
    frameworks = ["torch", "jax", "tensorflow"]
    holder = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    job = _start_script(output, lock, log, frameworks)
    try:
        time.sleep(1.5)
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
    assert {"identity", "bandwidth", "compute", "theoretical", "ridge", "provenance"} <= set(result)
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

    settings = result["provenance"]["framework_settings"]
    assert settings["torch"]["num_threads"] == 1
    assert settings["tensorflow"]["intra_op_threads"] == 1
    assert "lock acquired" in log.read_text()
