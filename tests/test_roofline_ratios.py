"""self_measurement/roofline_ratios.py: its bookkeeping with fake rates; no GEMM, no triad."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fwbench.io.hardware_file import write_hardware

from conftest import REPO

SCRIPT = REPO / "self_measurement" / "roofline_ratios.py"


def _load_script():
    """Import the script by path; its folder goes on sys.path for its sibling stream_ratio."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        spec = importlib.util.spec_from_file_location("roofline_ratios", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return module


rr = _load_script()


def gemm(framework, n, gflops, dtype="float32"):
    return {"dtype": dtype, "framework": framework, "n": n, "flops_per_s": gflops * 1e9}


def hardware_doc(fp32=200.0, bf16=400.0, dram=30.0, stream=36.0, threads=2):
    """A hardware document with just the figures the script reads (GFLOP/s and GB/s)."""
    return {
        "compute": {
            "dtypes": {
                "float32": {"best_flops_per_s": fp32 * 1e9, "best_framework": "jax", "best_n": 512},
                "bfloat16": {"best_flops_per_s": bf16 * 1e9, "best_framework": "torch"},
            }
        },
        "memory": {"levels": {"DRAM": {"kernels": {"triad": {"bandwidth_Bps": dram * 1e9}}}}},
        "bandwidth": {"kernels": {"triad": {"best_bandwidth_Bps": stream * 1e9}}},
        "provenance": {"threads": {"threads": threads}},
    }


def test_best_per_framework_keeps_each_frameworks_fastest_size_and_skips_errors():
    records = [
        gemm("torch", 256, 150.0),
        gemm("torch", 768, 207.0),
        gemm("torch", 1024, 190.0),
        gemm("numpy", 512, 180.0),
        {"dtype": "float32", "framework": "jax", "n": 256, "error": "RuntimeError: boom"},
        gemm("torch", 512, 430.0, dtype="bfloat16"),
    ]
    best = rr.best_per_framework(records)
    assert {fw: r["n"] for fw, r in best["float32"].items()} == {"torch": 768, "numpy": 512}
    assert best["bfloat16"]["torch"]["flops_per_s"] == 430e9
    assert rr.overall_best(best["float32"])["framework"] == "torch"
    assert rr.overall_best({}) is None


def test_gemm_records_keep_a_dtypes_error_apart_from_the_other_dtypes_rate():
    result = {"float32": {"flops_per_s": 2e11, "best_n": 512}, "bfloat16": {"error": "no bf16"}}
    records = rr.gemm_records("jax", 512, result)
    assert records == [
        {"dtype": "float32", "framework": "jax", "n": 512, "flops_per_s": 2e11},
        {"dtype": "bfloat16", "framework": "jax", "n": 512, "error": "no bf16"},
    ]


@pytest.mark.parametrize(
    ("reported", "reference", "passed", "verdict"),
    [
        (95.0, 100.0, True, "ok"),
        (94.0, 100.0, False, "below goal"),
        (120.0, 100.0, True, "ok"),
        (None, 100.0, False, "not in the hardware file"),
        (95.0, None, False, "no reference"),
        (None, None, True, "neither measured"),
    ],
)
def test_ratio_verdict_passes_at_the_goal_and_fails_when_one_side_is_missing(
    reported, reference, passed, verdict
):
    ratio, said, ok = rr.ratio_verdict(reported, reference, 0.95)
    assert (ok, said) == (passed, verdict)
    if reported and reference:
        assert ratio == pytest.approx(reported / reference)


def test_peak_report_fails_when_one_dtypes_reported_peak_is_below_the_goal(capsys):
    records = [gemm("torch", 768, 210.0), gemm("torch", 512, 500.0, dtype="bfloat16")]
    assert rr.peak_report(hardware_doc(fp32=200.0, bf16=400.0), records, 0.95) is False
    out = capsys.readouterr().out
    assert "ratio 0.952" in out  # 200 / 210
    assert "ratio 0.800" in out and "below goal" in out  # 400 / 500


