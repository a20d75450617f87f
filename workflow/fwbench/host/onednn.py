"""Which oneDNN kernels a process ran, from oneDNN's own JIT profiling: with
ONEDNN_JIT_PROFILE=2 it appends every kernel it generates to /tmp/perf-<pid>.map (perf's map
format: address, size, name), and a JIT kernel's name says its instruction set
(`jit_avx512_core_amx_gemm_kern_t`, `brgemm_..._avx512_core_vnni`). torch's and TensorFlow's
CPU kernels are oneDNN's; a runner whose kernels are not (MKL's, MLAS's, Eigen's) leaves no
name, which says nothing about what it ran.

Framework-free: the worker that runs the kernels sets PROFILE_ENV before oneDNN loads and
reads its own map; profiling writes one line per kernel generated (at a first call), and the
pass that turns it on runs after the timed samples, in a process of its own.

Its verbose log (each primitive's execution: implementation, data types, time) goes to the
process's stdout: `stdout_captured` takes it for frameworks.kernel_precision.of_onednn_log.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

PROFILE_ENV = {"ONEDNN_JIT_PROFILE": "2"}
PERF_MAP = "/tmp/perf-{pid}.map"  # where oneDNN (and perf) put it: not configurable

# Substrings of a JIT kernel's name -> the instruction family, most specific first.
FAMILIES = (
    ("amx", "AMX"),
    ("vnni", "VNNI"),
    ("bf16", "AVX512-BF16"),
    ("fp16", "AVX512-FP16"),
    ("avx512", "AVX-512"),
    ("avx10", "AVX-512"),
    ("avx2", "AVX2"),
    ("avx", "AVX"),
    ("sse41", "SSE4.1"),
)


class JitLog:
    """This process's JIT kernels since the last `take` (the map only grows)."""

    def __init__(self, pid: int | None = None) -> None:
        self.path = Path(PERF_MAP.format(pid=pid or os.getpid()))
        self._seen = 0

    def take(self) -> list[str]:
        """The kernels generated since the last call, each name once, in order, without
        oneDNN's instance suffix (`.3`)."""
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        new, self._seen = lines[self._seen :], len(lines)
        names = (line.split(maxsplit=2)[2] for line in new if len(line.split(maxsplit=2)) == 3)
        return list(dict.fromkeys(name.rsplit(".", 1)[0] for name in names))

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


# Kernels that move or repack data rather than multiply (GEMM packing, reorders).
DATA_MOVEMENT = ("copy", "reorder", "transpose", "pack")


def families(kernels: list[str]) -> list[str]:
    """The instruction families the compute kernels' names say they use (not the kernels
    that only move data: DATA_MOVEMENT), each once, in FAMILIES order (AMX first)."""
    compute = [name for name in kernels if not any(part in name for part in DATA_MOVEMENT)]
    found = {next((family for part, family in FAMILIES if part in name), None) for name in compute}
    return [family for family in dict.fromkeys(f for _, f in FAMILIES) if family in found]


@contextlib.contextmanager
def stdout_captured() -> Iterator[list[str]]:
    """What the process writes to file descriptor 1 inside the block, C libraries' output too
    (oneDNN prints its verbose log there): the list holds it once the block ends."""
    libc = ctypes.CDLL(None)
    captured: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        sys.stdout.flush()
        libc.fflush(None)
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            yield captured
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode(errors="replace"))
