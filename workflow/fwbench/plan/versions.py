"""The versions that name a framework's results: installed here, or pinned in its conda env."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from fwbench.provenance import installed_versions, pinned_versions

# {distribution: version} of a framework on a device: the first names its results.
VersionsOf = Callable[[str, str], dict[str, str]]


def env_file(envs: str | os.PathLike, name: str, device: str = "cpu") -> str:
    """The conda env file of a job: a framework's, 'hardware' or 'analysis'. Framework and
    hardware envs have a `-cuda` twin for cuda systems; analysis runs on the CPU."""
    suffix = "-cuda" if device == "cuda" and name != "analysis" else ""
    return str(Path(envs) / f"{name}{suffix}.yaml")


def versions_source(envs: str | os.PathLike | None) -> VersionsOf:
    """Where a framework's versions come from: its conda env file (the env its jobs run in
    under --sdm conda; a cuda system's differs), else this Python environment."""
    if envs is None:
        return lambda framework, device: installed_versions(framework)
    return lambda framework, device: pinned_versions(env_file(envs, framework, device), framework)
