"""Start-up costs: process 0's import, build, export and cold first call, the later processes'
warm first call, through the aggregate and the statistics into one table and one figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fwbench.analysis.processes import pool
from fwbench.analysis.roofline import HardwareLimits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.cell_file import Cell
from fwbench.io.dims import CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.figure_data import FigureInputs
from fwbench.present.startup import draw_startup, parts_of, startup_table

from synthetic import aggregate_of

# (framework, mode) → process 0's import, build, export, first call; later first calls
START = {
    ("torch", "compiled"): (2.0, 0.1, None, 30.0, (3.0, 5.0)),
    ("torch", "onnxrt"): (0.2, 0.05, 4.0, 0.01, (0.02,)),
}


def _cell(framework: str, mode: str, process: int) -> Cell:
    imported, built, exported, first, later = START[(framework, mode)]
    cell = Cell(framework, mode, "mlp", 1, repeats=10)
    cell.latency_s = np.full(10, 1e-4) * (1 + 0.01 * np.arange(10))
    cell.scalars = {"flops": 1e3, "bytes": 1e3, "compiled": 1.0, "working_set_bytes": 2e3}
    cell.scalars["first_call_s"] = first if process == 0 else later[process - 1]
    cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1.0", "contended": 0}
    cell.attrs |= {"process": process, "import_s": imported, "build_s": built}
    if exported is not None:
        cell.attrs["export_s"] = exported
    return cell


@pytest.fixture
def bench(tmp_path):
    cells = [
        _cell(f, m, process)
        for (f, m), start in START.items()
        for process in range(1 + len(start[4]))
    ]
    return aggregate_of(tmp_path, cells)


def test_start_up_is_process_zeros_and_the_warm_first_call_the_later_processes(bench):
    pooled = pool(bench).sel(framework="torch", arch="mlp", batch=1, precision="float32")
    compiled, onnx = pooled.sel(mode="compiled"), pooled.sel(mode="onnxrt")
    assert float(compiled["first_call_s"]) == 30.0  # process 0's, cold
    assert float(compiled["first_call_warm_s"]) == 4.0  # the median of 3 and 5
    assert float(compiled["import_s"]) == 2.0 and math.isnan(float(compiled["export_s"]))
    assert float(onnx["export_s"]) == 4.0 and float(onnx["first_call_warm_s"]) == 0.02


def test_the_table_and_figure_show_each_part_and_the_time_to_first_answer(bench):
    limits = HardwareLimits(1e12, 1e12, source="test")
    stats = summarize(bench, limits, StatsSettings(bootstrap_resamples=100, table_batch=1))
    view = StatsView(stats)
    key = CellKey("torch", "onnxrt", "mlp", 1)
    assert parts_of(view, key)[V.export_s] == 4.0
    first_answer = view.value(V.first_answer_s, key)
    assert first_answer == pytest.approx(0.2 + 0.05 + 0.01)  # not the export
    assert view.value(V.first_answer_warm_s, key) == pytest.approx(0.2 + 0.05 + 0.02)
    table = startup_table(view, 1)
    onnx_row = next(line for line in table.splitlines() if "torch/onnxrt" in line)
    assert "| 4.000 |" in onnx_row and "| 0.26 | none (runtime) |" in onnx_row
    compiled_row = next(line for line in table.splitlines() if "torch/compiled" in line)
    assert "| 30.000 | 4.000 | 32.10 | TORCHINDUCTOR_CACHE_DIR |" in compiled_row
    figure = draw_startup(FigureInputs(view))
    bars = [patch for ax in figure.axes for patch in ax.patches]
    assert len(bars) == 3 + 4  # compiled: no export part; onnxrt: all four
