"""The precisions of a plan (config `precision`): float32 for every cell, and each low precision
(bfloat16) for the modes that run it (frameworks.mode_precisions) at the configured batches and
architectures, each cell on a path of its own (plan.paths.precision_tag), so a float32 rerun
never recomputes a bfloat16 cell and the other way round (fwbench.plan.sweep.Plan inherits
these)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fwbench.plan.paths as paths
from fwbench import frameworks
from fwbench.io.dims import FLOAT32
from fwbench.precisions import QUANTIZED

TABLE, ALL = "table", "all"  # precision.batches' choices besides a list
FIRST = "first"  # precision.quantization: each mode's first quantization (or ALL of them)


def precision_of(wildcards: Mapping[str, Any]) -> str:
    """The precision a job's wildcards name by its path tag (none: float32), or a cell of the
    plan by name."""
    named = wildcards.get("precision")  # (`in` on Snakemake's wildcards tests their values)
    if named:
        return str(named)
    return paths.precision_of_tag(wildcards.get("precision_tag", "") or "")


def is_float32(item: Mapping[str, Any]) -> bool:
    return item.get("precision", FLOAT32) == FLOAT32


class PrecisionPlan:
    """What a Plan knows of its precisions, from its config."""

    config: Any
    cells: list[dict[str, Any]]  # fwbench.plan.sweep.Plan's

    @property
    def low_precisions(self) -> list[str]:
        return list(self.config["precision"]["low"])

    @property
    def precision_batches(self) -> list[int]:
        """The batches the low precisions run at: the configured ones, every swept one
        ("all"), or the table batch ("table", as the rounds choose it)."""
        chosen = self.config["precision"]["batches"]
        if chosen == ALL:
            return list(self.config["batch_sizes"])
        return [self.swept_table_batch] if chosen == TABLE else list(chosen)

    @property
    def precision_architectures(self) -> list[str]:
        chosen = self.config["precision"]["architectures"]
        return list(self.config["architectures"]) if chosen == ALL else list(chosen)

    @property
    def precision_tags(self) -> list[str]:
        """The path tags of float32, the cells' low precisions and the training runs'
        precisions (a wildcard's values)."""
        named = (FLOAT32, *self.low_precisions, *self.config["train"]["precisions"])
        return [paths.precision_tag(p) for p in dict.fromkeys(named)]

    def cell_precisions(self, framework: str, mode: str, arch: str, batch: int) -> list[str]:
        """float32, and each low precision the mode runs where the config asks for it: of its
        quantizations that precision.low names, the one its users pick first (its
        FrameworkInfo's order; precision.quantization: first) or all."""
        if batch not in self.precision_batches or arch not in self.precision_architectures:
            return [FLOAT32]
        runs = frameworks.mode_precisions(framework, mode)
        if self.config["precision"]["quantization"] == FIRST:  # the first of those `low` names
            first = frameworks.first_quantization(framework, mode, among=self.low_precisions)
            runs = tuple(p for p in runs if p not in QUANTIZED or p == first)
        return [FLOAT32, *(p for p in self.low_precisions if p in runs)]

    def low_precision_train_modes(self, framework: str) -> list[str]:
        """The training modes of `framework` that train in the low precisions too
        (train.low_precision_modes: per framework, or "all" of train.modes); raises naming a
        mode that train.modes lacks."""
        train = self.config["train"]
        trained, chosen = train["modes"][framework], train["low_precision_modes"]
        if chosen == ALL:
            return list(trained)
        named = chosen.get(framework, [])
        missing = [mode for mode in named if mode not in trained]
        if missing:
            raise ValueError(
                f"train.low_precision_modes.{framework}: {missing} not in train.modes."
                f"{framework} ({trained})"
            )
        return list(named)

    def check_precisions(self, system: str, framework: str) -> dict[str, dict[str, list[str]]]:
        """Per architecture and mode of `framework`, the low precisions its cells run in on
        `system` (the checks job holds each against the model's rounding-error bound)."""
        found: dict[str, dict[str, list[str]]] = {}
        for cell in self.cells:
            if (cell["system"], cell["framework"]) == (system, framework) and not is_float32(cell):
                modes = found.setdefault(cell["arch"], {})
                precisions = modes.setdefault(cell["mode"], [])
                if cell["precision"] not in precisions:
                    precisions.append(cell["precision"])
        return found

    def _check_precision(self, cell: Mapping[str, Any]) -> None:
        """A requested cell's precision is one the config sweeps for it; raises naming why."""
        precision = cell["precision"]
        fw, mode, arch, batch = (cell[k] for k in ("framework", "mode", "arch", "batch"))
        if precision in self.cell_precisions(fw, mode, arch, int(batch)):
            return
        if precision not in frameworks.mode_precisions(fw, mode):
            frameworks.check_precision(fw, mode, precision)
        raise ValueError(
            f"{precision} is not swept for {fw}/{mode}/{arch}/b{batch} (precision.low: "
            f"{self.low_precisions}, quantization: {self.config['precision']['quantization']}, "
            f"batches: {self.precision_batches}, architectures: {self.precision_architectures})"
        )
