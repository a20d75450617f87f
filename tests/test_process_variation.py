"""`python -m fwbench variation` (fwbench.tools.variation) on a small aggregate whose
processes disagree."""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.__main__ import main
from fwbench.analysis.aggregate import write_aggregate
from fwbench.io.cell_file import Cell, write_cell
from fwbench.tools import variation


def _aggregate(tmp_path, offsets):
    rng = np.random.default_rng(0)
    paths = []
    for process, offset in enumerate(offsets):
        cell = Cell("torch", "eager", "mlp", 1, repeats=30)
        cell.latency_s = offset * (1 + 0.002 * rng.standard_normal(30))
        cell.scalars = {"flops": 1.0, "bytes": 1.0}
        cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1", "process": process}
        paths.append(tmp_path / f"p{process}.nc")
        write_cell(cell, paths[-1])
    write_aggregate(paths, tmp_path / "bench.nc")
    return str(tmp_path / "bench.nc")


def test_processes_that_disagree_are_covered_by_the_spread_ci_only(tmp_path, capsys):
    path = _aggregate(tmp_path, [1.0, 1.1, 1.2, 1.3])
    (row,) = variation.cell_rows(path, 2, None)
    assert row["cell"] == "local/torch/eager/mlp/b1"
    assert row["spread"] == pytest.approx(1.3, rel=0.01)
    assert row["truth"] == pytest.approx(1.15, rel=0.01)
    low, high = row["p0"]
    assert high < 1.05  # process 0 alone sits at 1.0: its bootstrap misses the truth
    low, high = row["first_k"]
    assert low <= row["truth"] <= high  # processes 0 and 1, their own spread, t at 1 dof
    assert row["default"] is None
    assert main(["variation", path]) == 0
    out = capsys.readouterr().out
    assert "p0      : holds the all-process median in 0 of 1 cells" in out
    assert "first_k : holds the all-process median in 1 of 1 cells" in out


def test_a_one_process_aggregate_is_refused_naming_the_count(tmp_path):
    with pytest.raises(SystemExit, match="1 process"):
        variation.cell_rows(_aggregate(tmp_path, [1.0]), 2, None)