def test_peak_report_passes_when_every_reported_peak_is_close_to_the_reference():
    records = [gemm("numpy", 1024, 205.0), gemm("torch", 512, 410.0, dtype="bfloat16")]
    assert rr.peak_report(hardware_doc(fp32=200.0, bf16=400.0), records, 0.95) is True


def test_file_triads_read_the_sweeps_dram_triad_and_streams_triad():
    assert rr.file_triads(hardware_doc(dram=30.0, stream=36.0)) == {"sweep": 30e9, "stream": 36e9}
    assert rr.file_triads({"bandwidth": {}}) == {"sweep": None, "stream": None}


def test_triad_point_takes_the_triad_kernel_not_the_fastest_one():
    curve = [
        {"kernel": "read", "working_set_bytes": 2**28, "bandwidth_Bps": 50e9},
        {"kernel": "triad", "working_set_bytes": 2**28, "bandwidth_Bps": 31e9},
    ]
    assert rr.triad_point(curve) == 31e9


def test_triad_report_fails_when_the_sweep_triad_is_missing_from_the_file():
    assert rr.triad_report({"sweep": 35e9, "stream": 36e9}, 38e9, 0.9) is True
    assert rr.triad_report({"sweep": None, "stream": 36e9}, 38e9, 0.9) is False
    assert rr.triad_report({"sweep": 30e9, "stream": 36e9}, 38e9, 0.9) is False  # 0.79


def test_default_threads_come_from_the_file_else_the_affinity_cores():
    assert rr.default_threads(hardware_doc(threads=7)) == 7
    assert rr.default_threads({}) == rr.affinity_cores()


@pytest.mark.parametrize("argv", [[], ["--hardware", "/nonexistent/host-cpu.json"]])
def test_main_exits_2_without_a_hardware_file_before_measuring_anything(argv, monkeypatch, capsys):
    def no_measuring(*args, **kwargs):
        raise AssertionError("measured although the hardware file is missing")

    monkeypatch.setattr(rr, "measure_gemm", no_measuring)
    monkeypatch.setattr(rr, "build_reference", no_measuring)
    assert rr.main(argv) == 2
    assert "hardware file" in capsys.readouterr().err


def _fake_main(monkeypatch, tmp_path: Path, document: dict, *extra: str) -> int:
    """main() on a written hardware file with every measurement replaced by fixed rates."""
    path = tmp_path / "host-cpu.json"
    write_hardware(document, path)
    cpu = {"model": "Fake CPU", "caches": {"llc_total_bytes": 2**20}}
    monkeypatch.setattr(rr, "identity", SimpleNamespace(cpu_identity=lambda: cpu))
    monkeypatch.setattr(rr, "setup_threads", lambda threads: {"threads": threads})
    monkeypatch.setattr(rr, "build_reference", lambda: Path("stream_triad"))
    rates = {"float32": 205.0, "bfloat16": 410.0}

    def fake_gemm(framework, n, trials, threads):
        return [gemm(framework, n, rates[d] * n / 1024, d) for d in rr.DTYPES]

    monkeypatch.setattr(rr, "measure_gemm", fake_gemm)
    monkeypatch.setattr(rr, "measure_triads", lambda *args: {"reference": 38e9, "sweep": 20e9})
    argv = ["--hardware", str(path), "--max-n", "1024", "--lock", str(tmp_path / "lock")]
    return rr.main([*argv, *extra])


def test_main_exits_0_when_peaks_and_triads_meet_their_goals(monkeypatch, tmp_path, capsys):
    assert _fake_main(monkeypatch, tmp_path, hardware_doc(dram=35.0, stream=36.0)) == 0
    out = capsys.readouterr().out
    assert "Fake CPU" in out and "threads: 2" in out
    assert "best torch n=1024 205.0 GFLOP/s" in out  # the largest size wins with these rates


def test_main_exits_1_when_the_fresh_sweep_triad_is_below_the_goal(monkeypatch, tmp_path):
    document = hardware_doc(dram=35.0, stream=36.0)
    assert _fake_main(monkeypatch, tmp_path, document, "--fresh-triad") == 1  # 20 / 38
