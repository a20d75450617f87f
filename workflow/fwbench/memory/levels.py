"""The memory hierarchy as the roofline sees it: level capacities for the threads a cell uses,
the working-set sizes a bandwidth sweep visits, and one plateau bandwidth per level read off
the swept curve. Framework-free and measurement-free (the sweep itself: fwbench.memory.native
on CPU, the torch hardware module on CUDA).

Capacities: see CAPACITY_RULE.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

SWEEP_KERNELS = ("read", "copy", "triad")
ARRAYS_PER_KERNEL = {"read": 1, "copy": 2, "triad": 3}
DRAM = "DRAM"
CAPACITY_RULE = (
    "a level holds the sum of its cache instances that the pinned cores reach (sysfs "
    "shared_cpu_list); without sysfs, levels below the last are private to a core (n threads "
    "hold n instances) and the last is shared; a level no larger than the one below it adds "
    "nothing the sweep could see and is left out"
)
CACHE_TYPES = ("Data", "Unified")
# A plateau is read well inside a level: from PLATEAU_LOW × the level below's capacity to
# PLATEAU_HIGH × its own (the edges mix two levels); DRAM from DRAM_FROM × the last level up.
PLATEAU_LOW = 2.0
PLATEAU_HIGH = 0.5
DRAM_FROM = 4.0


def cpu_list(text: str) -> set[int]:
    """sysfs CPU lists: '0-3,8,10-11' → {0, 1, 2, 3, 8, 10, 11}."""
    cpus: set[int] = set()
    for part in text.split(","):
        if part.strip():
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def _reached(caches: dict[str, Any], cores: list[int]) -> dict[str, int]:
    """Per level, the bytes of the instances whose CPUs include a pinned core."""
    capacities: dict[str, int] = {}
    for instance in caches["instances"]:
        if instance["type"] in CACHE_TYPES and cpu_list(instance["shared_cpu_list"]) & set(cores):
            name = f"L{instance['level']}"
            capacities[name] = capacities.get(name, 0) + int(instance["size_bytes"])
    return dict(sorted(capacities.items()))


def _by_rule(caches: dict[str, Any], threads: int) -> dict[str, int]:
    llc_level = caches.get("llc_level")
    capacities = {}
    for level in (1, 2, 3):
        per_instance = caches.get("l1d_bytes" if level == 1 else f"l{level}_bytes")
        if not per_instance:
            continue
        if level == llc_level:
            capacities[f"L{level}"] = int(caches.get("llc_total_bytes") or per_instance)
        else:
            capacities[f"L{level}"] = int(per_instance) * threads
    return capacities


def cpu_level_capacities(
    caches: dict[str, Any], threads: int, cores: list[int] | None = None
) -> dict[str, int]:
    """Bytes each cache level holds for `threads` threads pinned to `cores`, smallest level
    first (L1 is the data cache); see CAPACITY_RULE. Levels the identity does not know are
    left out."""
    if threads < 1:
        raise ValueError(f"threads must be ≥ 1, got {threads}")
    if caches.get("instances") and cores:
        capacities = _reached(caches, cores)
    else:
        capacities = _by_rule(caches, threads)
    growing, largest = {}, 0
    for name, capacity in capacities.items():
        if capacity > largest:
            growing[name], largest = capacity, capacity
    return growing


def sweep_sizes(min_bytes: float, max_bytes: float, points_per_octave: int) -> list[int]:
    """Total working-set sizes from `min_bytes` to `max_bytes`, geometric."""
    if not 0 < min_bytes < max_bytes:
        raise ValueError(f"sweep needs 0 < min < max bytes, got {min_bytes}, {max_bytes}")
    if points_per_octave < 1:
        raise ValueError(f"points_per_octave must be ≥ 1, got {points_per_octave}")
    octaves = math.log2(max_bytes / min_bytes)
    count = int(math.floor(octaves * points_per_octave + 1e-9)) + 1
    return [int(round(min_bytes * 2 ** (i / points_per_octave))) for i in range(count)]


def plateau_ranges(capacities: dict[str, int]) -> dict[str, tuple[float, float]]:
    """The working-set range each level's plateau is read from; DRAM's has no upper end."""
    ranges, below = {}, 0.0
    for name, capacity in capacities.items():
        low, high = PLATEAU_LOW * below, PLATEAU_HIGH * capacity
        if low >= high:  # under 4× the level below: the whole span between the two
            low, high = below, capacity
        ranges[name] = (low, high)
        below = capacity
    ranges[DRAM] = (DRAM_FROM * below, math.inf) if below else (0.0, math.inf)
    return ranges


def plateaus(curve: list[dict[str, Any]], capacities: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per level: each kernel's median bandwidth over the curve's points in the level's range,
    the range actually covered, and the level's roof (the fastest kernel: the highest plausible
    bandwidth there). A level with no point in its range gets a reason instead of numbers.

    `curve` holds points {"kernel", "working_set_bytes", "bandwidth_Bps"}."""
    result = {}
    for name, (low, high) in plateau_ranges(capacities).items():
        entry: dict[str, Any] = {
            "capacity_bytes": capacities.get(name),
            "range_bytes": [low, None if math.isinf(high) else high],
            "kernels": {},
        }
        for kernel in SWEEP_KERNELS:
            points = [
                p for p in curve if p["kernel"] == kernel and low <= p["working_set_bytes"] <= high
            ]
            if points:
                sizes = [p["working_set_bytes"] for p in points]
                entry["kernels"][kernel] = {
                    "bandwidth_Bps": float(np.median([p["bandwidth_Bps"] for p in points])),
                    "points": len(points),
                    "working_set_bytes": [min(sizes), max(sizes)],
                }
        if entry["kernels"]:
            roof = max(entry["kernels"], key=lambda k: entry["kernels"][k]["bandwidth_Bps"])
            entry["roof_kernel"] = roof
            entry["bandwidth_Bps"] = entry["kernels"][roof]["bandwidth_Bps"]
        else:
            entry["roof_kernel"] = None
            entry["bandwidth_Bps"] = None
            entry["problem"] = f"no sweep point between {low:.3g} and {high:.3g} bytes"
        result[name] = entry
    return result
