"""A system's deployment paths: which architecture each export mode could export (the support
matrix: exported, not supported by the path (fwbench.present.report.support) or the export's
own error) and what each export cost, from the artifact manifests (fwbench.io.artifact_file);
each path's latency beside its framework's eager and best own mode, and the ONNX exporters side
by side in one runtime, from stats.nc."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fwbench import frameworks
from fwbench.analysis.over_cells import ONNX_MODE
from fwbench.io.dims import EAGER_MODE, FLOAT32, STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.stats_file import StatsView
from fwbench.io.variables import V
from fwbench.present.format import MISSING, fixed, latency_us, percent, speedup_with_ci
from fwbench.present.report.context import ReportContext, SystemPart
from fwbench.present.report.support import unsupported
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


def _path(manifest: Mapping[str, Any]) -> str:
    return f"{manifest['framework']}/{manifest['mode']}"


def _entry(manifest: Mapping[str, Any]) -> str:
    """'exported', 'not supported: <why> (<the exporter's words>)' where the path does not
    support the model (support.unsupported), else 'failed: <type>: <the exporter's words>'."""
    if manifest.get("status") == STATUS_OK:
        return "exported"
    message = str(manifest.get("error_message", ""))
    error = f"{manifest.get('error_type', '')}: {message}"
    if "error: " in message:  # a converter's message opens with the source location
        message = message[message.index("error: ") + len("error: ") :]
    message = message.strip().split("\n", 1)[0]  # the reason, not the traceback under it
    if len(message) > REASON_CHARS:
        message = message[: REASON_CHARS - 1] + "…"
    precision = manifest.get("precision", FLOAT32)
    rule = unsupported(manifest["framework"], manifest["mode"], precision, error)
    if rule is not None:
        return f"not supported: {rule.reason} ({manifest.get('error_type', '')}: {message})"
    return f"failed: {manifest.get('error_type', '')}: {message}"


def support_matrix(manifests: Sequence[Mapping[str, Any]]) -> str:
    """Architecture × path: exported, not supported (why), or the export's error."""
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


def _median(view: StatsView, key: CellKey) -> str:
    low, high = (view.value(name, key) for name in (V.median_ci_low_s, V.median_ci_high_s))
    return f"{latency_us(view.value(V.median_s, key))} [{latency_us(low)}, {latency_us(high)}]"


def _speedup(view: StatsView, key: CellKey, names: tuple[str, str, str]) -> str:
    value, low, high = (view.value(name, key) for name in names)
    return speedup_with_ci(value, low, high) if math.isfinite(value) else MISSING


VS_EAGER = (V.speedup_vs_eager, V.speedup_ci_low, V.speedup_ci_high)
VS_BEST = (V.speedup_vs_best, V.speedup_vs_best_ci_low, V.speedup_vs_best_ci_high)


def _path_row(view: StatsView, key: CellKey) -> list[Any]:
    path = f"{key.framework}/{key.mode}"
    if view.value(V.status, key) != STATUS_OK:
        return [key.arch, key.batch, path, "failed", MISSING, MISSING, MISSING, MISSING]
    return [
        key.arch,
        key.batch,
        path,
        _median(view, key),
        _speedup(view, key, VS_EAGER),
        view.value(V.best_own_mode, key) or MISSING,
        _speedup(view, key, VS_BEST),
        view.value(V.deployment_verdict, key) or MISSING,
    ]


def _export_cells(view: StatsView) -> list[CellKey]:
    """Every export-mode cell that was measured or failed, by architecture, batch and path."""
    ran = np.isin(view.status(), (STATUS_OK, STATUS_FAILED))
    keys = [key for key in view.keys_where(ran) if frameworks.is_export_mode(*key.variant)]
    archs = view.archs()
    return sorted(keys, key=lambda k: (archs.index(k.arch), k.batch))


def latency_table(view: StatsView) -> str:
    """Each path's median beside its framework's eager and best own mode (> 1: the path is
    faster), with CIs, and the verdict against the best own mode."""
    confidence = percent(view.attrs.get("stats_confidence", math.nan))
    header = [
        "architecture",
        "batch",
        "path",
        f"median µs [{confidence} CI]",
        f"vs {EAGER_MODE} [CI]",
        "best own mode",
        "vs best own mode [CI]",
        "verdict",
    ]
    return markdown_table(header, [_path_row(view, key) for key in _export_cells(view)])


def onnx_exporters_table(view: StatsView) -> str:
    """The frameworks' ONNX exports in the one runtime, side by side: the same weights and
    runtime, so a difference is the exporter's. Empty where fewer than two export to ONNX."""
    exporters = [
        f
        for f in view.ds["framework"].values.tolist()
        if ONNX_MODE in frameworks.MODES[str(f)] and ONNX_MODE in view.ds["mode"].values
    ]
    if len(exporters) < 2:
        return ""
    rows = []
    for arch in view.archs():
        for batch in view.batches():
            keys = [CellKey(f, ONNX_MODE, arch, batch) for f in exporters]
            if all(not math.isfinite(view.value(V.median_s, key)) for key in keys):
                continue
            spread = view.ds[V.onnx_exporter_spread].sel(arch=arch, batch=batch).item()
            rows.append(
                [arch, batch, *(_median(view, key) for key in keys), fixed(spread, digits=2)]
            )
    header = [
        "architecture",
        "batch",
        *(f"{f}/{ONNX_MODE} µs [CI]" for f in exporters),
        "slowest / fastest",
    ]
    return markdown_table(header, rows)


def deployment_section(context: ReportContext, part: SystemPart) -> str:
    # float32's artifacts: a low precision's cells, failed exports too, are the Precision
    # section's
    fp32 = [m for m in part.artifacts if m.get("precision", FLOAT32) == FLOAT32]
    if not fp32:
        return ""
    manifests = sorted(fp32, key=lambda m: (_path(m), m["arch"]))
    exporters = onnx_exporters_table(part.view)
    return (
        "## Deployment paths\n\n"
        f"{INTRO}\n\nWhat each path exported:\n\n{support_matrix(manifests)}\n"
        "Each path's latency beside its framework's eager mode and its best own mode at the "
        "same batch (a ratio above 1: the deployed model is faster), and the verdict against "
        "the best own mode (faster, slower, equivalent or undetermined, as every comparison: "
        "the method section):\n\n"
        f"{latency_table(part.view)}\n"
        + (
            "The ONNX exports of the frameworks in one runtime (ONNX Runtime, the same "
            f"weights): a difference is the exporter's.\n\n{exporters}\n"
            if exporters
            else ""
        )
        + "What each export cost (cold compile caches):\n\n"
        f"{markdown_table(COST_HEADER, [_cost_row(m) for m in manifests])}"
    )
