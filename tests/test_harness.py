"""The timing loop, the host-level lock, and a cell's failure paths (no framework needed)."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks.protocols import InferenceAdapter, Runner
from fwbench.host.harness import calls_per_sample, time_calls, timing_lock
from fwbench.io.cell_file import read_cell
from fwbench.measure import bench
from fwbench.model.specs import build_spec

import fake_adapter
from conftest import REPO
from fake_adapter import request


def test_first_call_is_timed_apart_from_the_warm_iterations():
    calls = []

    def call():
        calls.append(None)
        time.sleep(0.05 if len(calls) == 1 else 0.001)

    timing = time_calls(call, lambda out: None, warmup=3, repeats=7)
    assert len(calls) == 1 + 3 + 7
    assert timing.first_call_s >= 0.05
    assert timing.latency_s.shape == (7,)
    assert np.all(timing.latency_s < 0.04)


def test_a_sample_holds_as_many_calls_as_last_min_sample_s():
    calls = []

    def call():
        calls.append(None)
        time.sleep(0.001)

    timing = time_calls(call, lambda out: None, warmup=3, repeats=4, min_sample_s=0.01)
    k = timing.calls_per_sample
    # sleep(0.001) lasts at least 1 ms, so k is at most 10; at least 2 unless it lasts > 5 ms
    assert 2 <= k <= 10
    assert len(calls) == 1 + 3 + 4 * k
    # each sample is its calls' mean: one call's time, not k calls'
    assert np.all((timing.latency_s >= 0.001) & (timing.latency_s < 0.005))


def test_the_calls_per_sample_come_from_the_warmed_up_pace_not_the_first_slow_calls():
    calls = []

    def call():
        calls.append(None)
        time.sleep(0.02 if len(calls) <= 4 else 0.001)  # the first call and 3 slow warm-ups

    timing = time_calls(call, lambda out: None, warmup=10, repeats=3, min_sample_s=0.01)
    # the mean over all ten warm-ups is ≥ 6.7 ms (k ≤ 2); the later five's about 1 ms
    assert timing.calls_per_sample >= 4
    assert timing.warmup_s >= 0.06  # every warm-up call counted in warmup_s


@pytest.mark.parametrize(
    ("call_s", "min_sample_s", "expected"),
    [(0.001, 0.02, 20), (0.0015, 0.02, 14), (0.03, 0.02, 1), (0.001, 0.0, 1), (0.0, 0.02, 1)],
)
def test_calls_per_sample_is_the_fewest_calls_that_last_min_sample_s(
    call_s, min_sample_s, expected
):
    assert calls_per_sample(call_s, min_sample_s) == expected
    assert calls_per_sample(float("nan"), 0.02) == 1


def test_windows_too_short_to_meter_leave_busy_cpu_other_nan_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        timing = time_calls(lambda: None, lambda out: None, warmup=0, repeats=3, quiet_probe_s=0)
    assert math.isnan(timing.other_cores_probe) and math.isnan(timing.other_cores_during)
    assert math.isnan(timing.busy_cpu_other)


def test_sync_is_inside_the_clock():
    timing = time_calls(lambda: None, lambda out: time.sleep(0.005), warmup=0, repeats=5)
    assert np.all(timing.latency_s >= 0.005)


def test_the_context_is_entered_once_around_every_call_and_gc_is_off_while_timing():
    entered, inside, gc_during = [], [], []

    @contextlib.contextmanager
    def context():
        entered.append(True)
        inside.append(True)
        yield
        inside.pop()

    def call():
        assert inside, "a call ran outside the runner's context"
        gc_during.append(gc.isenabled())

    time_calls(call, lambda out: None, warmup=2, repeats=5, context=context)
    assert len(entered) == 1 and not inside
    assert gc_during[0] and not any(gc_during[1:])  # first call as in real use; then GC off
    assert gc.isenabled()


def test_timing_lock_waits_for_another_process_holding_it(tmp_path):
    lock = tmp_path / "timing.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                import time
                from fwbench.host.harness import timing_lock
                with timing_lock({str(lock)!r}):
                    print("held", flush=True)
                    time.sleep(1.0)
            """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    with timing_lock(lock) as waited_s:
        pass
    assert waited_s > 0.8, "got the lock while another process still held it"
    holder.wait()


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setattr(frameworks, "load", lambda framework, part="infer": fake_adapter)
    monkeypatch.setattr(fake_adapter, "FAIL_IN_BUILD", None)
    monkeypatch.setattr(bench, "setup_threads", lambda threads: {"threads": threads})
    return request(lock=str(tmp_path / "lock"))


def test_the_fake_adapter_follows_the_adapter_protocols():
    spec = build_spec("mlp", {"input": 8, "hidden": [4], "classes": 3})
    assert isinstance(fake_adapter, InferenceAdapter)
    assert isinstance(fake_adapter.build(spec, {}, "eager", "cpu"), Runner)


def test_a_measured_cell_holds_every_iteration_and_its_conditions(fake, tmp_path):
    out = tmp_path / "cell.nc"
    before = os.environ.get("TMPDIR")
    bench.run_cell(fake, out)
    assert os.environ.get("TMPDIR") == before, "the cell's private TMPDIR leaked out"
    ds = read_cell(out)
    assert ds.attrs["status"] == "ok"
    assert ds["latency_s"].shape == (4,) and np.all(ds["latency_s"] > 0)
    assert ds["latency_s"].attrs["units"] == "s"
    assert float(ds["flops"]) > 0 and float(ds["bytes"]) > 0
    assert ds.attrs["start_ns"] < ds.attrs["end_ns"]
    assert '"threads": 1' in ds.attrs["threads"]
    assert ds.attrs["framework_version"] == "0.0-fake"


def test_a_failing_cell_is_written_as_failed_with_its_message(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(fake_adapter, "FAIL_IN_BUILD", MemoryError("out of memory in build"))
    out = tmp_path / "cell.nc"
    cell = bench.run_cell(fake, out)
    ds = read_cell(out)
    assert cell.attrs["status"] == ds.attrs["status"] == "failed"
    assert ds.attrs["error_type"] == "MemoryError"
    assert ds.attrs["error_message"] == "out of memory in build"
    assert "FAIL_IN_BUILD" in ds.attrs["traceback_tail"]
    assert np.all(np.isnan(ds["latency_s"]))


def test_injected_failure_names_the_cell(fake, tmp_path):
    out = tmp_path / "cell.nc"
    bench.run_cell(request(lock=fake.lock, inject_failure=True), out)
    ds = read_cell(out)
    assert ds.attrs["error_type"] == "InjectedFailure"
    assert "torch/eager/mlp" in ds.attrs["error_message"]


def test_a_cell_past_its_timeout_is_written_as_failed(tmp_path):
    out = tmp_path / "cell.nc"
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "tests")!r})
        import fake_adapter
        from fwbench.measure import bench
        from fwbench import frameworks
        from fake_adapter import request
        fake_adapter.BUILD_DELAY_S = 30
        frameworks.load = lambda framework, part="infer": fake_adapter
        bench.run_cell(request(timeout_s=0.5, lock={str(tmp_path / "lock")!r}), {str(out)!r})
    """)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 20
    ds = read_cell(out)
    assert ds.attrs["status"] == "failed" and ds.attrs["error_type"] == "TimeoutError"


def test_contention_from_another_busy_process_is_measured():
    spinner = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"]
    )
    try:
        time.sleep(0.3)
        busy = time_calls(lambda: None, lambda out: None, warmup=0, repeats=3)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy.busy_cpu_other > 0.5, "a process spinning a whole core went unnoticed"
