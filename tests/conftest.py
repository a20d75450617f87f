"""Shared test helpers: the repository root and a snakemake runner with a hard timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


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
