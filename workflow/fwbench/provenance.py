"""Who, where and with what a measurement was made; and the versions that name results."""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

from fwbench.frameworks import DISTRIBUTIONS
from fwbench.host.identity import nvidia_smi_identity


def host() -> str:
    return socket.gethostname().split(".")[0] or "unknown-host"


def cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU's model name as the kernel reports it (fast: no CPUID probing)."""
    try:
        for line in Path(cpuinfo).read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def node_identity(device: str) -> dict[str, str]:
    """What a measurement ran on, to match against its system's hardware file: the node's
    name (nodes of one partition differ in it), its CPU and, on cuda, GPU model, and under
    SLURM the job, partition and GPUs the job was given ('' outside SLURM)."""
    return {
        "host": host(),
        "cpu_model": cpu_model(),
        "gpu_model": (nvidia_smi_identity() or {}).get("name", "") if device == "cuda" else "",
        "slurm_job_id": os.environ.get("SLURM_JOB_ID", ""),
        "slurm_partition": os.environ.get("SLURM_JOB_PARTITION", ""),
        "slurm_gpus": os.environ.get("SLURM_GPUS_ON_NODE", ""),
    }


def utc(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="microseconds")


def config_hash(settings: Any) -> str:
    """A short stable hash of the settings that determine a result."""
    text = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def git_commit(where: str | Path = ".") -> str:
    """HEAD's commit, with '-dirty' when tracked files differ; 'unknown' outside a checkout."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def _installed(names: tuple[str, ...]) -> tuple[str, str] | None:
    for name in names:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_versions(framework: str) -> dict[str, str]:
    """{distribution: version} for a framework in this Python environment; the first entry is
    the version that names its results. Raises naming the framework when it is not installed."""
    main, extras = DISTRIBUTIONS[framework]
    found = _installed(main)
    if found is None:
        raise RuntimeError(
            f"framework {framework!r} is configured but not installed here "
            f"(none of {', '.join(main)}); install it or drop it from `frameworks`"
        )
    versions = dict([found])
    for name in extras:
        extra = _installed((name,))
        if extra:
            versions[extra[0]] = extra[1]
    return versions


def runtime(extra_distributions: tuple[str, ...] = ("numpy",)) -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in extra_distributions:
        found = _installed((name,))
        if found:
            versions[name] = found[1]
    return versions


def pinned_versions(env_file: str | Path, framework: str) -> dict[str, str]:
    """{distribution: version} pinned in a conda env file (conda `name=version` or pip
    `name==version` entries), in the same order as installed_versions."""
    import yaml

    spec = yaml.safe_load(Path(env_file).read_text())
    pins: dict[str, str] = {}
    for entry in spec.get("dependencies", []):
        for line in entry.get("pip", []) if isinstance(entry, dict) else [entry]:
            name, sep, version = str(line).split(";")[0].replace("==", "=").partition("=")
            if sep:
                pins[name.split("[")[0].strip().lower()] = version.strip()
    main, extras = DISTRIBUTIONS[framework]
    versions = {name: pins[name] for name in main if name in pins}
    if not versions:
        raise RuntimeError(f"{env_file} pins none of {', '.join(main)} for {framework!r}")
    return dict(list(versions.items())[:1]) | {n: pins[n] for n in extras if n in pins}
