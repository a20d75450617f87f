"""A cell's on-disk compile caches (inductor's, where the framework keeps one): process 0 starts
from an empty directory, so its first call is the cold compile a user's first run pays, and
leaves its cache (paths.COMPILE_CACHE) for the cell's later processes; each of those starts
from a private copy of it, warm, so measuring between-process variation does not pay the
cold compile again. A copy, not the directory itself: no process writes into another's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from fwbench import frameworks
from fwbench.plan.paths import COMPILE_CACHE, precision_tag
from fwbench.plan.request import CellRequest

NONE = "none: the framework keeps no on-disk compile cache"


def shared_dir(request: CellRequest) -> Path:
    version = next(iter(request.versions.values()), "unknown")
    return Path(
        COMPILE_CACHE.format(
            system=request.system,
            framework=request.framework,
            version=version,
            mode=request.mode,
            arch=request.arch,
            batch=request.batch,
            precision_tag=precision_tag(request.precision),
        )
    )


def _cold(framework: str, scratch: str) -> tuple[dict[str, str], str]:
    """Empty cache directories under `scratch` for the framework's cache variables."""
    names = frameworks.compile_cache_env(framework)
    if not names:
        return {}, NONE
    local = {name: os.path.join(scratch, "compile-cache", name.lower()) for name in names}
    return local, "cold: an empty cache directory"


def prepare(request: CellRequest, scratch: str) -> tuple[dict[str, str], str]:
    """The cache variables for the cell's process (directories under `scratch`), filled from
    process 0's cache for later processes; and what the cell records of them."""
    local, note = _cold(request.framework, scratch)
    if not local:
        return local, note
    if request.process == 0:
        return local, f"{note} (left for the cell's later processes)"
    shared = shared_dir(request)
    if not shared.is_dir():
        return local, "cold: process 0 left no cache (it had not run, or failed)"
    for name, path in local.items():
        if (shared / name.lower()).is_dir():
            shutil.copytree(shared / name.lower(), path)
    return local, f"warm: a copy of process 0's on-disk cache ({shared})"


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
    """A private temp dir for the cell (torch inductor writes to the system temp dir) and its
    compile caches (fwbench.measure.compile_cache); yields the dir and what the cell records
    of its caches; everything restored and removed after."""
    return _scratch("fwbench-cell-", lambda scratch: prepare(request, scratch))


def cold_dirs(framework: str) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """As private_dirs, for an export job: its compile caches always start empty and are
    dropped after, so its export time is a first export's."""
    return _scratch("fwbench-export-", lambda scratch: _cold(framework, scratch))


@contextlib.contextmanager
def _scratch(
    prefix: str, caches: Callable[[str], tuple[dict[str, str], str]]
) -> Iterator[tuple[str, str]]:
    scratch = tempfile.mkdtemp(prefix=prefix)
    cache_env, cache_note = caches(scratch)
    env = {"TMPDIR": scratch} | cache_env
    saved_env = {name: os.environ.get(name) for name in env}
    saved_tempdir = tempfile.tempdir
    os.environ.update(env)
    tempfile.tempdir = scratch
    try:
        yield scratch, cache_note
    finally:
        tempfile.tempdir = saved_tempdir
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(scratch, ignore_errors=True)
