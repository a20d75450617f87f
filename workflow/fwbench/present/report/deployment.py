"""A system's deployment paths: which architecture each export mode could export (the support
matrix: measured, or the export's own reason) and what each export cost, from the artifact
manifests (fwbench.io.artifact_file); each path's latency beside its framework's eager and best
own mode, and the ONNX exporters side by side in one runtime, from stats.nc."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import xarray as xr

from fwbench import frameworks
from fwbench.analysis.speedups import best_in_framework
from fwbench.io.dims import EAGER_MODE, STATUS_OK
from fwbench.io.variables import V
from fwbench.present.figure_data import cell_value
from fwbench.present.format import MISSING, fixed, latency_us, percent
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.tables import markdown_table

REASON_CHARS = 120  # a failure's message in the matrix; the manifest holds it whole
COST_HEADER = [
    "path",
    "architecture",
    "export s",
    "framework import s",
    "artifact MB",
    "exporter peak RSS MB",
    "how",
]
INTRO = (
    "Each export mode exports the model once per architecture, in its own timing job, with a "
    "dynamic batch dimension (one artifact serves every batch, as models are shipped); its "
    "cells load the artifact (`results/artifacts/`) and time it exactly as every other cell, "
    "and the checks run it against the float64 reference. A model a path cannot export is "
    "recorded with the exporter's error, never left out. What each runtime ran: ONNX Runtime "
    "with the CPU (or CUDA) execution provider alone, every graph optimization "
    "(ORT_ENABLE_ALL), intra-op threads = the cell's threads, inter-op 1, sequential, spinning "
    "on; LiteRT's interpreter with its default op resolver (the XNNPACK delegate) and "
    "num_threads = the cell's threads, float32, builtin ops only; AOTInductor's package "
    "(freezing on the CPU) on torch's threads; jax.export's StableHLO under jax.jit on XLA's. "
    "jax has no `onnxrt` path: jax2onnx would add about 30 packages (flax, orbax, equinox, "
    "huggingface_hub, ...) to the jax environment for one path, and the two ONNX exporters "
    "measured already show what an exporter changes in one runtime."
)
ONNX_MODE = "onnxrt"


def _path(manifest: Mapping[str, Any]) -> str:
    return f"{manifest['framework']}/{manifest['mode']}"


def _entry(manifest: Mapping[str, Any]) -> str:
    if manifest.get("status") == STATUS_OK:
        return "exported"
    message = str(manifest.get("error_message", ""))
    if "error: " in message:  # a converter's message opens with the source location
        message = message[message.index("error: ") + len("error: ") :]
    message = message.strip().split("\n", 1)[0]  # the reason, not the traceback under it
    if len(message) > REASON_CHARS:
        message = message[: REASON_CHARS - 1] + "…"
    return f"failed: {manifest.get('error_type', '')}: {message}"


def support_matrix(manifests: Sequence[Mapping[str, Any]]) -> str:
    """Architecture × path: exported, or the export's error."""
    paths = sorted({_path(m) for m in manifests})
    archs = list(dict.fromkeys(m["arch"] for m in manifests))
    found = {(m["arch"], _path(m)): _entry(m) for m in manifests}
    rows = [[arch, *(found.get((arch, path), MISSING) for path in paths)] for arch in archs]
    return markdown_table(["architecture", *paths], rows)


def _cost_row(manifest: Mapping[str, Any]) -> list[Any]:
    ok = manifest.get("status") == STATUS_OK
    return [
        _path(manifest),
        manifest["arch"],
        fixed(manifest.get("export_s"), digits=2) if ok else MISSING,
        fixed(manifest.get("import_s"), digits=2) if ok else MISSING,
        fixed(manifest.get("size_bytes"), scale=1e-6, digits=2) if ok else MISSING,
        fixed(manifest.get("peak_rss_bytes"), scale=1e-6, digits=0),
        manifest.get("how", "") if ok else _entry(manifest),
    ]


def _median(stats: xr.Dataset, cell: tuple) -> str:
    low, high = (cell_value(stats, f"median_ci_{end}_s", cell) for end in ("low", "high"))
    median = latency_us(cell_value(stats, V.median_s, cell))
    return f"{median} [{latency_us(low)}, {latency_us(high)}]"


