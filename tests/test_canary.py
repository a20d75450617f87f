"""The speed canary: its fixed work, its baseline, the harness probing it between samples, and
what the readings decide (slow samples, slow machine)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from fwbench.host.harness import time_calls
from fwbench.io.hardware_file import record_from_document
from fwbench.measure.speed import Baseline, SpeedThresholds, baseline_for, read_speed
from fwbench.memory import canary
from fwbench.memory.canary import CanaryWork, level_for

THRESHOLDS = SpeedThresholds(slow_sample_factor=1.5, slow_machine_factor=1.2, slow_share=0.1)
CAPACITIES = {"L1": 32 << 10, "L2": 1 << 20, "DRAM": None}


@pytest.fixture(scope="module")
def document() -> dict:
    return canary.baseline(CAPACITIES, probes=20)


def test_the_chain_is_fixed_work_whose_time_grows_with_its_length():
    library = canary.library()
    library.fw_canary_chain(10_000)
    short = min(library.fw_canary_chain(20_000) for _ in range(5))
    long = min(library.fw_canary_chain(80_000) for _ in range(5))
    assert 2.5 < long / short < 6, (short, long)
    assert library.fw_canary_chain(0) == -1


def test_the_read_refuses_what_it_cannot_read():
    library = canary.library()
    buffer = np.ones(64)
    assert library.fw_canary_read(buffer.ctypes.data, 0, 64, 1) > 0
    assert library.fw_canary_read(buffer.ctypes.data, 3, 64, 1) == -1  # not a multiple of 8
    assert library.fw_canary_read(None, 0, 64, 1) == -1


def test_the_baseline_sizes_each_level_and_records_its_quiet_distribution(document):
    levels = document["levels"]
    assert list(levels) == list(CAPACITIES)
    l1, dram = levels["L1"]["work"], levels["DRAM"]["work"]
    assert l1["buffer_bytes"] == CAPACITIES["L1"] // 2 and l1["read_reps"] >= 1
    assert dram["buffer_bytes"] == 2 * CAPACITIES["L2"]  # twice the largest cache
    assert dram["read_elements"] <= dram["buffer_bytes"] // 8 // 2  # a slice of it
    for entry in levels.values():
        assert entry["probes"] == 20
        for kind in ("chain_s", "read_s"):
            quantiles = entry[kind]
            assert 0 < quantiles["p05"] <= quantiles["median"] <= quantiles["p99"]
            # each probe is PIECES pieces of about PIECE_S: well under a millisecond in all
            assert quantiles["median"] < 20 * canary.PIECES * canary.PIECE_S


def test_a_cell_takes_the_smallest_level_its_working_set_fits_in(document):
    works = canary.works_from_baseline(document)
    assert level_for(works, 1000).level == "L1"
    assert level_for(works, 200_000).level == "L2"
    assert level_for(works, 1e9).level == "DRAM"
    assert level_for(works, math.nan).level == "DRAM"
    found = baseline_for(record_from_document({"canary": document}, "hw.json"), 200_000)
    assert found.work.level == "L2" and found.source == "hw.json"
    assert found.chain_s == document["levels"]["L2"]["chain_s"]["median"]
    assert found.read_s == document["levels"]["L2"]["read_s"]["median"]
    assert baseline_for(record_from_document({}, "old.json"), 1000) is None
    assert baseline_for(None, 1000) is None


def test_the_canary_walks_a_buffer_slice_by_slice_when_one_pass_is_too_long():
    work = CanaryWork("DRAM", None, 1 << 20, 8192, 1, 1000)  # 16 slices of 64 KiB
    probe = canary.Canary(work)
    offsets = set()
    for _ in range(5):
        offsets.add(probe._offset)
        probe.probe()
    assert len(offsets) == 5


def test_the_harness_probes_between_samples_never_inside_one():
    def call():
        time.sleep(0.002)

    def between():
        time.sleep(0.01)
        return (1.0, 2.0)

    timing = time_calls(call, lambda _: None, warmup=1, repeats=5, quiet_probe_s=0, between=between)
    assert timing.canary_s.shape == (5, 2) and (timing.canary_s == (1.0, 2.0)).all()
    assert timing.latency_s.max() < 0.008  # the probe's 10 ms are in no sample
    assert 0.045 < timing.canary_wall_s < 0.2
    assert timing.loop_wall_s > timing.canary_wall_s + timing.latency_s.sum() * 0.9


def _baseline() -> Baseline:
    work = CanaryWork("L1", 32768, 16384, 2048, 1, 1000)
    return Baseline(work, chain_s=1e-4, read_s=2e-4, source="test")


def _probes(factors_chain, factors_read) -> np.ndarray:
    return np.column_stack([1e-4 * np.asarray(factors_chain), 2e-4 * np.asarray(factors_read)])


def test_a_quiet_reading_marks_nothing():
    rng = np.random.default_rng(0)
    reading = read_speed(
        _probes(1 + 0.02 * rng.random(40), 1 + 0.02 * rng.random(40)), _baseline(), THRESHOLDS
    )
    assert not reading.slow.any() and not reading.slow_machine
    assert 1.0 <= reading.median_factor < 1.02 and reading.cv_pct < 2


def test_a_slow_read_is_recorded_and_decides_nothing():
    # the framework's sample evicts the level the read reads: its factor moves with the cell
    reading = read_speed(_probes(np.ones(40), np.full(40, 3.0)), _baseline(), THRESHOLDS)
    assert np.allclose(reading.read_factor, 3.0) and reading.median_factor == pytest.approx(1.0)
    assert not reading.slow.any() and not reading.slow_machine


def test_a_slow_chain_slows_the_machine():
    reading = read_speed(_probes(np.full(40, 1.3), np.ones(40)), _baseline(), THRESHOLDS)
    assert reading.median_factor == pytest.approx(1.3) and reading.slow_machine
    assert not reading.slow.any()  # 1.3 is below the slow-sample factor


def test_preempted_probes_past_the_share_slow_the_machine_below_it_only_the_samples():
    chain = np.ones(40)
    chain[::5] = 20.0  # one probe in five preempted by a hog time-sharing the core
    reading = read_speed(_probes(chain, np.ones(40)), _baseline(), THRESHOLDS)
    assert reading.slow.sum() == 8 and reading.median_factor == 1.0 and reading.slow_machine
    chain = np.ones(40)
    chain[[3, 30]] = 20.0
    reading = read_speed(_probes(chain, np.ones(40)), _baseline(), THRESHOLDS)
    assert reading.slow.sum() == 2 and not reading.slow_machine


# --- in a cell ---------------------------------------------------------------------------------

HOG = "import os\nos.sched_setaffinity(0, {core})\nwhile True: pass\n"


@pytest.fixture
def fake(monkeypatch, tmp_path, document):
    """A fake-adapter cell of 40 samples of 20 ms, with a hardware file holding a baseline,
    pinned (with this test process) to one core."""
    import dataclasses

    from fwbench import frameworks
    from fwbench.io.hardware_file import write_hardware
    from fwbench.measure import bench

    import fake_adapter

    monkeypatch.setattr(frameworks, "load", lambda framework, part="infer": fake_adapter)
    monkeypatch.setattr(fake_adapter, "FAIL_IN_BUILD", None)
    monkeypatch.setattr(bench, "setup_threads", lambda threads: {"threads": threads})
    hardware = tmp_path / "hardware.json"
    write_hardware({"canary": canary.baseline(CAPACITIES, probes=100)}, hardware)
    request = fake_adapter.request(
        lock=str(tmp_path / "lock"), warmup=15, repeats=40, min_sample_s=0.02
    )
    core = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    yield dataclasses.replace(request, hardware=str(hardware)), core
    os.sched_setaffinity(0, saved)


def _run(request, path):
    from fwbench.io.cell_file import read_cell
    from fwbench.measure import bench

    bench.run_cell(request, path)
    return read_cell(path)


@pytest.mark.quiet
def test_a_cell_carries_its_canary_its_reading_and_its_cost(fake, tmp_path):
    request, _ = fake
    ds = _run(request, tmp_path / "cell.nc")
    assert ds.attrs["status"] == "ok"
    assert np.isfinite(ds["speed_factor"]).all() and ds["speed_factor"].shape == (40,)
    assert set(np.unique(ds["slow_sample"])) <= {0.0, 1.0}
    assert ds.attrs["canary"].startswith("L1:")  # the fake mlp's working set fits in L1
    assert float(ds["canary_chain_baseline_s"]) > 0
    # the budget: a probe costs under 5% of a sample of min_sample_s (20 ms); the
    # share of the loop is recorded (`canary_share`), larger where samples come out shorter
    probe_s = ds["canary_chain_s"] + ds["canary_read_s"]
    assert float(probe_s.median()) < 0.05 * 0.02
    assert 0 < float(ds["canary_share"]) < 1
    assert ds.attrs["slow_machine"] in (0, 1)


def test_a_cell_without_a_baseline_says_why(fake, tmp_path):
    import dataclasses

    request, _ = fake
    ds = _run(dataclasses.replace(request, hardware=None), tmp_path / "cell.nc")
    assert ds.attrs["canary"] == "none: no hardware file given"
    assert np.isnan(ds["speed_factor"]).all()


@pytest.mark.quiet
def test_a_hog_on_the_cells_core_is_caught_and_a_quiet_cell_is_not(fake, tmp_path):
    request, core = fake
    quiet = _run(request, tmp_path / "quiet.nc")
    hog = subprocess.Popen([sys.executable, "-c", HOG.format(core={core})])
    try:
        time.sleep(0.2)
        disturbed = _run(request, tmp_path / "hog.nc")
    finally:
        hog.kill()
        hog.wait()
    # the hog takes half the core: every sample's on-CPU share shows it
    assert float(disturbed["on_cpu_median"]) < 0.7
    assert disturbed.attrs["slow_machine"] == 1, float(disturbed["slow_samples"])
    # alone, the cell keeps its core; it is flagged only where the canary itself measured the
    # machine slower than its baseline (a busy host, which no test can rule out)
    assert float(quiet["on_cpu_median"]) > 0.95
    assert float(quiet["slow_samples"]) <= 0.1 * quiet.sizes["repeat"]
    machine_slow = float(quiet["canary_factor"]) > request.slow_machine_factor
    assert quiet.attrs["slow_machine"] == int(machine_slow), float(quiet["canary_factor"])
