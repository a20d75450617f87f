"""A sweep killed outright: `make run` clears the lock no live Snakemake holds, and only then."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fwbench.io import stale_lock

from conftest import REPO, smoke_configs

TRIVIAL = 'rule all:\n    output: "x"\n    shell: "touch {output}"\n'


def _locked(directory: Path) -> Path:
    locks = directory / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("x\n")
    return locks


def _snakemake(directory: Path) -> list[str]:
    (directory / "Snakefile").write_text(TRIVIAL)
    return [sys.executable, "-m", "snakemake", "-s", str(directory / "Snakefile")]


def test_a_lock_nothing_holds_is_cleared(tmp_path):
    _locked(tmp_path)
    assert stale_lock.clear_if_stale(tmp_path, _snakemake(tmp_path))
    assert not stale_lock.has_lock(tmp_path)


def test_a_lock_a_live_snakemake_holds_is_kept(tmp_path):
    locks = _locked(tmp_path)
    # A process whose argv[0] is `snakemake`, working in the directory.
    live = subprocess.Popen(["bash", "-c", "exec -a snakemake sleep 60"], cwd=tmp_path)
    try:
        time.sleep(0.2)
        assert stale_lock.live_snakemakes(tmp_path) == [live.pid]
        assert not stale_lock.clear_if_stale(tmp_path, _snakemake(tmp_path))
        assert stale_lock.has_lock(tmp_path) and any(locks.iterdir())
    finally:
        live.kill()
        live.wait()
    assert stale_lock.live_snakemakes(tmp_path) == []


def test_a_snakemake_elsewhere_with_directory_here_counts_as_live(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # bash -c with two commands stays the process (no exec of sleep), its argv Snakemake's.
    argv = f"exec -a snakemake bash -c 'sleep 60; true' -- --directory {tmp_path}"
    live = subprocess.Popen(["bash", "-c", argv], cwd=elsewhere)
    try:
        time.sleep(0.2)
        assert stale_lock.live_snakemakes(tmp_path) == [live.pid]
        assert stale_lock.live_snakemakes(elsewhere) == []
    finally:
        live.kill()
        live.wait()


def test_no_lock_means_nothing_to_do(tmp_path):
    assert not stale_lock.clear_if_stale(tmp_path, ["false"])  # would fail if it ran


def _make_run(workdir: Path, **popen) -> subprocess.Popen:
    configs = " ".join(smoke_configs(workdir))
    args = f"RUN_ARGS=--directory {workdir} --configfile {configs}"
    return subprocess.Popen(["make", "-s", "-C", str(REPO), "run", args], **popen)


@pytest.mark.e2e
def test_make_run_goes_on_after_a_sigkill_of_a_running_make_run(smoke_copy):
    # As a sweep stopped midway leaves it: some cells and everything downstream missing
    # (Snakemake rebuilds a missing cell only for an output that needs it).
    cells = sorted((smoke_copy / "results/cells").rglob("b*.nc"))[:3]
    downstream = ["aggregate/bench.nc", "summary/stats.nc", "report.md"]
    for path in [*cells, *(smoke_copy / "results" / name for name in downstream)]:
        path.unlink()
    first = _make_run(
        smoke_copy, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    locks = smoke_copy / ".snakemake/locks"
    deadline = time.monotonic() + 300
    while not (locks.is_dir() and any(locks.iterdir())):
        assert first.poll() is None and time.monotonic() < deadline, "no lock was ever taken"
        time.sleep(0.2)
    time.sleep(2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert any(locks.iterdir()), "the kill left no lock: nothing is tested"
    second = _make_run(smoke_copy, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = second.communicate(timeout=900)
    assert second.returncode == 0, output[-3000:]
    assert "cleared a stale Snakemake lock" in output
    assert all(cell.exists() for cell in cells)
    assert (smoke_copy / "results/report.md").exists()