def _speedup(stats: xr.Dataset, cell: tuple, name: str, low: str, high: str) -> str:
    value = cell_value(stats, name, cell)
    bounds = (fixed(cell_value(stats, key, cell), digits=2) for key in (low, high))
    return f"{fixed(value, digits=2)}× [{', '.join(bounds)}]" if math.isfinite(value) else MISSING


def _path_row(stats: xr.Dataset, cell: tuple) -> list[str]:
    framework, mode, arch, batch = cell
    if cell_value(stats, "status", cell) != STATUS_OK:
        return [arch, batch, f"{framework}/{mode}", "failed", MISSING, MISSING, MISSING]
    modes = stats["mode"].values.tolist()
    medians = [cell_value(stats, V.median_s, (framework, m, arch, batch)) for m in modes]
    best = best_in_framework(framework, modes, [float(v) for v in medians])
    best_name = modes[best] if best is not None else MISSING
    return [
        arch,
        batch,
        f"{framework}/{mode}",
        _median(stats, cell),
        _speedup(stats, cell, V.speedup_vs_eager, "speedup_ci_low", "speedup_ci_high"),
        best_name,
        _speedup(
            stats, cell, "speedup_vs_best", "speedup_vs_best_ci_low", "speedup_vs_best_ci_high"
        ),
    ]


def _export_cells(stats: xr.Dataset) -> list[tuple]:
    """Every export-mode cell that was measured or failed, by architecture, batch and path."""
    return [
        (f, m, a, int(b))
        for a in stats["arch"].values
        for b in stats["batch"].values
        for f in stats["framework"].values
        for m in stats["mode"].values
        if frameworks.is_export_mode(f, m)
        and cell_value(stats, "status", (f, m, a, int(b))) in (STATUS_OK, "failed")
    ]


def latency_table(stats: xr.Dataset) -> str:
    """Each path's median beside its framework's eager and best own mode (> 1: the path is
    faster), with CIs."""
    confidence = percent(stats.attrs.get("stats_confidence", math.nan))
    header = [
        "architecture",
        "batch",
        "path",
        f"median µs [{confidence} CI]",
        f"vs {EAGER_MODE} [CI]",
        "best own mode",
        "vs best own mode [CI]",
    ]
    return markdown_table(header, [_path_row(stats, cell) for cell in _export_cells(stats)])


def onnx_exporters_table(stats: xr.Dataset) -> str:
    """The frameworks' ONNX exports in the one runtime, side by side: the same weights and
    runtime, so a difference is the exporter's. Empty where fewer than two export to ONNX."""
    exporters = [f for f in stats["framework"].values if ONNX_MODE in frameworks.MODES[str(f)]]
    exporters = [f for f in exporters if ONNX_MODE in stats["mode"].values]
    if len(exporters) < 2:
        return ""
    rows = []
    for arch in stats["arch"].values:
        for batch in stats["batch"].values:
            cells = [(f, ONNX_MODE, arch, int(batch)) for f in exporters]
            medians = [cell_value(stats, V.median_s, c) for c in cells]
            if all(not math.isfinite(v) for v in medians):
                continue
            spread = max(medians) / min(medians) if all(map(math.isfinite, medians)) else math.nan
            rows.append(
                [arch, int(batch), *(_median(stats, c) for c in cells), fixed(spread, digits=2)]
            )
    header = [
        "architecture",
        "batch",
        *(f"{f}/{ONNX_MODE} µs [CI]" for f in exporters),
        "slowest / fastest",
    ]
    return markdown_table(header, rows)


def deployment_section(context: ReportContext, part: SystemPart) -> str:
    if not part.artifacts:
        return ""
    manifests = sorted(part.artifacts, key=lambda m: (_path(m), m["arch"]))
    exporters = onnx_exporters_table(part.stats)
    return (
        "## Deployment paths\n\n"
        f"{INTRO}\n\nWhat each path exported:\n\n{support_matrix(manifests)}\n"
        "Each path's latency beside its framework's eager mode and its best own mode at the "
        "same batch (a ratio above 1: the deployed model is faster):\n\n"
        f"{latency_table(part.stats)}\n"
        + (
            "The ONNX exports of the frameworks in one runtime (ONNX Runtime, the same "
            f"weights): a difference is the exporter's.\n\n{exporters}\n"
            if exporters
            else ""
        )
        + "What each export cost (cold compile caches):\n\n"
        f"{markdown_table(COST_HEADER, [_cost_row(m) for m in manifests])}"
    )
