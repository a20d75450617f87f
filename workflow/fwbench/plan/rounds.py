"""The rounds jobs of a plan: one per system × architecture × set, each measuring every
configured variant of the architecture in alternation in fresh processes at every rounds batch
(config `rounds`; a worker per variant serves every batch the variant runs at, a rounds file per
batch: fwbench.measure.rounds); the plan's order spreads an architecture's sets over the sweep
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

TABLE = "table"  # rounds.batches: the table batch
ALL = "all"  # rounds.architectures' default; rounds.batches': every swept batch


class RoundsPlan:
    """What a Plan knows of its rounds, from its config, systems, frameworks and versions."""

    config: Any
    systems: dict[str, Any]
    cell_precisions: Any  # fwbench.plan.precision.PrecisionPlan's

    @property
    def rounds_batches(self) -> list[int]:
        """The rounds batches: the configured ones (plan.checks refuses one not swept), "all"
        (the default) every swept batch, or "table" the swept batch the tables show
        (stats.table_batch, or the nearest)."""
        batches = self.config["rounds"]["batches"]
        if batches == ALL:
            return list(self.config["batch_sizes"])
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
            path for job in self.rounds_jobs(system, set_index) for path in self.rounds_outputs(job)
        ]

    def rounds_jobs(
        self, system: str | None = None, set_index: int | None = None
    ) -> list[dict[str, Any]]:
        """Every rounds job's wildcards (system, arch, set), set-major (of one system, of one
        set where named)."""
        return [
            dict(system=s, arch=arch, set=k)
            for k in range(self.rounds_sets)
            if set_index in (None, k)
            for s in self.systems
            if system in (None, s)
            for arch in self.rounds_architectures
        ]

    def rounds_outputs(self, wildcards: Mapping[str, Any]) -> list[str]:
        """A rounds job's files: one per rounds batch, in rounds_batches' order."""
        job = {key: wildcards[key] for key in ("system", "arch", "set")}
        return [paths.ROUNDS.format(**job, batch=batch) for batch in self.rounds_batches]

    def rounds_inputs(self) -> list[str]:
        """Every rounds job's input cells (each variant's process-0 cell at each batch)."""
        jobs = self.rounds_jobs(set_index=0)
        return [cell for job in jobs for cell in self.rounds_cells(job)]

    def _variant_wildcards(self, wildcards: Mapping[str, Any], batch: int) -> list[dict[str, Any]]:
        """Every variant's cell in the row at `batch`: each mode in each precision it runs
        there (the precision comparisons take their ratios from the rounds as the others do)."""
        system, arch = wildcards["system"], wildcards["arch"]
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

    def _workers(self, wildcards: Mapping[str, Any]) -> list[list[dict[str, Any]]]:
        """The row's variants, each the cells it has at the rounds batches (a worker serves
        them all), in the order of their first batch."""
        found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for batch in self.rounds_batches:
            for cell in self._variant_wildcards(wildcards, batch):
                found.setdefault((cell["framework"], cell["mode"], cell["precision"]), [])
                found[cell["framework"], cell["mode"], cell["precision"]].append(cell)
        return list(found.values())

    def rounds_cells(self, wildcards: Mapping[str, Any]) -> list[str]:
        """The process-0 cell file of every variant at every rounds batch (the rounds'
        inputs: each variant's worker runs with the Python its cells ran with, from their
        warm compile caches)."""
        return [paths.cell_file(cell) for cells in self._workers(wildcards) for cell in cells]

    def rounds_variants(self, wildcards: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Per variant's worker: per batch it serves ("batches"), its cell's request (JSON),
        its artifact manifest ('' but for export modes) and its cell file; last, the A/A
        control's second worker of one of them (aa_control; "replica": 1); refuses an
        architecture not measured in rounds, a set beyond rounds.sets."""
        if int(wildcards["set"]) >= self.rounds_sets:
            raise ValueError(
                f"set {wildcards['set']} of the rounds: rounds.sets is {self.rounds_sets} "
                f"(sets 0-{self.rounds_sets - 1})"
            )
        if wildcards["arch"] not in self.rounds_architectures:
            raise ValueError(
                f"architecture {wildcards['arch']!r} is not measured in rounds "
                f"(rounds.architectures: {self.rounds_architectures})"
            )
        found = [
            {
                "batches": [
                    {
                        "batch": cell["batch"],
                        "request": self.cell_request(cell).to_json(),
                        "artifact": next(iter(self.artifact_input(cell)), ""),
                        "cell": paths.cell_file(cell),
                    }
                    for cell in cells
                ]
            }
            for cells in self._workers(wildcards)
        ]
        control = self.aa_control(wildcards, len(found))
        return found + ([found[control] | {"replica": 1}] if control is not None else [])

    def aa_control(self, wildcards: Mapping[str, Any], variants: int) -> int | None:
        """Which of the row's variants its A/A control measures a second time, by a worker of
        its own (config rounds.aa_control): one drawn per architecture from the sweep's seed,
        the same in every set (a rotating choice over the rows: eager, compiled and runtime
        variants alike; at every batch the variant serves); None where the control is off or
        the row has no variant."""
        if not self.config["rounds"]["aa_control"] or variants == 0:
            return None
        row = f"{wildcards['system']}/{wildcards['arch']}"
        return int(seeded_rng(self.config["seed"], f"aa control/{row}").integers(variants))
