"""Private on-disk compile caches for one job: a scratch directory, each of the framework's
cache variables (FrameworkInfo.compile_cache_env) naming a directory in it, everything put
back and removed after. fwbench.measure.compile_cache fills them for cells and exports (cold,
seeded, or warm from process 0's); a training run takes them empty (cold_training_dirs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

from fwbench import frameworks

NONE = "none: the framework keeps no on-disk compile cache"
UNSEEDED = (
    "cold: an empty cache directory, not seeded (a training job holds the timing lock and names "
    "no system): its first epoch holds the framework's probe of the host, as a first training "
    "on a fresh machine does"
)


def cache_dirs(framework: str, scratch: str) -> dict[str, str]:
    """The framework's cache variables, each naming a directory under `scratch`."""
    names = frameworks.compile_cache_env(framework)
    return {name: os.path.join(scratch, "compile-cache", name.lower()) for name in names}


def cold_training_dirs(framework: str) -> contextlib.AbstractContextManager[tuple[str, str]]:
    """A training run's caches: empty, so that every run's first epoch compiles cold (the
    framework's default directory, which persists, would serve a rerun its earlier
    compilation), and dropped after; yields the scratch dir and what the run records."""

    def caches(scratch: str) -> tuple[dict[str, str], str]:
        local = cache_dirs(framework, scratch)
        return (local, UNSEEDED) if local else ({}, NONE)

    return scratch_dirs("fwbench-train-", caches)


@contextlib.contextmanager
def scratch_dirs(
    prefix: str, caches: Callable[[str], tuple[dict[str, str], str]]
) -> Iterator[tuple[str, str]]:
    """A scratch directory and the cache variables `caches(scratch)` gives (with its note),
    set for the block; the process's temp dir stays the job's (compile_cache.private_dirs
    says why)."""
    scratch = tempfile.mkdtemp(prefix=prefix)
    env, cache_note = caches(scratch)
    saved_env = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield scratch, cache_note
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(scratch, ignore_errors=True)
