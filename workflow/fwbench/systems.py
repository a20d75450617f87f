"""The systems of a sweep: named kinds of node, each with its device, threads and placement.

A system is where a set of timing jobs runs: this machine, or on SLURM a partition (with an
optional node feature constraint, account, GPUs and GPU model). Every hardware file, cell,
check and training run belongs to one system, and its path carries the system's name, so two
systems' results sit side by side and adding or rerunning one system touches no other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

# Also in the config schema; a name is one path component.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# Snakemake resource names the SLURM executor plugin translates into sbatch options.
SLURM_RESOURCES = {
    "partition": "slurm_partition",
    "constraint": "constraint",
    "account": "slurm_account",
    "gpus": "gpu",
    "gpu_model": "gpu_model",
}


@dataclass(frozen=True)
class Slurm:
    """Where a system's jobs go on SLURM; None leaves the profile's default in place."""

    partition: str | None = None
    constraint: str | None = None
    account: str | None = None
    gpus: int | None = None
    gpu_model: str | None = None


@dataclass(frozen=True)
class System:
    name: str
    device: str
    threads: int
    slurm: Slurm | None = None

    def resources(self) -> dict[str, Any]:
        """The Snakemake resources of the system's timing jobs (empty for a local system)."""
        if self.slurm is None:
            return {}
        return {
            SLURM_RESOURCES[key]: value
            for key, value in asdict(self.slurm).items()
            if value is not None
        }

    def placement(self) -> dict[str, Any]:
        """What decides the hardware a job lands on: a change reruns the system's jobs."""
        return {"device": self.device, "threads": self.threads} | self.resources()

    def describe(self) -> str:
        where = "this machine"
        if self.slurm is not None:
            where = ", ".join(f"{key}={value}" for key, value in self.resources().items())
            where = f"SLURM ({where or 'the profile defaults'})"
        threads = f"{self.threads} thread{'' if self.threads == 1 else 's'}"
        return f"{self.device}, {threads}, on {where}"


def parse_systems(
    config: Mapping[str, Any],
    resolve_threads: Callable[[int | str], int],
    reserved: tuple[str, ...] = (),
    remote: bool = False,
) -> dict[str, System]:
    """The config's `systems` as System objects, in the config's order.

    A system's `device` and `threads` default to the top-level keys. `threads: auto` is
    resolved here, on the machine that plans the workflow, so only a local system of a local
    run may use it: a SLURM job asks for its CPUs before any node is seen (`remote`: the jobs
    go to a cluster, every system's included). `reserved` names may not be system names (the
    old layout's framework directories under results/cells).
    """
    entries = config.get("systems") or {}
    if not entries:
        raise ValueError("systems: the config names no system")
    systems = {}
    for name, entry in entries.items():
        entry = dict(entry or {})
        where = f"systems.{name}"
        if not NAME_PATTERN.fullmatch(str(name)):
            raise ValueError(f"{where}: a system name is letters, digits, '_', '.', '-'")
        if name in reserved:
            raise ValueError(
                f"{where}: {name!r} is also a framework name; results/cells/{name} would read "
                "as a cell directory of the layout before systems"
            )
        device = entry.get("device", config.get("device", "cpu"))
        threads = entry.get("threads", config.get("threads", "auto"))
        slurm = entry.get("slurm")
        if threads == "auto" and (slurm is not None or remote):
            raise ValueError(
                f"{where}.threads: a system whose jobs go to SLURM needs a number of threads "
                "(got 'auto'): its jobs ask for that many CPUs before any node is seen"
            )
        if slurm is not None:
            slurm = Slurm(**slurm)
            if device == "cuda" and slurm.gpus is None:
                slurm = Slurm(**(asdict(slurm) | {"gpus": 1}))
            if slurm.gpu_model and not slurm.gpus:
                raise ValueError(f"{where}.slurm.gpu_model={slurm.gpu_model!r} without gpus")
        try:
            resolved = resolve_threads(threads)
        except ValueError as error:
            raise ValueError(f"{where}.threads: {error}") from None
        systems[name] = System(name, device, resolved, slurm)
    return systems
