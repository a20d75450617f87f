"""results/report.md: what was measured, on what, how, and what came out — from the files only.

Every number is read from an input file (stats.nc, the summary tables, the hardware JSON, the
check CSVs, the optional aggregate, training and compare files); the only text typed here is
prose and headings. Sections: hardware, method, checks, figures, winners, the stats tables,
failed and flagged cells, then training and "changes since the previous version" when those
inputs are given.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from fwbench.aggregate import CELL_DIMS
from fwbench.atomic import write_text
from fwbench.plots_data import FigureInputs, HardwareSummary, read_hardware, variants
from fwbench.report_optional import compare_section, training_section
from fwbench.tables import markdown_table

MISSING = "—"
# The order and titles of the figures the report shows; a figure not listed comes last.
FIGURE_TITLES = {
    "hardware": "Hardware limits: GEMM peaks and STREAM bandwidth",
    "roofline": "Roofline per batch",
    "latency": "Latency at the table batch",
    "speedup": "Compile speedup",
    "efficiency": "Roofline efficiency",
    "scaling": "Batch scaling",
    "stability": "Measurement stability",
    "training_time": "Training cost",
    "training_curves": "Training curves",
}
RESULT_TABLES = ("latency", "compile_speedup", "efficiency", "winners")
PROBLEM_TABLES = ("failed", "flagged")


PathLike = str | os.PathLike


@dataclass
class ReportInputs:
    """The files the report is made from; optional ones may be None or empty."""

    stats: PathLike
    stats_csv: PathLike
    tables: PathLike | Sequence[PathLike]  # the tables directory, or the table files
    hardware: PathLike | None = None
    equivalence: PathLike | None = None
    flops: PathLike | None = None
    figures: Sequence[PathLike] = ()
    bench: PathLike | None = None  # results/aggregate/bench.nc: compile details and versions
    train_stats: Sequence[PathLike] = ()
    compare: Sequence[PathLike] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)  # the config's bench section


def fmt(value: Any, scale: float = 1.0, digits: int = 1) -> str:
    """A number as the tables print it ('1,234.5'); '—' for None/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return "never" if value > 0 else "-inf"
    return f"{value * scale:,.{digits}f}"


