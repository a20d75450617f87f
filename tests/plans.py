"""Plans of a config outside Snakemake, as the workflow makes them (schema defaults filled in),
with made-up framework versions so that no framework needs to be installed."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from snakemake.utils import update_config, validate

from fwbench.plan import Plan, make_plan

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow" / "schemas"
FAKE_VERSIONS = {
    "torch": {"torch": "0.0-fake"},
    "jax": {"jax": "0.0-fake", "jaxlib": "0.0-fake"},
    "tensorflow": {"tensorflow-cpu": "0.0-fake", "keras": "0.0-fake"},
}


def validated(overrides: Mapping[str, Any] | None = None, base: str | None = None) -> dict:
    """`base` (a config file; none: only the schema's defaults) updated with `overrides`
    and validated as the workflow does."""
    config = yaml.safe_load(Path(base).read_text()) if base else {}
    update_config(config, copy.deepcopy(dict(overrides or {})))
    validate(config, schema=str(SCHEMAS / "config.schema.yaml"))
    validate(config["train"], schema=str(SCHEMAS / "train.schema.yaml"))
    return config


def plan_of(
    overrides: Mapping[str, Any] | None = None,
    base: str | None = None,
    versions: Mapping[str, dict[str, str]] = FAKE_VERSIONS,
    **options: Any,
) -> Plan:
    """The plan of a config, with `versions` (framework -> distributions) installed."""
    options.setdefault("read_disk", False)
    return make_plan(
        validated(overrides, base), versions_of=lambda fw, device: dict(versions[fw]), **options
    )


def export_and_run_cell(
    plan: Plan, wildcards: Mapping[str, Any], batch: int, workdir: Path
) -> Path:
    """The export job of `wildcards` (its precision's too), then its cell at `batch`
    (workdir/b<batch>.nc) on the artifact, as the workflow runs them; the manifest's path."""
    from fwbench.measure.bench import run_cell
    from fwbench.measure.export import run_export
    from fwbench.plan import paths

    export = plan.export_request(wildcards)
    export.lock = str(workdir / "lock")
    manifest = workdir / paths.artifact_manifest(dict(wildcards) | {"precision": export.precision})
    run_export(export, manifest)
    request = plan.cell_request(dict(wildcards) | {"batch": batch})
    request.lock, request.artifact = str(workdir / "lock"), str(manifest)
    run_cell(request, workdir / f"b{batch}.nc")
    return manifest
