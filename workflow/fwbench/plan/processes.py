"""Which cells a sweep measures in more than one process: per (system, framework, mode,
architecture), a seeded share of its batch sizes (bench.multi_process_share). The others are
measured in process 0 alone; their CIs take their system's spread between processes
(fwbench.analysis.process_spread), which these cells measure."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fwbench.rng import seeded_rng

CellKey = tuple[str, str, str, str, int]  # system, framework, mode, arch, batch


def variant_arch(cell: Mapping[str, Any]) -> tuple[str, str, str, str]:
    return (cell["system"], cell["framework"], cell["mode"], cell["arch"])


def cell_key(cell: Mapping[str, Any]) -> CellKey:
    return (*variant_arch(cell), int(cell["batch"]))


def multi_process_cells(
    cells: Iterable[Mapping[str, Any]], batches: Sequence[int], share: float, seed: int
) -> frozenset[CellKey]:
    """Per (system, framework, mode, arch) of `cells`, the `share` of `batches` (at least
    one) that rank first in a seeded draw of each batch's own: the choice holds when the
    framework is upgraded (no version in the draw) or another architecture is added."""
    keep = math.ceil(share * len(batches))
    chosen: set[CellKey] = set()
    for key in {variant_arch(cell) for cell in cells}:
        purpose = "multi-process cells/" + "/".join(map(str, key))
        rank = sorted(batches, key=lambda b: seeded_rng(seed, f"{purpose}/{b}").random())
        chosen |= {(*key, int(b)) for b in rank[:keep]}
    return frozenset(chosen)
