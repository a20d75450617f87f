"""The requests self-measurement scripts run: a config validated as the Snakefile validates it
(schema defaults filled in), planned by the library, one bench job's CellRequest per cell.
Imported by the scripts beside it (their directory is on sys.path when they run)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from snakemake.utils import update_config, validate

from fwbench.plan import CellRequest, make_plan

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "workflow" / "schemas"
DEFAULT_CONFIG = REPO / "config" / "config.yaml"


def validated_config(overrides: Mapping[str, Any] | None = None, base: Path | None = None) -> dict:
    """`base` (default: the default sweep's config) updated with `overrides`, validated."""
    config = yaml.safe_load(Path(base or DEFAULT_CONFIG).read_text())
    update_config(config, copy.deepcopy(dict(overrides or {})))
    validate(config, schema=str(SCHEMAS / "config.schema.yaml"))
    validate(config["train"], schema=str(SCHEMAS / "train.schema.yaml"))
    return config


def request_for(
    framework: str,
    mode: str,
    arch: str,
    batch: int,
    overrides: Mapping[str, Any] | None = None,
    system: str = "local",
) -> CellRequest:
    """The CellRequest a bench job of the default config (with `overrides`) gets for this cell
    (process 0), at the installed framework version."""
    plan = make_plan(validated_config(overrides), read_disk=False)
    wildcards = dict(system=system, framework=framework, mode=mode, arch=arch, batch=batch)
    return plan.cell_request(wildcards | {"version": plan.version(system, framework)})
