"""The artifact manifest, results/artifacts/<system>/<framework>/<version>/<mode>/<arch>.json:
what one export job made (fwbench.measure.export writes it), read by the cells and the checks
that run the artifact and by the report's support matrix, all through `read_manifest`.

An export that failed writes a manifest too (status 'failed', its error's class and message):
the cells of that path then fail with the reason, and the sweep goes on. The artifact file
lies beside its manifest (`file`, its name in that directory), so the directory can be taken
away whole.

Fields: schema_version, status ('ok' | 'failed'), error_type, error_message, traceback_tail,
framework, mode, arch, system, device, versions, threads, host, cpu_model, gpu_model,
git_commit, start_utc, end_utc, file (name of the artifact beside the manifest; '' when
failed), size_bytes, how (the exporter's calls), details (its settings: what is dynamic,
compiler options, sub-times), and the export's costs in seconds: import_s (the framework),
build_s (the model from its weights), export_s (export, conversion or compilation, up to the
written artifact), and peak_rss_bytes (the export process's peak resident memory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fwbench.io.atomic import write_json
from fwbench.io.common import SCHEMA_KEY, read_json_document
from fwbench.io.dims import STATUS_OK

SCHEMA_VERSION = 1
READABLE = (1,)
WHAT = "artifact manifest"


def write_manifest(document: dict[str, Any], path: str | os.PathLike) -> None:
    write_json({SCHEMA_KEY: SCHEMA_VERSION} | document, path)


def read_manifest(path: str | os.PathLike) -> dict[str, Any]:
    return read_json_document(path, READABLE, WHAT)


def artifact_of(path: str | os.PathLike) -> str:
    """The artifact file a manifest names, beside it; raises with the export's own error
    where the export failed, and naming the file where it is gone."""
    manifest = read_manifest(path)
    if manifest.get("status") != STATUS_OK:
        raise RuntimeError(
            f"the export failed ({path}): {manifest.get('error_type')}: "
            f"{manifest.get('error_message')}"
        )
    artifact = Path(path).parent / manifest["file"]
    if not artifact.is_file():
        raise FileNotFoundError(f"{path} names {artifact}, which is not there: rerun the export")
    return str(artifact)
