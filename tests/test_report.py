"""report.md from the synthetic results of synthetic.py: every number read from the files."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from fwbench.analysis.compare import SAME, SLOWER, CompareSettings, compare, write_csv
from fwbench.io.cell_file import Cell, write_cell
from fwbench.present.report import ReportInputs, render_report, write_report
from fwbench.present.report_sections import _samples_text

from conftest import REPO
from synthetic import (
    FAILED,
    MEMORY_LEVELS,
    PEAK_FLOPS,
    UNCOMPILED,
    synthetic_results,
    training_runs,
)

EQUIVALENCE = """arch,framework,mode,max_abs_err,max_rel_err,tolerance,pass,error
mlp,torch,eager,1.1e-07,2.4e-07,0.0001,True,
lstm,jax,jit,,,0.0001,False,XlaRuntimeError: boom
"""
FLOPS = """arch,framework,mode,batch,analytic_flops,analytic_total_flops,counter_flops,ratio,\
ratio_total,compared_with,within_5pct,note
mlp,torch,eager,4,18944,19240,18944.0,1.0,0.98,matmul,True,FlopCounterMode
mlp,jax,jit,4,18944,19240,19240.0,1.0156,1.0,all,True,XLA cost_analysis
lstm,torch,eager,4,50000,52000,,,,,,counter returns 0 for nn.LSTM
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    results = synthetic_results(tmp_path_factory.mktemp("report"))
    (results.root / "checks").mkdir()
    (results.root / "checks" / "equivalence.csv").write_text(EQUIVALENCE)
    (results.root / "checks" / "flops.csv").write_text(FLOPS)
    figures = results.root / "figures"
    figures.mkdir()
    for name in ("roofline", "latency"):
        (figures / f"{name}.png").write_bytes(b"\x89PNG placeholder")
    return results


def inputs(results, **extra) -> ReportInputs:
    return ReportInputs(
        stats=results.stats,
        stats_csv=results.stats_csv,
        tables=results.tables,
        hardware=results.hardware,
        equivalence=results.root / "checks" / "equivalence.csv",
        flops=results.root / "checks" / "flops.csv",
        figures=sorted((results.root / "figures").glob("*.png")),
        bench=results.bench,
        settings={"warmup": 7},
        **extra,
    )


@pytest.fixture(scope="module")
def report(results) -> str:
    return render_report(inputs(results), results.root / "report.md")


def section(report: str, heading: str) -> str:
    """The text under `## heading` up to the next `## ` heading."""
    start = report.index(f"## {heading}")
    end = report.find("\n## ", start + 3)
    return report[start : end if end > 0 else None]


def row(text: str, *cells: str) -> list[str]:
    """The cells of the one Markdown table row that starts with `cells`."""
    prefix = "| " + " | ".join(cells) + " |"
    (line,) = [line for line in text.splitlines() if line.startswith(prefix)]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_winners_median_in_the_report_is_the_one_in_stats_csv(results, report):
    cells = row(section(report, "Winners at batch 32"), "lstm", "all")
    fastest, median_us = cells[4], float(cells[5].replace(",", ""))
    framework, mode = fastest.split("/")
    csv = pd.read_csv(results.stats_csv)
    (expected_s,) = csv.query(
        "framework == @framework and mode == @mode and arch == 'lstm' and batch == 32"
    )["median_s"]
    assert median_us == pytest.approx(expected_s * 1e6, abs=0.05)
    assert fastest == "torch/compiled" and cells[2] == "winner"


def test_the_hardware_table_shows_the_measured_peak_and_its_framework(report):
    cells = row(section(report, "Hardware"), "peak float32 (GFLOP/s)")
    assert cells[1] == f"{PEAK_FLOPS / 1e9:,.1f} (torch)"
    assert cells[3] == f"{PEAK_FLOPS / 6.4e11:.2g}"  # measured ÷ theoretical


def test_the_hardware_table_lists_each_memory_levels_bandwidth(report):
    for name, (_, bandwidth, kernel) in MEMORY_LEVELS.items():
        assert f"| {name} bandwidth (GB/s) | {bandwidth / 1e9:.1f} |" in report
        assert kernel in report


def test_the_efficiency_table_names_each_cells_memory_level_and_its_dram_efficiency(results):
    table = (results.root / "summary" / "tables" / "efficiency.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| arch"))
    assert "| level |" in header and "| DRAM-roof efficiency |" in header
    assert "| L1 |" in table  # the small synthetic models fit in L1 at batch 1


def test_the_method_says_how_the_roof_of_each_cell_was_chosen(report):
    assert "smallest memory level the cell's working set" in report


def test_a_failed_cell_appears_in_the_failed_section_with_its_message(report):
    failed = section(report, "Failed and flagged cells")
    framework, mode, arch, batch = FAILED
    cells = row(failed, framework, mode, arch, str(batch))
    assert cells[4:] == ["XlaRuntimeError", "RESOURCE_EXHAUSTED: test failure"]


def test_the_method_says_how_many_calls_a_sample_holds_among_ok_cells():
    stats = xr.Dataset(
        {
            "status": ("cell", ["ok", "ok", "failed"]),
            "calls_per_sample": ("cell", [1.0, 250.0, 9999.0]),
        }
    )
    text = _samples_text(stats, {"min_sample_s": 0.02})
    assert "mean of as many consecutive calls as last 20 ms" in text
    assert "(1–250 calls per sample across the cells" in text