def sig(value: Any, digits: int = 3) -> str:
    """A number to `digits` significant digits; '—' for None/NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    return f"{value:.{digits}g}"


def latency_us(seconds: Any) -> str:
    """Seconds as µs: one decimal from 10 µs up, three significant digits below."""
    if seconds is None or not math.isfinite(seconds):
        return MISSING
    micro = seconds * 1e6
    return f"{micro:,.1f}" if micro >= 10 else f"{micro:.3g}"


def demote(markdown: str, levels: int = 2) -> str:
    """Headings one or more levels down, so an embedded table file nests under a section."""
    return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + levels) + " ", markdown, flags=re.M)


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) and text else {}
    except json.JSONDecodeError:
        return text


def _open(path: Path) -> xr.Dataset:
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


# ---- sections ------------------------------------------------------------------------------


def header_section(stats: xr.Dataset, hardware: HardwareSummary | None) -> str:
    attrs = stats.attrs
    versions = _json(attrs.get("framework_versions", ""))
    versions_text = ", ".join(f"{fw} {v}" for fw, v in versions.items()) if versions else MISSING
    device = hardware.device_name if hardware else attrs.get("device", MISSING)
    return (
        "# fwbench report\n\n"
        f"PyTorch vs JAX vs TensorFlow on **{device}** (host `{attrs.get('host', MISSING)}`, "
        f"device `{attrs.get('device', MISSING)}`): {attrs.get('cells', MISSING)} cells; "
        f"{versions_text}. Code `{attrs.get('git_commit', MISSING)}`; each cell's settings "
        "hash is in `results/aggregate/bench.nc` (`config_hash`).\n"
    )


def hardware_section(hardware: HardwareSummary | None, stats: xr.Dataset) -> str:
    text = "## Hardware\n\n"
    if hardware is None:
        return text + "No hardware file was given: no measured limits.\n"
    rows = []
    for dtype in hardware.dtypes:
        measured = hardware.measured_flops_per_s.get(dtype)
        theory = hardware.theoretical_flops_per_s.get(dtype)
        if measured is None and theory is None and dtype not in hardware.skipped:
            continue
        by = f" ({hardware.measured_by[dtype]})" if hardware.measured_by.get(dtype) else ""
        ratio = sig(measured / theory, 2) if measured and theory else MISSING
        source = hardware.skipped.get(dtype) or hardware.theoretical_flops_source.get(dtype, "")
        rows.append(
            [f"peak {dtype} (GFLOP/s)", fmt(measured, 1e-9) + by, fmt(theory, 1e-9), ratio, source]
        )
    for kernel, rate in hardware.stream_Bps.items():
        theory = hardware.theoretical_bandwidth_Bps
        note = hardware.theoretical_bandwidth_source if kernel == "triad" else ""
        ratio = sig(rate / theory, 2) if theory else MISSING
        rows.append([f"STREAM {kernel} (GB/s)", fmt(rate, 1e-9), fmt(theory, 1e-9), ratio, note])
    for dtype, ridge in hardware.measured_ridge.items():
        theory = hardware.theoretical_ridge.get(dtype)
        rows.append(
            [f"ridge {dtype} (FLOP/B)", fmt(ridge, digits=2), fmt(theory, digits=2), "", ""]
        )
    table = markdown_table(
        ["quantity", "measured", "theoretical", "measured ÷ theoretical", "theoretical from"], rows
    )
    threads = hardware.threads if hardware.threads is not None else MISSING
    notes = "".join(f"- {note}\n" for note in hardware.notes)
    runner = hardware.stream_runner or MISSING
    return (
        text
        + f"{hardware.device_name}, {threads} thread(s), STREAM by {runner} (`{hardware.source}`)."
        "\n\n"
        + table
        + f"\nRoofline used for the efficiencies: {stats.attrs.get('roofline', MISSING)}.\n"
        + (f"\n{notes}" if notes else "")
    )


def _compile_rows(stats: xr.Dataset, bench: xr.Dataset | None) -> list[list[Any]]:
    rows = []
    for framework, mode in variants(stats):
        cell = stats.sel(framework=framework, mode=mode)
        ok = cell["status"].values == "ok"
        compiled = cell["compiled"].values[ok]
        really = f"{int(np.nansum(compiled == 1))} of {int(ok.sum())} cells"
        how, graphs, breaks, fallbacks = MISSING, MISSING, MISSING, MISSING
        if bench is not None:
            at = bench.sel(framework=framework, mode=mode)
            hows = sorted({str(h) for h in at["compile_how"].values[ok] if str(h)})
            how = "; ".join(hows) or MISSING
            graph_values = at["graph_count"].values[ok]
            if np.isfinite(graph_values).any():
                low, high = int(np.nanmin(graph_values)), int(np.nanmax(graph_values))
                graphs = str(low) if low == high else f"{low}–{high}"
            breaks = fmt(float(np.nansum(at["graph_breaks"].values[ok])), digits=0)
            fallbacks = fmt(float(np.nansum(at["fallbacks"].values[ok])), digits=0)
        rows.append([framework, mode, how, really, graphs, breaks, fallbacks])
    return rows


def method_section(stats: xr.Dataset, bench: xr.Dataset | None, settings: Mapping[str, Any]) -> str:
    attrs = stats.attrs
    thread_count = _thread_counts(attrs.get("threads", ""))
    n = stats["n"].where(stats["status"] == "ok").values
    n = n[np.isfinite(n)]
    repeats = (
        MISSING
        if n.size == 0
        else str(int(n.min()))
        if n.min() == n.max()
        else f"{int(n.min())}–{int(n.max())}"
    )
    warmup = settings.get("warmup", MISSING)
    versions = []
    if "framework_version" in stats:
        for framework in stats["framework"].values:
            version = stats["framework_version"].sel(framework=framework).item()
            extra = ""
            if bench is not None and "versions" in bench:
                detail = _json(bench["versions"].sel(framework=framework).item())
                if isinstance(detail, dict) and detail:
                    extra = " (" + ", ".join(f"{k} {v}" for k, v in detail.items()) + ")"
            versions.append(f"{framework} {version}{extra}")
    compile_table = markdown_table(
        ["framework", "mode", "how", "ran compiled", "graphs", "graph breaks", "fallbacks"],
        _compile_rows(stats, bench),
    )
    flagged = _uncompiled_cells(stats)
    return (
        "## Method\n\n"
        f"- Each cell (framework × mode × architecture × batch) runs in its own process, one "
        f"timing job at a time on the host, with {thread_count} thread(s) for every framework.\n"
        f"- {warmup} untimed warm-up calls, then {repeats} timed calls, each synchronized "
        "before the clock stops; the first call (tracing/compilation) is timed apart.\n"
        f"- Statistics: median with a {fmt(attrs.get('stats_confidence', math.nan), 100, 0)}% "
        f"percentile-bootstrap CI ({attrs.get('stats_bootstrap_resamples', MISSING)} "
        f"resamples); CV above {attrs.get('stats_cv_threshold_pct', MISSING)}% is flagged "
        "noisy. A winner is declared only when a two-sided Mann–Whitney U test, Holm-corrected "
        f"across the table, gives p < {attrs.get('stats_alpha', MISSING)} against every other "
        "variant; otherwise the result is a tie.\n"
        f"- Versions: {'; '.join(versions) or MISSING}.\n\n"
        "What each mode means, in the adapters' own words, and whether it really ran compiled "
        "(the framework's own evidence: graphs traced, breaks, fallbacks"
        + ("" if bench is not None else "; not available: the aggregate was not given")
        + "):\n\n"
        + compile_table
        + (f"\nCompiled modes that ran uncompiled: {', '.join(flagged)}.\n" if flagged else "")
    )


def _thread_counts(text: str) -> str:
    """The thread count from the aggregate's `threads` attribute: one settings JSON, or a JSON
    list of them when cells differ."""
    value = _json(text)
    counts = set()
    for item in value if isinstance(value, list) else [value]:
        item = _json(item) if isinstance(item, str) else item
        counts.add(str(item.get("threads", MISSING)) if isinstance(item, dict) else str(item))
    return " or ".join(sorted(counts)) or MISSING


def _uncompiled_cells(stats: xr.Dataset) -> list[str]:
    flags = stats["flags"].transpose(*CELL_DIMS).values
    coords = [stats[d].values for d in CELL_DIMS]
    return [
        f"{coords[0][f]}/{coords[1][m]}/{coords[2][a]}/b{coords[3][b]}"
        for f, m, a, b in zip(*np.nonzero(flags != ""), strict=True)
        if "not_compiled" in flags[f, m, a, b]
    ]


def checks_section(equivalence: PathLike | None, flops: PathLike | None) -> str:
    text = "## Cross-checks\n\n"
    if equivalence is not None:
        rows = pd.read_csv(equivalence, keep_default_na=False, na_values=[""])
        passed = rows["pass"].astype(str).str.lower() == "true"
        table_rows = [
            [
                r.arch,
                r.framework,
                r.mode,
                sig(r.max_rel_err),
                sig(r.tolerance),
                "pass" if p else "**FAIL**",
                r.error if isinstance(r.error, str) else "",
            ]
            for r, p in zip(rows.itertuples(), passed, strict=True)
        ]
        text += (
            f"### Equivalence with the float64 reference\n\n{int(passed.sum())} of {len(rows)} "
            "(architecture, framework, mode) outputs are within the tolerance.\n\n"
            + markdown_table(
                ["arch", "framework", "mode", "max rel. error", "tolerance", "result", "error"],
                table_rows,
            )
        )
    if flops is not None:
        rows = pd.read_csv(flops, keep_default_na=False, na_values=[""])
        # Each counter is compared with the analytic figure that counts what it counts.
        counts_all = rows["compared_with"] == "all"
        rows["analytic_compared"] = rows["analytic_flops"].where(
            ~counts_all, rows["analytic_total_flops"]
        )
        rows["ratio_compared"] = rows["ratio"].where(~counts_all, rows["ratio_total"])
        table_rows = [
            [
                r.arch,
                r.framework,
                r.mode,
                r.batch,
                r.compared_with if isinstance(r.compared_with, str) else "",
                fmt(r.analytic_compared, digits=0),
                fmt(r.counter_flops, digits=0),
                sig(r.ratio_compared),
                _yes_no(r.within_5pct),
                r.note if isinstance(r.note, str) else "",
            ]
            for r in rows.itertuples()
        ]
        text += "\n### FLOPs: analytic cost model vs the frameworks' counters\n\n" + markdown_table(
            [
                "arch",
                "framework",
                "mode",
                "batch",
                "counted",
                "analytic",
                "counter",
                "ratio",
                "within 5%",
                "note",
            ],
            table_rows,
        )
    if equivalence is None and flops is None:
        text += "No check results were given.\n"
    return text


def _yes_no(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return MISSING
    return "yes" if str(value).lower() == "true" else "no"


def figures_section(figures: Sequence[Path], report_dir: Path) -> str:
    if not figures:
        return ""
    order = list(FIGURE_TITLES)
    ranked = sorted(
        figures, key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem)
    )
    parts = ["## Figures\n"]
    for figure in ranked:
        title = FIGURE_TITLES.get(figure.stem, figure.stem)
        link = Path(os.path.relpath(figure, report_dir)).as_posix()
        parts.append(f"### {title}\n\n![{title}]({link})\n")
    return "\n".join(parts)


def _ratio(numerator: float, denominator: float) -> str:
    ratio = numerator / denominator if denominator else math.nan
    return f"{ratio:.3g}×" if math.isfinite(ratio) else MISSING


def winners_section(stats: xr.Dataset) -> str:
    batch = FigureInputs(stats).batch  # the table batch, or the nearest one measured
    rows = []
    for arch in stats["arch"].values:
        for scope in stats["scope"].values:
            row = stats.sel(arch=arch, batch=batch, scope=scope)
            fastest = row["winner_fastest_median_s"].item()
            runner_up = row["winner_runner_up_median_s"].item()
            verdict = row["winner_verdict"].item()
            named = (
                row["winner"].item() if verdict in ("winner", "only") else row["winner_tied"].item()
            )
            rows.append(
                [
                    arch,
                    scope,
                    verdict,
                    named or MISSING,
                    row["winner_fastest"].item() or MISSING,
                    latency_us(fastest),
                    row["winner_runner_up"].item() or MISSING,
                    latency_us(runner_up),
                    _ratio(runner_up, fastest),
                    sig(row["winner_p_holm"].item(), 2),
                ]
            )
    return (
        f"## Winners at batch {batch}\n\n"
        "Among all variants and among compiled ones only. A *winner* is significantly faster "
        "than every other variant; a *tie* names the variants that are not significantly "
        "slower than the fastest. Every batch: the winners table below.\n\n"
        + markdown_table(
            [
                "arch",
                "among",
                "verdict",
                "winner / tied",
                "fastest",
                "median µs",
                "runner-up",
                "median µs",
                "runner-up ÷ fastest",
                "p (Holm)",
            ],
            rows,
        )
    )


def table_files(tables: PathLike | Sequence[PathLike]) -> dict[str, Path]:
    """{name: path} of the summary tables, from their directory or a list of files."""
    if isinstance(tables, str | os.PathLike):
        directory = Path(tables)
        if not directory.is_dir():
            raise ValueError(f"tables={directory} is not a directory of summary tables")
        return {path.stem: path for path in sorted(directory.glob("*.md"))}
    return {Path(path).stem: Path(path) for path in tables}


def _find_table(files: Mapping[str, Path], name: str) -> Path | None:
    """The table `name`, or `name_b<batch>` (the stats rule names the latency table by its
    batch)."""
    if name in files:
        return files[name]
    batched = [stem for stem in files if re.fullmatch(rf"{re.escape(name)}_b\d+", stem)]
    return files[batched[0]] if len(batched) == 1 else None


def embedded_tables(files: Mapping[str, Path], names: Sequence[str], heading: str) -> str:
    parts = [heading]
    for name in names:
        path = _find_table(files, name)
        if path is None:
            parts.append(f"(The {name} table was not given.)\n")
        else:
            parts.append(demote(path.read_text().strip()) + "\n")
    return "\n".join(parts)


# ---- the report ----------------------------------------------------------------------------


def render_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """The report's Markdown; figure links are relative to `report_path`'s directory."""
    stats = _open(Path(inputs.stats))
    bench = _open(Path(inputs.bench)) if inputs.bench else None
    hardware = read_hardware(inputs.hardware)
    tables = table_files(inputs.tables)
    report_dir = Path(report_path).resolve().parent
    sections = [
        header_section(stats, hardware),
        hardware_section(hardware, stats),
        method_section(stats, bench, inputs.settings),
        checks_section(inputs.equivalence, inputs.flops),
        figures_section([Path(f).resolve() for f in inputs.figures], report_dir),
        winners_section(stats),
        embedded_tables(tables, RESULT_TABLES, "## Statistics tables\n"),
        embedded_tables(tables, PROBLEM_TABLES, "## Failed and flagged cells\n"),
        training_section([Path(p) for p in inputs.train_stats]),
        compare_section([Path(p) for p in inputs.compare], report_dir),
        f"\n---\nStatistics of every cell: `{Path(inputs.stats_csv).name}` "
        f"({len(pd.read_csv(inputs.stats_csv))} rows).\n",
    ]
    return "\n".join(section for section in sections if section)


def write_report(inputs: ReportInputs, report_path: PathLike) -> str:
    """Render the report and write it atomically to `report_path`; returns the text."""
    text = render_report(inputs, report_path)
    write_text(text, report_path)
    return text
