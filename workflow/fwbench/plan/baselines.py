"""Which earlier version of a framework an upgrade is compared against, from the cells on disk."""

from __future__ import annotations

import os

import fwbench.plan.paths as paths


def baseline_version(system: str, framework: str, current: str, chosen: str | None) -> str | None:
    """`chosen` (the config's compare.baseline), which must have cells on disk; else the most
    recently written earlier version of the system's cells; None when there is none."""
    if chosen:
        if not paths.cells_on_disk(system, framework, chosen):
            raise ValueError(
                f"compare.baseline.{framework}: no cells for version {chosen!r} "
                f"under results/cells/{system}/{framework}/"
            )
        return chosen
    earlier = [v for v in paths.versions_on_disk(system, framework) if v != current]
    if not earlier:
        return None

    def newest(version: str) -> float:
        return max(os.path.getmtime(p) for p in paths.cells_on_disk(system, framework, version))

    return max(earlier, key=newest)


def baselines(
    current: dict[tuple[str, str], str], chosen: dict[str, str]
) -> dict[tuple[str, str], str | None]:
    """(system, framework) -> the version its `current` cells are compared against; `chosen`
    is the config's compare.baseline (framework -> version)."""
    return {
        (system, fw): baseline_version(system, fw, version, chosen.get(fw))
        for (system, fw), version in current.items()
    }
