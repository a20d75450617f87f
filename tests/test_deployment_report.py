"""The report's deployment section from statistics: each path beside its framework's eager and
best own mode with CIs, the ONNX exporters side by side, and the support matrix's reasons."""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.analysis.roofline import HardwareLimits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.cell_file import Cell
from fwbench.io.stats_file import StatsView
from fwbench.present.report.deployment import (
    latency_table,
    onnx_exporters_table,
    support_matrix,
)

from synthetic import aggregate_of

# Median latency (s) per (framework, mode) of one mlp at batch 1.
MEDIANS = {
    ("torch", "eager"): 100e-6,
    ("torch", "compiled"): 80e-6,
    ("torch", "onnxrt"): 50e-6,
    ("tensorflow", "eager"): 300e-6,
    ("tensorflow", "onnxrt"): 60e-6,
}


def _cell(framework: str, mode: str, median: float, rng) -> Cell:
    cell = Cell(framework, mode, "mlp", 1, repeats=20)
    cell.latency_s = median * (1 + 0.01 * rng.permutation(np.linspace(-1, 1, 21))[:20])
    cell.scalars = {"first_call_s": 1.0, "flops": 1e3, "bytes": 1e3, "compiled": 1.0}
    cell.scalars |= {"working_set_bytes": 2e3}
    cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1.0", "contended": 0}
    return cell


@pytest.fixture
def stats(tmp_path):
    rng = np.random.default_rng(0)
    cells = [_cell(f, m, median, rng) for (f, m), median in MEDIANS.items()]
    limits = HardwareLimits(1e12, 1e12, source="test")
    return summarize(aggregate_of(tmp_path, cells), limits, StatsSettings(bootstrap_resamples=200))


def test_each_path_stands_beside_its_eager_and_best_own_mode(stats):
    torch_onnx = stats.sel(
        framework="torch", mode="onnxrt", arch="mlp", precision="float32", batch=1
    )
    assert float(torch_onnx["speedup_vs_best"]) == pytest.approx(80 / 50, rel=0.02)  # compiled
    assert float(torch_onnx["speedup_vs_eager"]) == pytest.approx(100 / 50, rel=0.02)
    assert (
        float(torch_onnx["speedup_vs_best_ci_low"])
        < 1.6
        < float(torch_onnx["speedup_vs_best_ci_high"])
    )
    tf_onnx = stats.sel(framework="tensorflow", mode="onnxrt", arch="mlp", batch=1).squeeze(
        "precision"
    )
    assert float(tf_onnx["speedup_vs_best"]) == pytest.approx(300 / 60, rel=0.02)  # eager
    own = stats.sel(framework="torch", mode="compiled", arch="mlp", batch=1).squeeze("precision")
    assert np.isnan(float(own["speedup_vs_best"]))  # only deployment paths have one
    table = latency_table(StatsView(stats))
    torch_row = next(line for line in table.splitlines() if "torch/onnxrt" in line)
    assert "| compiled |" in torch_row and "1.60 [" in torch_row and "2.00 [" in torch_row
    assert torch_row.endswith("| faster |")  # against the best own mode
    assert "tensorflow/onnxrt" in table and "torch/compiled" not in table


def test_the_onnx_exporters_stand_side_by_side_in_the_one_runtime(stats):
    table = onnx_exporters_table(StatsView(stats))
    row = next(line for line in table.splitlines() if line.startswith("| mlp"))
    assert "torch/onnxrt" in table and "tensorflow/onnxrt" in table
    assert row.rstrip(" |").endswith("1.20")  # 60 µs / 50 µs


CONVERTER_FAILURE = {
    "framework": "tensorflow",
    "mode": "litert",
    "arch": "lstm",
    "status": "failed",
    "error_type": "ConverterError",
    "error_message": "/x/tracing.py:283:1: error: 'tf.TensorListReserve' op requires a "
    "static element_shape\n        concrete_function = _create(\n^\n/x/f.py:1:1: note: ...",
}


def test_the_support_matrix_says_what_a_path_does_not_support_in_the_converters_words():
    failed = CONVERTER_FAILURE
    matrix = support_matrix([failed, failed | {"arch": "mlp", "status": "ok"}])
    reason = (
        "not supported: converter needs Flex ops (ConverterError: 'tf.TensorListReserve' op "
        "requires a static element_shape) |"
    )
    assert reason in matrix
    assert "concrete_function" not in matrix and "note:" not in matrix
    assert "tracing.py" not in matrix and "| mlp | exported |" in matrix


def test_the_support_matrix_calls_any_other_export_error_a_failure():
    failed = CONVERTER_FAILURE | {"arch": "cnn", "error_message": "error: out of memory"}
    matrix = support_matrix([failed])
    assert "| cnn | failed: ConverterError: out of memory |" in matrix
    # the same refusal on another path is no refusal of that path's
    onnx = CONVERTER_FAILURE | {"mode": "onnxrt"}
    assert "failed: ConverterError:" in support_matrix([onnx])
