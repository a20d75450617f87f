"""Thread settings, applied identically to every framework before it is imported."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SYSFS_CPU = Path("/sys/devices/system/cpu")
# Read by OpenMP, MKL, OpenBLAS and numexpr when they load: set before any framework import.
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def affinity_cores() -> int:
    """Cores this process may run on (the affinity mask), not the machine's core count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _physical_core(cpu: int, root: Path) -> tuple[int, ...]:
    """(package, core) of a logical CPU; the CPU itself where sysfs does not say."""
    topology = root / f"cpu{cpu}" / "topology"
    try:
        return (
            int((topology / "physical_package_id").read_text()),
            int((topology / "core_id").read_text()),
        )
    except (OSError, ValueError):
        return (-1, cpu)


def physical_core_order(cpus: Iterable[int], root: Path = SYSFS_CPU) -> list[int]:
    """`cpus` with one logical CPU per physical core first (the lowest-numbered sibling of
    each), then the SMT siblings: pinning the first n puts n threads on n physical cores."""
    first, siblings, seen = [], [], set()
    for cpu in sorted(cpus):
        core = _physical_core(cpu, root)
        (siblings if core in seen else first).append(cpu)
        seen.add(core)
    return first + siblings


def physical_cores(root: Path = SYSFS_CPU) -> int:
    """Physical cores in this process's affinity mask."""
    if not hasattr(os, "sched_getaffinity"):
        return os.cpu_count() or 1
    return len({_physical_core(cpu, root) for cpu in os.sched_getaffinity(0)})


# Cores `threads: auto` leaves to the OS and the workflow's own processes (Snakemake, the
# job's watchdog). A framework's parallel op runs at the pace of its slowest thread: on a
# 2-core machine, timing on both cores gave a CV of 5-17% where one core gave 1-3%
# (docs/architecture.md, "Measuring right").
RESERVED_CORES = 1


def resolve_threads(threads: int | str) -> int:
    """`auto`: one thread per physical core of the affinity mask but RESERVED_CORES, at least
    one (SMT siblings share a core's FMA units and caches, so a second thread on one core
    adds noise, not throughput)."""
    if threads == "auto":
        return max(1, physical_cores() - RESERVED_CORES)
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or 'auto', got {threads!r}")
    return threads


def apply_thread_env(threads: int) -> dict[str, str]:
    """Set the environment every framework reads at import; overrides what Snakemake set.

    XLA's CPU client sizes its pool from the affinity mask, and TensorFlow/torch take their
    intra/inter-op counts from their own APIs: the adapters set those from the same number.
    Returns the settings, for the cell's provenance.
    """
    settings = {name: str(threads) for name in _THREAD_ENV}
    xla_flags = [flag for flag in os.environ.get("XLA_FLAGS", "").split() if "eigen" not in flag]
    xla_flags.append(f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}")
    settings["XLA_FLAGS"] = " ".join(xla_flags)
    settings["TF_NUM_INTRAOP_THREADS"] = str(threads)
    settings["TF_NUM_INTEROP_THREADS"] = "1"
    os.environ.update(settings)
    return settings


def pin_to_cores(threads: int) -> list[int]:
    """Restrict this process to `threads` CPUs of its affinity mask, one per physical core
    while there are cores left, so that no framework's pool (XLA's included, which has no
    thread-count flag) can spread beyond them."""
    if not hasattr(os, "sched_setaffinity"):
        return []
    cores = physical_core_order(os.sched_getaffinity(0))
    if threads > len(cores):
        raise ValueError(f"threads={threads} but only {len(cores)} cores are in the affinity mask")
    chosen = sorted(cores[:threads])
    os.sched_setaffinity(0, chosen)
    return chosen


def core_slots(threads: int) -> list[list[int]]:
    """This process's affinity mask cut into groups of `threads` CPUs, in the order
    pin_to_cores takes them: the first group is the one a pinned process times on."""
    cores = physical_core_order(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return [sorted(cores[i : i + threads]) for i in range(0, len(cores) - threads + 1, threads)]


def move_to_cores(cores: list[int]) -> list[int]:
    """Move every thread of this process to `cores` and return the thread ids that are not on
    exactly those cores afterwards (none, unless a thread refused). On Linux an affinity is a
    thread's own: a pool its framework started before the move would stay where it was."""
    stray = []
    for tid in (int(t) for t in os.listdir("/proc/self/task")):
        try:
            os.sched_setaffinity(tid, cores)
            if sorted(os.sched_getaffinity(tid)) != sorted(cores):
                stray.append(tid)
        except ProcessLookupError:  # the thread ended meanwhile
            continue
    return stray


def setup_threads(threads: int | str) -> dict[str, object]:
    """Resolve, pin and export the thread settings; the returned dict goes into provenance."""
    count = resolve_threads(threads)
    env = apply_thread_env(count)
    return {"threads": count, "cores": pin_to_cores(count), "env": env}
