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
from fwbench.plan.request import ExportRequest


class ExportPlan:
    """What a Plan knows of its exports, from its config, systems, frameworks and versions."""

    config: Any
    systems: dict[str, Any]
    versions: dict[tuple[str, str], dict[str, str]]

    @cached_property
    def exports(self) -> list[dict[str, Any]]:
        """system × framework × export mode × arch: one artifact each, for every batch."""
        return [
            dict(system=s, framework=fw, version=self.version(s, fw), mode=mode, arch=arch)
            for s in self.systems
            for fw in self.frameworks
            for mode in self.config["modes"][fw]
            if frameworks.is_export_mode(fw, mode)
            for arch in self.config["architectures"]
        ]

    def all_artifact_manifests(self) -> list[str]:
        return [paths.artifact_manifest(e) for e in self.exports]

    def artifact_manifests(self, system: str, framework: str) -> list[str]:
        """The manifests of a framework's artifacts on a system (its checks run them)."""
        return [
            paths.artifact_manifest(e)
            for e in self.exports
            if (e["system"], e["framework"]) == (system, framework)
        ]

    def artifact_input(self, wildcards: Mapping[str, Any]) -> list[str]:
        """A bench job's artifact manifest: one for an export mode, none for any other."""
        if not frameworks.is_export_mode(wildcards["framework"], wildcards["mode"]):
            return []
        return [paths.artifact_manifest({key: wildcards[key] for key in paths.ARTIFACT_KEYS})]

    def export_request(self, wildcards: Mapping[str, Any]) -> ExportRequest:
        """Everything that determines one artifact (the export job's request)."""
        fw, mode = wildcards["framework"], wildcards["mode"]
        if not frameworks.is_export_mode(fw, mode) or mode not in self.config["modes"][fw]:
            exports = [m for m in self.config["modes"][fw] if frameworks.is_export_mode(fw, m)]
            raise ValueError(
                f"{fw}/{mode} is not a configured export mode (modes.{fw} exports: {exports})"
            )
        return ExportRequest(
            **self.model_fields(wildcards), timeout_s=self.config["bench"]["timeout_s"]
        )

    def model_fields(self, wildcards: Mapping[str, Any]) -> dict[str, Any]:
        """What a cell's and an artifact's request share: the system and its placement, the
        framework, mode and model, the seed, and the versions the mode depends on."""
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
                fw, wildcards["mode"], self.versions[(system.name, fw)]
            ),
        )
