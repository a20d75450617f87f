"""The contention detector flags a cell that shares its core with a CPU hog, and only that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fwbench.host.contention import PRESSURE_FILE, CpuPressure, Thresholds, cpu_stall_seconds

HAS_PSI = PRESSURE_FILE.exists()
# What a cell does, in its own process pinned to one core: a timed loop of busy calls, then the
# configured thresholds' verdict (the schema's defaults) and the raw signals.
MEASURE = """
import json, os, sys, yaml
from fwbench.host.contention import Thresholds
from fwbench.host.harness import time_calls
os.sched_setaffinity(0, {{{core}}})
def call():
    total = 0
    for i in range(20000):
        total += i
    return total
timing = time_calls(call, lambda out: None, warmup=5, repeats=60)
schema = yaml.safe_load(open({schema!r}))["properties"]["bench"]["properties"]
thresholds = Thresholds(
    schema["pressure_threshold"]["default"], schema["busy_threshold_cores"]["default"]
)
print(json.dumps({{
    "contended": thresholds.contended(timing.cpu_pressure, timing.busy_cpu_other),
    "cpu_pressure": timing.cpu_pressure,
    "busy_cpu_other": timing.busy_cpu_other,
}}))
"""
HOG = "import os, time\nos.sched_setaffinity(0, {{{core}}})\nwhile True: pass\n"


def _measure(core: int) -> dict:
    schema = str(Path(__file__).parents[1] / "workflow/schemas/config.schema.yaml")
    code = textwrap.dedent(MEASURE.format(core=core, schema=schema))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def core() -> int:
    return min(os.sched_getaffinity(0))


@pytest.mark.quiet
def test_a_cell_alone_on_its_core_is_not_contended(core):
    reading = _measure(core)
    assert not reading["contended"], reading


@pytest.mark.quiet
def test_a_cell_sharing_its_core_with_a_cpu_hog_is_contended(core):
    hog = subprocess.Popen([sys.executable, "-c", HOG.format(core=core)])
    try:
        reading = _measure(core)
    finally:
        hog.kill()
        hog.wait()
    assert reading["contended"], reading
    if HAS_PSI:  # the hog takes half of the core: the loop waited for it most of the time
        assert reading["cpu_pressure"] > 0.25, reading


def test_thresholds_flag_either_signal_and_ignore_an_absent_or_unset_one():
    thresholds = Thresholds(pressure_share=0.1, other_cores=0.25)
    assert thresholds.contended(0.2, 0.0)
    assert thresholds.contended(0.0, 0.5)
    assert not thresholds.contended(0.05, 0.1)
    assert not thresholds.contended(float("nan"), 0.1)  # no PSI on this kernel: other CPU only
    others_only = Thresholds(pressure_share=None, other_cores=0.25)  # the default
    assert not others_only.contended(0.9, 0.1) and others_only.contended(0.0, 0.3)


def test_pressure_reads_the_kernels_cumulative_stall_and_nan_without_it(tmp_path):
    fake = tmp_path / "cpu"
    fake.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\nfull total=0\n")
    assert cpu_stall_seconds(fake) == 2.5
    assert cpu_stall_seconds(tmp_path / "absent") != cpu_stall_seconds(tmp_path / "absent")
    with CpuPressure(fake) as pressure:
        fake.write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=2600000\n")
    assert pressure.stall_s == pytest.approx(0.1)
    assert pressure.share > 0
