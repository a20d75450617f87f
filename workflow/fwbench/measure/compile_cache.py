"""A cell's on-disk compile caches (inductor's, where the framework keeps one): process 0 starts
from an empty directory, so its first call is the cold compile a user's first run pays, and
leaves its cache (paths.COMPILE_CACHE) for the cell's later processes; each of those starts
from a private copy of it, warm, so measuring between-process variation does not pay the
cold compile again. A copy, not the directory itself: no process writes into another's.

"Empty" is empty of the model's compilation, not of the host's: where the framework makes
something of the host the first time it compiles (torch's inductor: a C++ test program per CPU
vector ISA, into the cache directory, 10 s on the 2-core VMs; its precompiled kernel header,
beside its default cache directory, 7 s; a user's machine pays both once, as its directories
persist), the framework's seed module runs once per (system, framework version), under the
host's timing lock, into paths.COMPILE_CACHE_SEED, and every cold cache starts from a copy of
it; the cell and the export record the seed and what it took (frameworks.torch.cache_seed).
The precompiled header stays where inductor keeps it, under the job's temp dir (its path is
in every kernel's cache key): on a host whose temp dir was emptied since the seed, the first
compilation makes it again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from fwbench import frameworks
from fwbench.frameworks.cache_dirs import NONE, cache_dirs, scratch_dirs
from fwbench.host.harness import timing_lock
from fwbench.plan.paths import COMPILE_CACHE, COMPILE_CACHE_SEED, precision_tag
from fwbench.plan.request import CellRequest, ExportRequest


def _version(request: CellRequest | ExportRequest) -> str:
    return next(iter(request.versions.values()), "unknown")


def shared_dir(request: CellRequest) -> Path:
    return Path(
        COMPILE_CACHE.format(
            system=request.system,
            framework=request.framework,
            version=_version(request),
            mode=request.mode,
            arch=request.arch,
            batch=request.batch,
            precision_tag=precision_tag(request.precision),
        )
    )


def seed_dir(request: CellRequest | ExportRequest) -> Path:
    return Path(
        COMPILE_CACHE_SEED.format(
            system=request.system, framework=request.framework, version=_version(request)
        )
    )


def _probe(framework: str, module: str, seed: Path) -> None:
    """Run the framework's host probe into a fresh copy of `seed`, then put it in place (a
    seed another process put there first is kept)."""
    partial = seed.with_name(f"{seed.name}.{os.getpid()}.tmp")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)  # a probe may write nothing: its record goes here still
    env = os.environ | {
        name: str(partial / name.lower()) for name in frameworks.compile_cache_env(framework)
    }
    done = subprocess.run(
        [sys.executable, "-m", module], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise RuntimeError(f"{module} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    (partial / "probe.json").write_text(done.stdout.strip().splitlines()[-1])
    try:
        os.replace(partial, seed)
    except OSError:  # another process's seed is there now
        shutil.rmtree(partial, ignore_errors=True)


def _seeded(request: CellRequest | ExportRequest, local: dict[str, str]) -> str:
    """Fill the empty caches `local` from the host probe's seed, made first under the timing
    lock where it is missing; what the job records of it ("" without a probe; the probe's error
    where it failed, the caches left empty)."""
    module = frameworks.cache_seed_module(request.framework, request.mode)
    if not module:
        return ""
    seed = seed_dir(request)
    if not seed.is_dir():
        with timing_lock(request.lock):
            try:
                if not seed.is_dir():
                    _probe(request.framework, module, seed)
            except RuntimeError as error:  # the first call probes the host itself, as before
                return f" (no seed: {error}; the first call holds the host probe)"
    for name, path in local.items():
        if (seed / name.lower()).is_dir():
            shutil.copytree(seed / name.lower(), path)
    probe = (seed / "probe.json").read_text()
    return f" but for the host probe {module} ({probe}), copied from {seed}"


def _cold(request: CellRequest | ExportRequest, scratch: str) -> tuple[dict[str, str], str]:
    """Empty cache directories under `scratch` for the framework's cache variables, seeded
    with the host probe where the framework has one."""
    local = cache_dirs(request.framework, scratch)
    if not local:
        return {}, NONE
    return local, "cold: an empty cache directory" + _seeded(request, local)


def prepare(request: CellRequest, scratch: str, merge: bool = False) -> tuple[dict[str, str], str]:
    """The cache variables for the cell's process (directories under `scratch`), seeded for
    process 0 and filled from process 0's cache for later processes (`merge`: into
    directories another batch's cache may have filled already); and what the cell records
    of them."""
    if request.process == 0:
        local, note = _cold(request, scratch)
        return local, f"{note} (left for the cell's later processes)" if local else note
    local = cache_dirs(request.framework, scratch)
    if not local:
        return local, NONE
    shared = shared_dir(request)
    if not shared.is_dir():
        return local, "cold: process 0 left no cache (it had not run, or failed)"
    for name, path in local.items():
        if (shared / name.lower()).is_dir():
            shutil.copytree(shared / name.lower(), path, dirs_exist_ok=merge)
    return local, f"warm: a copy of process 0's on-disk cache ({shared})"


def worker_dirs(
    requests: Sequence[CellRequest],
) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """As private_dirs, for a rounds worker serving several batches of one variant: one
    private cache holding a copy of each batch's process-0 cache (the caches' entries are
    keyed by what they compiled, so the batches' sit side by side)."""

    def caches(scratch: str) -> tuple[dict[str, str], str]:
        notes = [prepare(request, scratch, merge=True)[1] for request in requests]
        local = cache_dirs(requests[0].framework, scratch)
        batches = ", ".join(f"b{r.batch}: {note}" for r, note in zip(requests, notes, strict=True))
        return local, notes[0] if len(notes) == 1 else batches

    return scratch_dirs("fwbench-rounds-", caches)


def keep(request: CellRequest, scratch: str) -> None:
    """Process 0's caches into the shared directory, replacing an earlier run's whole."""
    source = Path(scratch) / "compile-cache"
    if request.process != 0 or not source.is_dir() or not any(source.rglob("*")):
        return
    shared = shared_dir(request)
    shared.parent.mkdir(parents=True, exist_ok=True)
    partial = shared.with_name(f"{shared.name}.{os.getpid()}.tmp")
    shutil.copytree(source, partial)
    if shared.exists():
        shutil.rmtree(shared)
    os.replace(partial, shared)


def private_dirs(request: CellRequest) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """A private scratch dir for the cell and its compile caches in it; yields the dir and
    what the cell records of its caches; everything restored and removed after. The process's
    temp dir stays the job's: torch inductor keeps its precompiled header beside its default
    cache directory under it, and names its path in every kernel's cache key, so a process
    with a temp dir of its own rebuilt the header (5 s) and every kernel of a warm cache."""
    return scratch_dirs("fwbench-cell-", lambda scratch: prepare(request, scratch))


def cold_dirs(request: ExportRequest) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """As private_dirs, for an export job: its compile caches always start empty (but for the
    host probe's seed) and are dropped after, so its export time is a first export's."""
    return scratch_dirs("fwbench-export-", lambda scratch: _cold(request, scratch))
