"""bfloat16 cells through the statistics into the report: each set against the same variant in
float32 (comparisons.csv kind `precision`, stats.nc's speedup_vs_float32), counted in the
findings, shown with its accuracy in the Precision section; the float32 sections unchanged."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from fwbench.analysis.aggregate import aggregate_cells
from fwbench.analysis.roofline import HardwareLimits
from fwbench.analysis.stats import StatsSettings, summarize
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.comparisons_file import FASTER, PRECISION, SLOWER, comparisons_table
from fwbench.io.dims import STATUS_FAILED
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.figure_data import FigureInputs
from fwbench.present.plots_precision import draw_precision
from fwbench.present.report.precision import precision_findings, precision_section
from fwbench.present.report.support import refused_cells, unsupported, unsupported_line
from fwbench.present.style import FLAG_COLOR, ratio_log_ticks, save_figure

# (framework, mode, precision): median in seconds, or None for a failed cell
MEDIANS = {
    ("torch", "eager", "float32"): 2e-3,
    ("torch", "eager", "bfloat16"): 1e-3,  # twice as fast
    ("torch", "compiled", "float32"): 1e-3,
    ("torch", "compiled", "bfloat16"): 3e-3,  # three times slower
    ("torch", "onnxrt", "float32"): 1e-3,
    ("torch", "onnxrt", "bfloat16"): None,
}
ORT_ERROR = "NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : no Gemm(13) for bf16"
# What each bf16 cell's work computed in (frameworks.kernel_precision): eager's in bf16,
# compiled's mostly in float32 (an upcast).
KERNELS = {
    "eager": (1.0, "bfloat16 100% of the typed kernel time, 0 casts; torch.profiler (test)"),
    "compiled": (
        0.1,
        "bfloat16 10% of the typed kernel time (ran instead: float32 90%), 4 casts; "
        "torch.profiler (test)",
    ),
}


def _cell(framework: str, mode: str, precision: str, median: float | None, rng) -> Cell:
    cell = Cell(framework, mode, "mlp", 32, repeats=30, precision=precision)
    cell.scalars = {"first_call_s": 0.1, "flops": 1e6, "bytes": 1e5, "compiled": 1.0}
    cell.attrs = {"framework_version": "1.0", "host": "h", "device": "cpu", "contended": 0}
    if median is None:
        cell.latency_s = np.full(30, np.nan)
        cell.attrs |= {"status": STATUS_FAILED, "error_type": "NotImplemented"}
        cell.attrs["error_message"] = ORT_ERROR
    else:
        cell.latency_s = median * rng.lognormal(0.0, 0.01, 30)
    if precision != "float32" and mode in KERNELS:
        share, note = KERNELS[mode]
        cell.scalars["low_precision_share"] = share
        cell.attrs["kernel_precision"] = note
    return cell


@pytest.fixture(scope="module")
def stats(tmp_path_factory) -> xr.Dataset:
    root: Path = tmp_path_factory.mktemp("precision")
    rng = np.random.default_rng(0)
    paths = []
    for (framework, mode, precision), median in MEDIANS.items():
        paths.append(root / f"{framework}-{mode}-{precision}.nc")
        write_cell(_cell(framework, mode, precision, median, rng), paths[-1])
    limits = HardwareLimits(1e12, 1e11, source="test", bf16_peak_flops_per_s=2e12)
    settings = StatsSettings(bootstrap_resamples=200, table_batch=32)
    return summarize(aggregate_cells(paths), limits, settings)


def test_each_bf16_cell_is_compared_with_its_variant_in_float32(stats):
    table = comparisons_table(stats)
    rows = table[table["kind"] == PRECISION].set_index("candidate")
    assert set(rows.index) == {"torch/eager", "torch/compiled"}  # the failed one has none
    assert (rows["precision"] == "bfloat16").all() and (rows["baseline"] == rows.index).all()
    assert rows.loc["torch/eager", "speedup"] == pytest.approx(2.0, rel=0.03)
    assert rows.loc["torch/eager", "verdict"] == FASTER
    assert rows.loc["torch/compiled", "speedup"] == pytest.approx(1 / 3, rel=0.03)
    assert rows.loc["torch/compiled", "verdict"] == SLOWER
    bf16 = stats.sel(framework="torch", mode="eager", arch="mlp", batch=32, precision="bfloat16")
    assert float(bf16[V.speedup_vs_float32]) == pytest.approx(2.0, rel=0.03)


def test_the_float32_view_and_its_sections_see_float32_alone(stats):
    view = StatsView(stats)
    assert view.precision == "float32" and view.precisions() == ["float32", "bfloat16"]
    assert all(key.precision == "float32" for key in view.keys_where(view.status() != "absent"))
    assert int(view.of_system(V.cells_ok)) == 3  # the float32 cells that ran
    bf16 = view.in_precision("bfloat16")
    assert [key.name for key in bf16.failed()] == ["torch/onnxrt/mlp/b32/bfloat16"]


def test_the_findings_say_per_precision_whether_it_pays_why_not_and_what_it_cost(stats):
    speed, accuracy = precision_findings(StatsView(stats), _equivalence(), None)
    assert speed.startswith("`bfloat16` against float32: faster in 1 of 2 cells, slower in 1;")
    assert "the largest gain torch eager `mlp` b32, 1.99 [" in speed
    # the slower one ran mostly in float32: the reason it does not pay, from its kernels
    assert "slower: torch compiled `mlp` b32 (upcast: 10% of its work in bfloat16)" in speed
    # ONNX Runtime's refusal of bf16 is no failure: its path does not support it
    assert speed.endswith("; 1 not supported by their path (Precision).")
    assert "failed" not in speed
    assert accuracy.startswith(
        "`bfloat16` accuracy: error against float64 0.4%–30% of the output's largest value "
        "(bounds 5%–5%)"
    )
    assert accuracy.endswith("**beyond its bound: torch compiled `mlp`** (Precision).")


def test_the_opening_counts_the_cells_a_path_does_not_support_from_the_statistics(stats):
    view = StatsView(stats)
    context = SimpleNamespace(
        parts=(SimpleNamespace(name=None, view=view),), equivalence=None, stats=stats
    )
    assert unsupported_line(context) == (
        "**Not supported by their path:** bfloat16 on ONNX Runtime (no CPU kernel, 1 model).\n"
    )
    (refused,) = refused_cells(context)
    assert (refused.framework, refused.mode, refused.precision) == ("torch", "onnxrt", "bfloat16")


def test_an_error_of_another_kind_on_the_same_path_is_a_failure():
    assert unsupported("torch", "onnxrt", "bfloat16", ORT_ERROR).reason == "no CPU kernel"
    assert unsupported("torch", "onnxrt", "bfloat16", "Segmentation fault") is None
    assert unsupported("torch", "onnxrt", "float32", ORT_ERROR) is None  # float32 is supported
    assert unsupported("torch", "eager", "bfloat16", ORT_ERROR) is None  # not ONNX Runtime
    flex = "ConverterError: ... Please consider using Select TF ops (SELECT_TF_OPS)"
    assert unsupported("tensorflow", "litert", "int8", flex).reason == "converter needs Flex ops"
    assert unsupported("tensorflow", "litert", "float32", "out of memory") is None


def slower_everywhere(root: Path) -> xr.Dataset:
    """torch eager and compiled at 5 batches: bf16 twice as fast in eager and three times
    slower compiled (its work mostly in float32), so 5 cells are slower."""
    rng = np.random.default_rng(3)
    paths = []
    for batch in (1, 2, 4, 8, 32):
        for (framework, mode, precision), median in MEDIANS.items():
            if mode == "onnxrt":
                continue
            cell = _cell(framework, mode, precision, median, rng)
            cell.batch = batch
            paths.append(root / f"{mode}-{precision}-{batch}.nc")
            write_cell(cell, paths[-1])
    limits = HardwareLimits(1e12, 1e11, source="test", bf16_peak_flops_per_s=2e12)
    return summarize(aggregate_cells(paths), limits, StatsSettings(table_batch=32))


def named_cells(line: str) -> int:
    """How many cells a finding names: torch/compiled/mlp(/b32), or torch compiled `mlp`."""
    patterns = (r"\b[a-z]+/[a-z_0-9]+/[a-z_0-9]+", r"\b[a-z]+ [a-z_0-9]+ `[a-z_0-9]+`")
    return sum(len(re.findall(pattern, line)) for pattern in patterns)


def test_a_finding_counts_the_slower_cells_and_names_the_table_rather_than_list_them(tmp_path):
    view = StatsView(slower_everywhere(tmp_path))
    speed, *_ = precision_findings(view, None, None)
    assert named_cells(speed) <= 3, speed
    assert "faster in 5 of 10 cells, slower in 5;" in speed
    assert "the slower ones: 5 upcast (each: the bfloat16 against float32 tables)" in speed
    assert "b1" not in speed.split("slower in 5")[1]  # no slower cell named


def test_the_precision_axis_reads_in_ratios_not_powers_of_ten(stats):
    figure = draw_precision(FigureInputs(StatsView(stats), None, _equivalence()))
    (ax,) = [ax for ax in figure.axes if ax.get_title()]
    figure.draw_without_rendering()
    low, high = ax.get_ylim()
    shown = [
        label.get_text()
        for ticks in (ax.yaxis.get_majorticklabels(), ax.yaxis.get_minorticklabels())
        for label in ticks
        if label.get_text() and low <= label.get_position()[1] <= high
    ]
    assert low < 0.3 and high > 2  # 0.33× (compiled) to 2× (eager)
    assert shown == ["0.5×", "1×", "2×"]
    narrow = draw_precision(FigureInputs(StatsView(stats), None, _equivalence()))
    (ax,) = [ax for ax in narrow.axes if ax.get_title()]
    ax.set_ylim(0.55, 1.5)
    ratio_log_ticks(ax)
    narrow.draw_without_rendering()
    labels = [t.get_text() for t in ax.yaxis.get_majorticklabels() if t.get_text()]
    visible = [t for t in labels if 0.55 <= float(t.rstrip("×")) <= 1.5]
    assert visible == ["0.6×", "0.7×", "0.8×", "0.9×", "1×"]


def _equivalence() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "arch": ["mlp", "mlp", "mlp"],
            "framework": ["torch"] * 3,
            "mode": ["eager", "compiled", "onnxrt"],
            "precision": ["bfloat16"] * 3,
            "max_rel_err": [0.004, 0.3, np.nan],
            "bound": [0.05, 0.05, 0.05],
            "pass": [True, False, False],
        }
    )


def test_the_section_shows_each_speedup_its_failure_and_the_accuracy_against_its_bound(stats):
    context = SimpleNamespace(equivalence=_equivalence())
    part = SimpleNamespace(view=StatsView(stats), name=None)
    text = precision_section(context, part)
    assert "**bfloat16 against float32, batch 32:**" in text
    assert "| torch eager | 1.99 [" in text and f"× {FASTER}" in text
    assert "| not supported: no CPU kernel |" in text  # ONNX Runtime refuses bf16
    assert "| torch eager | 0.004 (0.05) |" in text
    assert "**beyond its bound**: 0.3 (0.05)" in text and "| torch onnxrt | did not run |" in text
    refused = _equivalence().assign(error=["", "", ORT_ERROR])
    text = precision_section(SimpleNamespace(equivalence=refused), part)
    assert "| torch onnxrt | not supported |" in text


def _float32_only(root: Path) -> xr.Dataset:
    cell = _cell("torch", "eager", "float32", 1e-3, np.random.default_rng(1))
    write_cell(cell, root / "c.nc")
    limits = HardwareLimits(1e12, 1e11, source="test")
    return summarize(aggregate_cells([root / "c.nc"]), limits, StatsSettings())


def test_no_section_without_a_low_precision(tmp_path):
    stats = _float32_only(tmp_path)
    part = SimpleNamespace(view=StatsView(stats), name=None)
    assert precision_section(SimpleNamespace(equivalence=None), part) == ""
    assert precision_findings(StatsView(stats), None, None) == []


def test_a_bf16_cell_that_computed_mostly_in_float32_is_flagged_and_reported(stats):
    flags = stats["flags"].sel(arch="mlp", batch=32, precision="bfloat16")
    assert "upcast" in str(flags.sel(framework="torch", mode="compiled").item()).split(",")
    assert "upcast" not in str(flags.sel(framework="torch", mode="eager").item()).split(",")
    part = SimpleNamespace(view=StatsView(stats), name=None)
    text = precision_section(SimpleNamespace(equivalence=None), part)
    assert "Share of the work that ran in bfloat16" in text
    assert "**upcast**: 10%" in text and "100%" in text
    assert "torch.profiler (test)" in text  # how it was seen
    (finding,) = precision_findings(StatsView(stats), None, None)  # no accuracy without checks
    assert "torch compiled `mlp` b32 (upcast: 10% of its work in bfloat16)" in finding


def test_the_precision_figure_puts_each_cell_at_its_error_and_speedup_and_rings_the_unbounded(
    stats, tmp_path
):
    figure = draw_precision(FigureInputs(StatsView(stats), None, _equivalence()))
    (ax,) = [ax for ax in figure.axes if ax.get_title()]
    assert ax.get_title() == "bfloat16 at batch 32: above 1× it is faster"
    points = {
        (round(float(x[0]), 4), round(float(y[0]), 2))
        for line in ax.get_lines()
        if len(x := line.get_xdata()) == 1 and len(y := line.get_ydata()) == 1
    }
    assert (0.004, 1.99) in points or (0.004, 2.0) in points  # eager: twice as fast
    assert any(x == 0.3 and y == pytest.approx(0.33, abs=0.01) for x, y in points)  # compiled
    ringed = [line for line in ax.get_lines() if line.get_markeredgecolor() == FLAG_COLOR]
    assert [float(line.get_xdata()[0]) for line in ringed] == [0.3]  # beyond its bound
    upcast = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert [float(line.get_xdata()[0]) for line in upcast] == [0.3]  # compiled's 10% share
    note = figure.texts[-1].get_text()
    assert "torch/onnxrt/mlp/b32/bfloat16" in note  # failed: named, not drawn
    save_figure(figure, tmp_path / "precision.png", None)
    assert (tmp_path / "precision.png").stat().st_size > 20_000


def test_the_precision_figure_says_when_no_cell_ran_below_float32(tmp_path):
    stats = _float32_only(tmp_path)
    figure = draw_precision(FigureInputs(StatsView(stats)))
    assert "No cell ran in a precision below float32" in figure.axes[0].texts[0].get_text()


def test_a_static_quantizations_saturated_activations_show_beside_its_error():
    """The check rows' counts of stored activation values at a limit: each int8_static
    entry's share, and the largest named in the findings; a dynamic row (0 of 0) shows none."""
    from fwbench.present.report import precision as report

    rows = pd.DataFrame(
        {
            "arch": ["mlp", "cnn", "mlp"],
            "framework": ["torch", "torch", "tensorflow"],
            "mode": ["onnxrt", "onnxrt", "litert"],
            "precision": ["int8_static"] * 3,
            "max_rel_err": [0.01, 0.02, 0.03],
            "bound": [0.05, 0.05, 0.05],
            "saturated": [0, 30, ""],  # the last from a file written before the count
            "saturated_of": [1000, 1000, ""],
            "pass": [True, True, True],
        }
    )
    table = report._accuracy_table(rows, None, "int8_static")
    assert "| torch onnxrt | 0.01 (0.05), 0% at a limit | 0.02 (0.05), 3% at a limit |" in table
    assert "| tensorflow litert | 0.03 (0.05) |" in table
    finding = report._accuracy_finding(report.precision_accuracy(rows, None, "int8_static"))
    assert "stored activations at a limit of their calibrated range: at most 3% " in finding
    assert "(torch onnxrt `cnn`)" in finding and finding.endswith("every one within its bound")


def test_a_quantized_precisions_section_says_which_quantization_each_path_runs(tmp_path, stats):
    from fwbench.present.report.precision import quantization_choice

    rng = np.random.default_rng(2)
    paths = []
    for precision, median in (("float32", 1e-3), ("int8", 5e-4)):
        paths.append(tmp_path / f"{precision}.nc")
        write_cell(_cell("torch", "onnxrt", precision, median, rng), paths[-1])
    limits = HardwareLimits(1e12, 1e11, source="test", bf16_peak_flops_per_s=2e12)
    quantized = summarize(aggregate_cells(paths), limits, StatsSettings(table_batch=32))
    context = SimpleNamespace(equivalence=_equivalence())
    text = precision_section(context, SimpleNamespace(view=StatsView(quantized), name=None))
    choice = quantization_choice()
    assert "**int8 against float32, batch 32:**" in text and choice in text
    assert "torch onnxrt: int8, tensorflow litert: int8" in choice
    assert "torch compiled: int8_static" in choice and "quantization: first" in choice
    bf16_only = precision_section(context, SimpleNamespace(view=StatsView(stats), name=None))
    assert choice not in bf16_only
