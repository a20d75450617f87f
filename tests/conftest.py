"""Shared test helpers: the repository root, a snakemake runner with a hard timeout, a
function run in a fresh process, and every test's CPU affinity put back after it. The
session's torch inductor cache starts empty, as a cell's process 0 does (a persistent one
would serve the tests' compilations from an earlier session's, which record no eager ops)."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="fwbench-tests-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], True)


@pytest.fixture(autouse=True)
def _affinity_put_back():
    """A test that sets a process up in-process (fwbench.host.threads pins it to the timed
    cores) would leave the rest of the session on one core."""
    saved = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    yield
    if saved is not None:
        os.sched_setaffinity(0, saved)


def in_fresh_process(module: str, function: str, *args: object) -> None:
    """`module.function(*args)` in a fresh Python process, as a workflow job runs (a framework
    takes its threads once per process); fails the test with the process's stderr tail."""
    script = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        f"from {module} import {function}; {function}(*{args!r})"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def snakemake(
    *args: str, cwd: Path = REPO, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run snakemake on this repository's Snakefile; never hangs past `timeout`."""
    return subprocess.run(
        [*SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(cwd), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A scratch working directory for a workflow run (results/ lands here)."""
    return tmp_path


SMOKE = str(REPO / "config/test.yaml")
FAILING_CELL = "jax/jit/lstm"
# The smoke sweep's bfloat16 cells that fail with ONNX Runtime's own error: its CPU provider has
# no bf16 Gemm/MatMul kernel (torch's export) and refuses tf2onnx's graph, which mixes float16
# and bfloat16. A runtime version that gains the kernels makes the tests that name these fail.
NO_BF16_KERNEL = {("torch", "onnxrt", "mlp"), ("tensorflow", "onnxrt", "mlp")}
ORT_ERROR = "ONNXRuntimeError"


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory) -> Path:
    """The smoke sweep with --cores 8 on this 2-core machine and one cell made to fail."""
    workdir = tmp_path_factory.mktemp("smoke")
    override = workdir / "override.yaml"
    override.write_text(
        yaml.safe_dump(
            {"bench": {"inject_failure": [FAILING_CELL]}, "timing_lock": str(workdir / "lock")}
        )
    )
    result = snakemake(
        "--cores", "8", "--configfile", SMOKE, str(override), cwd=workdir, timeout=1500
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return workdir


def smoke_configs(workdir: Path) -> list[str]:
    """The config files the smoke run used: plans against them show only real changes."""
    return [SMOKE, str(workdir / "override.yaml")]


@pytest.fixture
def smoke_copy(smoke_run: Path, tmp_path: Path) -> Path:
    """A private copy of the finished smoke sweep (mtimes kept) for tests that change it."""
    copy = tmp_path / "smoke"
    shutil.copytree(smoke_run, copy, symlinks=True)
    return copy
