"""The export jobs of a plan: one artifact per system × framework × export mode ×
architecture, serving every batch; the one place an ExportRequest is built, and which
artifact manifest each export mode's bench job takes as input (fwbench.plan.sweep.Plan
inherits these)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import fwbench.plan.paths as paths
from fwbench import frameworks
from fwbench.plan.precision import precision_of
from fwbench.plan.request import ExportRequest


class ExportPlan:
    """What a Plan knows of its exports, from its config, systems, frameworks and versions."""

    config: Any
    systems: dict[str, Any]
    versions: dict[tuple[str, str], dict[str, str]]
    cell_precisions: Any  # fwbench.plan.precision.PrecisionPlan's

    @cached_property
    def exports(self) -> list[dict[str, Any]]:
        """system × framework × export mode × arch × precision: one artifact each, for every
        batch of its precision's cells."""
        return [
            dict(
                system=s,
                framework=fw,
                version=self.version(s, fw),
                mode=mode,
                arch=arch,
                precision=precision,
            )
            for s in self.systems
            for fw in self.frameworks
            for mode in self.config["modes"][fw]
            if frameworks.is_export_mode(fw, mode)
            for arch in self.config["architectures"]
            for precision in self._export_precisions(fw, mode, arch)
        ]

    def _export_precisions(self, framework: str, mode: str, arch: str) -> list[str]:
        """The precisions of an export mode's cells of `arch` at any batch."""
        found = (self.cell_precisions(framework, mode, arch, b) for b in self.config["batch_sizes"])
        return list(dict.fromkeys(p for precisions in found for p in precisions))

    def all_artifact_manifests(self) -> list[str]:
        return [paths.artifact_manifest(e) for e in self.exports]

    def artifact_manifests(self, system: str, framework: str) -> list[str]:
        """The manifests of a framework's artifacts on a system, every precision's (its
        checks run them against the float64 reference)."""
        return [
            paths.artifact_manifest(e)
            for e in self.exports
            if (e["system"], e["framework"]) == (system, framework)
        ]

    def artifact_input(self, wildcards: Mapping[str, Any]) -> list[str]:
        """A bench job's artifact manifest: one for an export mode, none for any other."""
        if not frameworks.is_export_mode(wildcards["framework"], wildcards["mode"]):
            return []
        export = {key: wildcards[key] for key in paths.ARTIFACT_KEYS if key != "precision"}
        return [paths.artifact_manifest(export | {"precision": precision_of(wildcards)})]

    def export_request(self, wildcards: Mapping[str, Any]) -> ExportRequest:
        """Everything that determines one artifact (the export job's request)."""
        fw, mode = wildcards["framework"], wildcards["mode"]
        if not frameworks.is_export_mode(fw, mode) or mode not in self.config["modes"][fw]:
            exports = [m for m in self.config["modes"][fw] if frameworks.is_export_mode(fw, m)]
            raise ValueError(
                f"{fw}/{mode} is not a configured export mode (modes.{fw} exports: {exports})"
            )
        precision = precision_of(wildcards)
        if precision not in self._export_precisions(fw, mode, wildcards["arch"]):
            raise ValueError(
                f"{fw}/{mode}/{wildcards['arch']}: no {precision} cells are swept, so no "
                f"{precision} artifact (precision.low: {self.config['precision']['low']})"
            )
        return ExportRequest(
            **self.model_fields(wildcards),
            timeout_s=self.config["bench"]["timeout_s"],
            precision=precision,
        )

    def model_fields(self, wildcards: Mapping[str, Any]) -> dict[str, Any]:
        """What a cell's and an artifact's request share: the system and its placement, the
        framework, mode and model, the seed, and the versions the mode in its precision
        depends on (frameworks.mode_versions)."""
        fw, arch = wildcards["framework"], wildcards["arch"]
        system = self.systems[wildcards["system"]]
        return dict(
            system=system.name,
            placement=system.placement(),
            framework=fw,
            mode=wildcards["mode"],
            arch=arch,
            dims=self.config["dims"][arch],
            seed=self.config["seed"],
            device=system.device,
            threads=system.threads,
            versions=frameworks.mode_versions(
                fw, wildcards["mode"], self.versions[(system.name, fw)], precision_of(wildcards)
            ),
        )
