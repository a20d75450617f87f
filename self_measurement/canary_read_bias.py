"""Why the canary's read decides nothing: its factor moves with what ran before it.

    .venv/bin/python self_measurement/canary_read_bias.py [--probes 100] [--core 1]

Measures the canary's baseline per memory level (as the hardware stage does, on this host's
cache sizes), then per level `--probes` probes back to back and `--probes` probes each after a
64 MiB read-modify-write (the footprint of a large framework sample between two probes), and
prints each kernel's median factor against the baseline. The chain (registers only) stays near
1 in both; the read of a cache level moves with what ran before it (the framework's footprint,
not the machine) and from one batch of probes to the next, by more than the 1.2 that marks a
slow machine (one run on a 2-core Zen 4 VM: L1 0.98 / 1.11, L2 1.49 / 1.30, L3 1.05 / 1.18,
chain 1.00 throughout). Run it with nothing else on the machine, pinned to one core.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from fwbench.host.identity import cpu_identity
from fwbench.memory import canary
from fwbench.memory.levels import DRAM, cpu_level_capacities

EVICT_BYTES = 64 << 20


def capacities(core: int) -> dict[str, int | None]:
    """What each cache level holds for one thread on `core` (the hardware stage's rule), and
    DRAM."""
    found = cpu_level_capacities(cpu_identity()["caches"], 1, [core])
    if not found:
        raise SystemExit("no cache sizes known for this CPU")
    return found | {DRAM: None}


def factors(probe, baseline: tuple[float, float], probes: int, evict: np.ndarray | None):
    times = []
    for _ in range(probes):
        if evict is not None:
            evict += 1.0
        times.append(probe())
    times = np.array(times)
    return np.median(times[:, 0]) / baseline[0], np.median(times[:, 1]) / baseline[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.core})
    document = canary.baseline(capacities(args.core), probes=2 * args.probes)
    evict = np.ones(EVICT_BYTES // 8)
    print("level  buffer      chain: back to back, after write | read: back to back, after write")
    for work in canary.works_from_baseline(document):
        level = document["levels"][work.level]
        baseline = (level["chain_s"]["median"], level["read_s"]["median"])
        probe = canary.Canary(work).probe
        quiet = factors(probe, baseline, args.probes, None)
        evicted = factors(probe, baseline, args.probes, evict)
        print(
            f"{work.level:6s} {work.buffer_bytes >> 10:7d} KiB  {quiet[0]:.2f}  {evicted[0]:.2f}"
            f"                    | {quiet[1]:.2f}  {evicted[1]:.2f}"
        )


if __name__ == "__main__":
    main()