def test_the_method_says_what_ran_compiled_and_names_the_fallback(report):
    method = section(report, "Method")
    assert "7 untimed warm-up calls, then 12 timed samples" in method
    assert "Each sample is one call, timed alone." in method  # synthetic cells: no blocks
    torch_compiled = row(method, "torch", "compiled")
    assert torch_compiled[2] == "torch compiled (test)"  # the cells' compile_how
    assert torch_compiled[3] == "5 of 6 cells"
    framework, mode, arch, batch = UNCOMPILED
    assert f"{framework}/{mode}/{arch}/b{batch}" in method


def test_the_checks_count_passes_and_show_failures(report):
    checks = section(report, "Cross-checks")
    assert "1 of 2 (architecture, framework, mode) outputs are within the tolerance" in checks
    assert row(checks, "lstm", "jax", "jit")[5] == "**FAIL**"
    assert row(checks, "mlp", "torch", "eager", "4")[4:7] == ["matmul", "18,944", "18,944"]
    # a counter of every op is set against the analytic total, not the matmul part
    assert row(checks, "mlp", "jax", "jit", "4")[4:8] == ["all", "19,240", "19,240", "1"]


def test_figure_links_are_relative_and_point_at_the_files(results, report):
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)
    assert links == ["figures/roofline.png", "figures/latency.png"]  # in the report's order
    assert all((results.root / link).exists() for link in links)


def test_the_stats_tables_are_embedded_under_their_section(report):
    tables = section(report, "Statistics tables")
    assert "### Median latency (µs) at batch 32" in tables
    assert "### Compile speedup" in tables and "### Winners" in tables


def test_no_training_or_compare_section_without_those_inputs(report):
    assert "## Training" not in report and "## Changes since" not in report


def test_a_training_section_appears_with_each_runs_numbers(results, tmp_path):
    text = render_report(inputs(results, train_stats=[training_runs(tmp_path)]), tmp_path / "r.md")
    training = section(text, "Training")
    # Runs that record no system are the default config's one machine's.
    cells = row(training, "local", "torch", "compiled", "resnet8", "digits")
    assert cells[5:10] == ["ok", "2.1", "2.9", "9.2", "780"]  # steady, overhead, target, samples/s
    assert cells[10] == "91"  # the last epoch's validation accuracy, %
    assert row(training, "local", "jax", "jit", "resnet8", "digits")[5] == "failed"


def compared(tmp_path: Path) -> Path:
    """fwbench.analysis.compare on two versions of two torch cells: 30% slower, unchanged."""
    rng = np.random.default_rng(1)
    paths = {"old": [], "new": []}
    for side, version in (("old", "2.12.0"), ("new", "2.13.0")):
        for batch, base in ((1, 1e-5), (8, 2e-5)):
            cell = Cell("torch", "eager", "mlp", batch, repeats=20)
            slower = 1.3 if side == "new" and batch == 1 else 1.0
            cell.latency_s = base * slower * rng.lognormal(0.0, 0.01, 20)
            cell.attrs = {"framework_version": version}
            paths[side].append(tmp_path / side / f"b{batch}.nc")
            write_cell(cell, paths[side][-1])
    table = compare(paths["old"], paths["new"], CompareSettings(resamples=200))
    write_csv(table, tmp_path / "torch.csv")
    return tmp_path / "torch.csv"


def test_a_changes_section_shows_each_cells_old_and_new_median_and_verdict(results, tmp_path):
    path = compared(tmp_path)
    text = render_report(inputs(results, compare=[path]), tmp_path / "r.md")
    changes = section(text, "Changes since the previous version")
    assert "### torch 2.12.0 → 2.13.0" in changes
    assert f"2 cells: 1 {SLOWER}, 1 {SAME}." in changes
    table = pd.read_csv(path).set_index("batch")
    cells = row(changes, "torch", "eager", "mlp", "1")
    assert float(cells[5]) == pytest.approx(table.loc[1, "new_median_s"] * 1e6, abs=0.05)
    assert cells[6].startswith(f"{table.loc[1, 'ratio']:.3f} [") and cells[-1] == SLOWER


def test_the_rule_script_writes_the_report_atomically(results, tmp_path):
    from snakemake.iocontainers import Namedlist

    tables = sorted(str(p) for p in results.tables.glob("*.md"))
    fake = type("Snakemake", (), {})()
    fake.input = Namedlist(
        fromdict={
            "stats": str(results.stats),
            "stats_csv": str(results.stats_csv),
            "tables": tables,
            "hardware": str(results.hardware),
            "equivalence": str(results.root / "checks" / "equivalence.csv"),
            "flops": str(results.root / "checks" / "flops.csv"),
            "figures": [str(p) for p in sorted((results.root / "figures").glob("*.png"))],
            "compare": [],
        }
    )
    out = tmp_path / "results" / "report.md"
    fake.output = Namedlist([str(out)])
    fake.params = Namedlist(fromdict={"settings": {"warmup": 3}})
    fake.log = Namedlist([str(tmp_path / "report.log")])
    runpy.run_path(str(REPO / "workflow/scripts/report.py"), init_globals={"snakemake": fake})
    text = out.read_text()
    assert text.startswith("# fwbench report") and "3 untimed warm-up calls" in text
    assert [p.name for p in out.parent.iterdir()] == ["report.md"]  # no temporary left


def test_a_tables_path_that_is_no_directory_raises_naming_it(results, tmp_path):
    bad = inputs(results)
    bad.tables = tmp_path / "no-tables"
    with pytest.raises(ValueError, match="no-tables"):
        write_report(bad, tmp_path / "r.md")
    assert not (tmp_path / "r.md").exists()
