"""report.md from the synthetic results of synthetic.py: every number read from the files."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from fwbench.analysis.compare import compare, write_csv
from fwbench.analysis.comparisons import Levels
from fwbench.analysis.estimators import ci_level
from fwbench.io.cell_file import Cell, write_cell
from fwbench.io.comparisons_file import EQUIVALENT, SLOWER
from fwbench.io.stats_file import StatsView, read_stats, write_stats
from fwbench.present.report import ReportInputs, document, load_context, render_report, write_report
from fwbench.present.report import context as report_context
from fwbench.present.report.method import _processes_line, _samples_text
from fwbench.present.report.results import figures_section

from conftest import REPO
from synthetic import (
    FAILED,
    MEMORY_LEVELS,
    PEAK_FLOPS,
    UNCOMPILED,
    copy_of,
    hardware_document,
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
def results(synthetic_sweep, tmp_path_factory):
    results = copy_of(synthetic_sweep, tmp_path_factory.mktemp("report"))
    (results.root / "checks").mkdir()
    (results.root / "checks" / "equivalence.csv").write_text(EQUIVALENCE)
    (results.root / "checks" / "flops.csv").write_text(FLOPS)
    figures = results.root / "figures"
    figures.mkdir()
    for name in ("roofline", "latency"):
        (figures / f"{name}.png").write_bytes(b"\x89PNG placeholder")
    return results


def inputs(results, **extra) -> ReportInputs:
    given = dict(
        stats=results.stats,
        tables=results.tables,
        hardware=results.hardware,
        equivalence=results.root / "checks" / "equivalence.csv",
        flops=results.root / "checks" / "flops.csv",
        figures=sorted((results.root / "figures").glob("*.png")),
        settings={"warmup": 7},
    )
    return ReportInputs(**(given | extra))


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
    stats = xr.Dataset({"calls_per_sample_min": 1.0, "calls_per_sample_max": 250.0})
    text = _samples_text(StatsView(stats), {"min_sample_s": 0.02})
    assert "mean of as many consecutive calls as last 20 ms" in text
    assert "(1–250 calls per sample across the cells" in text
    one = xr.Dataset({"calls_per_sample_min": 1.0, "calls_per_sample_max": 1.0})
    assert _samples_text(StatsView(one), {}) == "Each sample is one call, timed alone."


def several_processes(results, batch: int) -> xr.Dataset:
    """The synthetic statistics as if the cells at `batch` had run in 2 processes."""
    stats = read_stats(results.stats)
    ok = stats["status"] == "ok"
    counts = xr.where(ok, xr.where(stats["batch"] == batch, 2.0, 1.0), np.nan)
    stats = stats.assign(process_count=counts.transpose(*stats["process_count"].dims))
    stats.attrs |= {"processes": 2, "median_ci_level": ci_level(2, True)}
    return stats


def test_the_method_says_which_share_of_cells_ran_in_several_processes_from_the_inputs(results):
    view = StatsView(several_processes(results, 8))
    several = sum(1 for key in view.keys_where(view.status() == "ok") if key.batch == 8)
    measured = int((view.status() == "ok").sum())
    assert (several, measured) == (11, 35)  # jax/jit/lstm/b8 failed
    text = _processes_line(view, {"processes": 2, "multi_process_share": 0.4})
    assert text.startswith(
        "- A seeded 40% of each architecture's batch sizes (at least one) per framework and "
        "mode (`bench.multi_process_share`) is measured in 2 fresh processes"
    )
    assert "the rest in one: 11 of 35 measured cells here ran in more than one. All" in text
    every = _processes_line(view, {"processes": 2, "multi_process_share": 1})
    assert every.startswith("- Every cell is measured in 2 fresh processes")
    assert _processes_line(StatsView(read_stats(results.stats)), {}) == ""  # one process


def test_each_whiskered_figure_says_what_its_whiskers_are_once_and_links_the_method(results):
    view = StatsView(several_processes(results, 8))
    figures = tuple(results.root / "figures" / f"{name}.png" for name in ("latency", "roofline"))
    part = SimpleNamespace(figures=figures, view=view)
    text = figures_section(SimpleNamespace(report_dir=results.root), part)
    roofline, latency = text.split("### ")[1:]  # in the catalog's order
    assert latency.startswith("Latency at the table batch")
    assert latency.count("Whiskers") == 1 and latency.rstrip().endswith(
        "Whiskers: the 95% CI of the median, which covers the variation between fresh "
        "processes, within a process and the machine's drift over the sweep (how: "
        "[docs/method.md](../docs/method.md))."
    )
    assert "Whiskers" not in roofline  # it draws none
    assert "σ" not in text and "√" not in text  # the formula is the method page's


def test_the_method_section_takes_the_share_from_the_settings_and_states_the_formula_once(
    results, tmp_path
):
    write_stats(several_processes(results, 8), tmp_path / "stats.nc")
    settings = {"warmup": 7, "processes": 2, "multi_process_share": 0.25}
    given = inputs(results, stats=tmp_path / "stats.nc", settings=settings)
    text = render_report(given, tmp_path / "r.md")
    method = section(text, "Method")
    assert "- A seeded 25% of each architecture's batch sizes (at least one)" in method
    assert "measured in 2 fresh processes" in method and "Every cell is measured" not in text
    assert text.count("√(σ²/k + γ²τ²)") == 1 and "√(σ²/k + γ²τ²)" in method
    assert "[docs/method.md](../docs/method.md)" in method


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
    assert "1 of 2 (architecture, framework, mode) outputs are within their error bound" in checks
    assert row(checks, "lstm", "jax", "jit", "float32")[6] == "**FAIL**"
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
    # (a run that records no precision trained in float32)
    cells = row(training, "local", "torch", "compiled", "resnet8", "digits", "float32")
    # steady epoch, overhead, time to target, and samples/s: the median of the steady epochs
    # (800 and 780), not of every epoch with the first's compilation (780)
    assert cells[6:11] == ["ok", "2.1", "2.9", "9.2", "790"]
    assert cells[11] == "91"  # the last epoch's validation accuracy, %
    assert row(training, "local", "jax", "jit", "resnet8", "digits", "float32")[6] == "failed"


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
    table = compare(
        paths["old"], paths["new"], Levels(confidence=0.95, min_effect_pct=5, resamples=200)
    )
    write_csv(table, tmp_path / "torch.csv")
    return tmp_path / "torch.csv"


def test_a_changes_section_shows_each_cells_old_and_new_median_and_verdict(results, tmp_path):
    path = compared(tmp_path)
    text = render_report(inputs(results, compare=[path]), tmp_path / "r.md")
    changes = section(text, "Changes since the previous version")
    assert "### torch 2.12.0 → 2.13.0" in changes
    assert f"2 cells: 1 {SLOWER}, 1 {EQUIVALENT}." in changes
    table = pd.read_csv(path).set_index("batch")
    cells = row(changes, "torch", "eager", "mlp", "float32", "1")
    assert float(cells[6]) == pytest.approx(table.loc[1, "new_median_s"] * 1e6, abs=0.05)
    assert cells[7].startswith(f"{table.loc[1, 'ratio']:.2f} [") and cells[-1] == SLOWER


def test_the_rule_script_writes_the_report_atomically(results, tmp_path):
    from snakemake.iocontainers import Namedlist

    tables = sorted(str(p) for p in results.tables.glob("*.md"))
    fake = type("Snakemake", (), {})()
    fake.input = Namedlist(
        fromdict={
            "stats": str(results.stats),
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


# ---- the report's order, its verdict line and its one context -----------------------------

VERDICT = "**Cross-checks:**"


def test_the_findings_come_first_and_the_verdict_follows_them_in_brief(report):
    header, findings = report.split("\n\n")[1:3]
    assert header.startswith("PyTorch vs JAX vs TensorFlow on **Test CPU 9000**")
    assert findings == "## Findings"
    brief = section(report, "Checks in brief")
    assert report.index("## Findings") < report.index(VERDICT) < report.index("## Figures")
    (verdict,) = [line for line in brief.splitlines() if line.startswith(VERDICT)]
    assert "equivalence 1 of 2 outputs match the float64 reference within 0.0001" in verdict
    assert "failing: jax/jit/lstm" in verdict
    # two counters agree within 5%, the LSTM's counter returned nothing
    assert "FLOP counters 2 of 2 within 5% of the analytic count, 1 without a count" in verdict
    assert "Not supported" not in report  # every failure here is a real one


# Rows a path does not support (ONNX Runtime's CPU provider has no bf16 kernel; the TFLite
# converter needs Flex ops for a recurrence), beside a real failure and a bf16 row that passed.
REFUSED = """arch,framework,mode,precision,max_abs_err,max_rel_err,tolerance,pass,error
mlp,torch,eager,float32,1.1e-07,2.4e-07,0.0001,True,
lstm,jax,jit,float32,,,0.0001,False,XlaRuntimeError: boom
mlp,torch,eager,bfloat16,0.001,0.004,0.05,True,
mlp,torch,onnxrt,bfloat16,,,0.05,False,NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : \
Could not find an implementation for Gemm(13)
lstm,torch,onnxrt,bfloat16,,,0.05,False,NotImplemented: [ONNXRuntimeError] : 9 : NOT_IMPLEMENTED
mlp,tensorflow,onnxrt,bfloat16,,,0.05,False,Fail: [ONNXRuntimeError] : 1 : FAIL : bound to \
different types (tensor(float16) and tensor(bfloat16)) in node
lstm,tensorflow,litert,float32,,,0.0001,False,RuntimeError: the export failed (m.json): \
ConverterError: 'tf.TensorListReserve' op requires element_shape to be static
lstm,tensorflow,litert,int8,,,0.05,False,RuntimeError: the export failed (m.json): \
ConverterError: 'tf.TensorListReserve' op requires element_shape to be static
mlp,torch,onnxrt,float32,,,0.0001,False,Fail: [ONNXRuntimeError] : 1 : FAIL : a real failure
"""


def test_what_a_path_does_not_support_is_said_once_apart_from_the_failures(results, tmp_path):
    refused = tmp_path / "equivalence.csv"
    refused.write_text(REFUSED)
    text = render_report(inputs(results, equivalence=refused), tmp_path / "r.md")
    brief = section(text, "Checks in brief")
    (line,) = [line for line in brief.splitlines() if line.startswith("**Not supported")]
    assert line == (
        "**Not supported by their path:** bfloat16 on ONNX Runtime (no CPU kernel, 3 models), "
        "LiteRT lstm (converter needs Flex ops, 2 models)."
    )
    assert text.count("Not supported by their path") == 1
    (verdict,) = [line for line in brief.splitlines() if line.startswith(VERDICT)]
    # the 5 refused rows are neither counted nor failing; a float32 onnxrt error is a failure
    assert "equivalence 2 of 4 outputs match the float64 reference" in verdict
    assert "failing: jax/jit/lstm, torch/onnxrt/mlp; FLOP counters" in verdict
    assert "bfloat16" not in verdict.split("failing:")[1]
    assert text.index("## Findings") < text.index(line) < text.index("## Figures")
    checks = section(text, "Cross-checks")
    assert row(checks, "lstm", "tensorflow", "litert", "int8")[6] == "not supported"
    assert row(checks, "mlp", "torch", "onnxrt", "float32")[6] == "**FAIL**"


def test_the_verdict_names_the_flop_counters_outside_5_percent(results, tmp_path):
    off = tmp_path / "flops.csv"
    off.write_text(FLOPS.replace("1.0156,1.0,all,True", "1.2,1.2,all,False"))
    text = render_report(inputs(results, flops=off), tmp_path / "r.md")
    verdict = next(line for line in text.splitlines() if line.startswith(VERDICT))
    assert "FLOP counters 1 of 2 within 5% of the analytic count (outside: jax/jit/mlp)" in verdict


def test_the_verdict_says_every_output_matches_when_every_row_passes(results, tmp_path):
    passing = tmp_path / "equivalence.csv"
    passing.write_text(EQUIVALENCE.replace("False,XlaRuntimeError: boom", "True,"))
    text = render_report(inputs(results, equivalence=passing), tmp_path / "r.md")
    verdict = next(line for line in text.splitlines() if line.startswith(VERDICT))
    assert "equivalence 2 of 2 outputs match" in verdict and "failing" not in verdict


def test_results_come_first_and_the_cross_checks_near_the_end(results, tmp_path):
    extra = dict(train_stats=[training_runs(tmp_path)], compare=[compared(tmp_path)])
    text = render_report(inputs(results, **extra), tmp_path / "r.md")
    order = [
        "# fwbench report",
        "## Findings",
        VERDICT,
        "## Figures",
        "## Winners at batch",
        "## Statistics tables",
        "## Failed and flagged cells",
        "## Hardware",
        "## Method",
        "## Training",
        "## Changes since the previous version",
        "## Cross-checks",
        "Statistics of every cell",
    ]
    places = [text.index(heading) for heading in order]
    assert places == sorted(places)


def test_the_last_line_counts_the_rows_of_stats_csv_from_stats_nc(results, report):
    rows = len(pd.read_csv(results.stats_csv))
    assert report.rstrip().endswith(f"Statistics of every cell: `stats.csv` ({rows} rows).")


def test_the_context_is_loaded_once_and_every_section_gets_the_same_one(results, monkeypatch):
    reads, seen, loads = [], [], []
    real_load = document.load_context
    assert not hasattr(report_context, "read_bench")  # the report reads no aggregate
    for reader in ("read_stats", "read_netcdf"):
        real = getattr(report_context, reader)
        spy = lambda p, real=real: reads.append(p) or real(p)  # noqa: E731
        monkeypatch.setattr(report_context, reader, spy)
    monkeypatch.setattr(document, "load_context", lambda *a: loads.append(1) or real_load(*a))
    names = ["header_section", "verdict_line", "systems_section", "figures_section"]
    names += ["winners_section", "statistics_tables_section", "problems_section"]
    names += ["hardware_section", "method_section", "training_section", "compare_section"]
    names += ["checks_section", "footer_section"]
    for name in names:
        real = getattr(document, name)
        spy = lambda context, *rest, real=real: seen.append(context) or real(context, *rest)  # noqa: E731
        monkeypatch.setattr(document, name, spy)
    text = render_report(inputs(results), results.root / "r.md")
    assert text.startswith("# fwbench report") and loads == [1]
    assert len(seen) == len(names) and all(context is seen[0] for context in seen)
    assert list(map(str, reads)) == [str(results.stats)]


def two_systems(results, tmp_path: Path, documents: dict[str, str]) -> ReportInputs:
    """The synthetic statistics as systems `a` and `b`, with a hardware file per system whose
    content names it (`documents`: file name → the system its content names)."""
    one = read_stats(results.stats)
    write_stats(
        xr.concat([one] * 2, dim=pd.Index(["a", "b"], name="system")), tmp_path / "stats.nc"
    )
    hardware = []
    for file_name, system in documents.items():
        document = hardware_document() | {"schema_version": 3, "system": system}
        document["theoretical"] = document["theoretical"] | {"device_name": f"CPU of {system}"}
        hardware.append(tmp_path / file_name)
        hardware[-1].write_text(json.dumps(document))
    tables = []
    for system in ("a", "b"):  # as the stats rule writes them: results/summary/<system>/tables
        tables.append(tmp_path / "summary" / system / "tables" / "latency_b32.md")
        tables[-1].parent.mkdir(parents=True)
        tables[-1].write_text(f"# Median latency of system {system}\n")
    return ReportInputs(stats=tmp_path / "stats.nc", tables=tables, hardware=hardware)


def test_a_hardware_file_belongs_to_the_system_its_content_names_not_its_path(results, tmp_path):
    # In stats.nc's order, but each file named after the other system.
    two = two_systems(results, tmp_path, {"b.json": "a", "a.json": "b"})
    context = load_context(two, tmp_path / "report.md")
    assert [part.name for part in context.parts] == ["a", "b"]
    assert [Path(part.hardware.source).name for part in context.parts] == ["b.json", "a.json"]
    systems = section(render_report(two, tmp_path / "report.md"), "Systems")
    assert row(systems, "a")[2] == "CPU of a" and row(systems, "b")[2] == "CPU of b"


def test_each_system_embeds_its_own_tables(results, tmp_path):
    two = two_systems(results, tmp_path, {"a.json": "a", "b.json": "b"})
    text = render_report(two, tmp_path / "report.md")
    part_a, part_b = text.split("# System `a`")[1].split("# System `b`")
    assert "#### Median latency of system a" in part_a and "system b" not in part_a
    assert "#### Median latency of system b" in part_b


def test_a_hardware_file_of_another_system_is_refused_naming_it(results, tmp_path):
    two = two_systems(results, tmp_path, {"a.json": "a", "c.json": "c"})
    with pytest.raises(ValueError, match=r"c\.json is the hardware file of system 'c'"):
        load_context(two, tmp_path / "report.md")


CELL_NAMES = (
    re.compile(r"\b[a-z]+/[a-z_0-9]+/[a-z_0-9]+"),  # torch/compiled/mlp, with /b32 or not
    re.compile(r"\b[a-z]+ [a-z_0-9]+ `[a-z_0-9]+`"),  # torch compiled `mlp`
)


def named_cells(line: str) -> int:
    """How many cells a line of the report names."""
    return sum(len(pattern.findall(line)) for pattern in CELL_NAMES)


def test_each_finding_is_one_short_line_naming_at_most_three_cells(report):
    findings = [line for line in section(report, "Findings").splitlines() if line.startswith("- ")]
    assert len(findings) >= 8  # a winner per architecture, a compile line per compiled mode
    assert named_cells("`tensorflow/xla/lstm/b8` and torch compiled `mlp` b32") == 2
    for finding in findings:
        assert named_cells(finding) <= 3 and len(finding) < 320, finding
    winners = [line for line in findings if "(Winners at batch 32)." in line]
    assert [line.split(":")[0] for line in winners] == ["- `mlp`", "- `lstm`"]  # answer next


def test_the_report_opens_with_findings_whose_every_number_is_in_a_table_below(report):
    findings = section(report, "Findings")
    assert report.index("## Findings") < report.index("## Figures")
    rest = report[report.index("## Figures") :]
    for name in (
        "Winners at batch 32",
        "Compile speedup",
        "Roofline efficiency",
        "Failed and flagged",
    ):
        assert name in findings
    numbers = re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", findings)
    assert len(numbers) >= 6, findings
    for number in numbers:
        assert number in rest, f"{number} of the findings is in no table below"
