"""A system's deployment paths: which architecture each export mode could export (the support
matrix: measured, or the export's own reason), and what each export cost, from the artifact
manifests (fwbench.io.artifact_file). The exported cells' latencies are in the results tables
beside every other mode's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fwbench.io.dims import STATUS_OK
from fwbench.present.format import MISSING, fixed
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
    "recorded with the exporter's error, never left out."
)


def _path(manifest: Mapping[str, Any]) -> str:
    return f"{manifest['framework']}/{manifest['mode']}"


def _entry(manifest: Mapping[str, Any]) -> str:
    if manifest.get("status") == STATUS_OK:
        return "exported"
    message = str(manifest.get("error_message", ""))
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


def deployment_section(context: ReportContext, part: SystemPart) -> str:
    if not part.artifacts:
        return ""
    manifests = sorted(part.artifacts, key=lambda m: (_path(m), m["arch"]))
    return (
        "## Deployment paths\n\n"
        f"{INTRO}\n\nWhat each path exported:\n\n{support_matrix(manifests)}\n"
        f"What each export cost (cold compile caches):\n\n"
        f"{markdown_table(COST_HEADER, [_cost_row(m) for m in manifests])}"
    )
