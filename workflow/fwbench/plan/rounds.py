"""The rounds jobs of a plan: one per system × architecture × rounds batch (config `rounds`) ×
set, each measuring every configured variant of that row in alternation in fresh processes
(fwbench.measure.rounds); the plan's order spreads a row's sets over the sweep
(fwbench.plan.sweep.Plan.order).
Each variant's worker is built from its cell's own request (Plan.cell_request), so the rounds
rerun exactly when a variant's cell does, an upgrade of one framework included
(fwbench.plan.sweep.Plan inherits these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fwbench.plan.paths as paths
from fwbench.io.dims import nearest_batch
from fwbench.rng import seeded_rng

TABLE = "table"  # rounds.batches' default: the table batch
ALL = "all"  # rounds.architectures' default


class RoundsPlan:
    """What a Plan knows of its rounds, from its config, systems, frameworks and versions."""

    config: Any
    systems: dict[str, Any]
    cell_precisions: Any  # fwbench.plan.precision.PrecisionPlan's

    @property
    def rounds_batches(self) -> list[int]:
        """The rounds batches: the configured ones (plan.checks refuses one not swept), or by
        default ("table") the swept batch the tables show (stats.table_batch, or the nearest)."""
        batches = self.config["rounds"]["batches"]
        return [self.swept_table_batch] if batches == TABLE else list(batches)

    @property
    def swept_table_batch(self) -> int:
        """The swept batch the tables show: stats.table_batch, or the swept batch nearest it."""
        return nearest_batch(self.config["batch_sizes"], self.config["stats"]["table_batch"])

    @property
    def rounds_architectures(self) -> list[str]:
        archs = self.config["rounds"]["architectures"]
        return list(self.config["architectures"]) if archs == ALL else list(archs)

    @property
    def rounds_sets(self) -> int:
        return int(self.config["rounds"]["sets"])

    def rounds_files(self, system: str | None = None, set_index: int | None = None) -> list[str]:
        """Every set's rounds file (of one system, of one set where named)."""
        return [
            paths.ROUNDS.format(**row, set=k)
            for k in range(self.rounds_sets)
            if set_index in (None, k)
            for row in self._rounds_rows()
            if system in (None, row["system"])
        ]

    def _rounds_rows(self) -> list[dict[str, Any]]:
        """Every (system, arch, batch) the rounds measure."""
        return [
            dict(system=s, arch=arch, batch=batch)
            for s in self.systems
            for arch in self.rounds_architectures
            for batch in self.rounds_batches
        ]

    def rounds_inputs(self) -> list[str]:
        """Every rounds row's input cells (each variant's process-0 cell)."""
        return [cell for row in self._rounds_rows() for cell in self.rounds_cells(row)]

    def _variant_wildcards(self, wildcards: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every variant's cell in the row: each mode in each precision it runs there (the
        precision comparisons take their ratios from the rounds as the others do)."""
        system, arch, batch = wildcards["system"], wildcards["arch"], int(wildcards["batch"])
        return [
            dict(
                system=system,
                framework=fw,
                version=self.version(system, fw),
                mode=mode,
                arch=arch,
                batch=batch,
                precision=precision,
            )
            for fw in self.frameworks
            for mode in self.config["modes"][fw]
            for precision in self.cell_precisions(fw, mode, arch, batch)
        ]

    def rounds_cells(self, wildcards: Mapping[str, Any]) -> list[str]:
        """The process-0 cell file of every variant (the rounds' inputs: each variant's
        worker runs with the Python its cell ran with, from its warm compile cache)."""
        return [paths.cell_file(cell) for cell in self._variant_wildcards(wildcards)]

    def rounds_variants(self, wildcards: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Per variant: its cell's request (JSON), its artifact manifest ('' but for export
        modes) and its cell file; last, the A/A control's second worker of one of them
        (aa_control; "replica": 1); refuses a batch that is no rounds batch, a set beyond
        rounds.sets."""
        if int(wildcards["set"]) >= self.rounds_sets:
            raise ValueError(
                f"set {wildcards['set']} of the rounds: rounds.sets is {self.rounds_sets} "
                f"(sets 0-{self.rounds_sets - 1})"
            )
        if int(wildcards["batch"]) not in self.rounds_batches:
            raise ValueError(
                f"batch {wildcards['batch']} is not a rounds batch (rounds.batches: "
                f"{self.rounds_batches})"
            )
        if wildcards["arch"] not in self.rounds_architectures:
            raise ValueError(
                f"architecture {wildcards['arch']!r} is not measured in rounds "
                f"(rounds.architectures: {self.rounds_architectures})"
            )
        found = [
            {
                "request": self.cell_request(cell).to_json(),
                "artifact": next(iter(self.artifact_input(cell)), ""),
                "cell": paths.cell_file(cell),
            }
            for cell in self._variant_wildcards(wildcards)
        ]
        control = self.aa_control(wildcards, len(found))
        return found + ([found[control] | {"replica": 1}] if control is not None else [])

    def aa_control(self, wildcards: Mapping[str, Any], variants: int) -> int | None:
        """Which of the row's variants its A/A control measures a second time, by a worker of
        its own (config rounds.aa_control): one drawn per row from the sweep's seed, the same
        in every set of the row (a rotating choice over the rows: eager, compiled and runtime
        variants alike); None where the control is off or the row has no variant."""
        if not self.config["rounds"]["aa_control"] or variants == 0:
            return None
        row = f"{wildcards['system']}/{wildcards['arch']}/b{int(wildcards['batch'])}"
        return int(seeded_rng(self.config["seed"], f"aa control/{row}").integers(variants))
