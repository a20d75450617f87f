"""The speed canary: fixed work timed between a cell's samples, to tell a slow machine from a
slow process (canary.c, called through ctypes).

A probe runs a dependent add chain (the core's speed) and a read of a buffer sized to the
cell's memory level (that level's speed), each PIECES times, interleaved, and returns the two
sums. The hardware stage fixes the work (each piece about PIECE_S on a quiet machine) and
records the quiet distribution (`baseline`); every cell of the system runs exactly that work
(`CanaryWork` from the hardware file), so a probe's time over the baseline's median is the
machine's speed at that moment: 1 on a quiet machine, above 1 when it runs slow.

Cache levels read half the level's capacity (a large last-level cache: a slice of it per
piece), DRAM a slice of a buffer twice the largest cache, the next slice each piece.

The library is single threaded and built without OpenMP and without -march=native, so it
loads beside any framework's runtime and one build serves every node; builds are cached by
the source, flags, compiler and architecture (`FWBENCH_CACHE`, else ~/.cache/fwbench).
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import platform
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fwbench.memory.levels import DRAM
from fwbench.memory.native import compiler_command

SOURCE = Path(__file__).with_name("canary.c")
CFLAGS = ("-O2", "-shared", "-fPIC")
ELEMENT_BYTES = 8  # double
LANES = 8  # canary.c's accumulators: counts and offsets are multiples of this
PIECE_S = 100e-6  # each kernel's fixed work, timed on a quiet machine
PIECES = 2  # chain, read, chain, read: one probe
DRAM_BUFFER_OVER_CACHE = 2  # DRAM's buffer: this × the largest cache, walked slice by slice
MAX_BUFFER_BYTES = 1 << 30
BASELINE_PROBES = 300
QUANTILES = {"p05": 5, "median": 50, "p95": 95, "p99": 99}


def _cache_dir() -> Path:
    root = os.environ.get("FWBENCH_CACHE") or Path.home() / ".cache" / "fwbench"
    return Path(root) / "canary"


def _build_key(command: list[str]) -> str:
    version = subprocess.run([*command, "--version"], capture_output=True, text=True).stdout
    text = "\n".join([SOURCE.read_text(), " ".join(CFLAGS), version, platform.machine()])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def library() -> ctypes.CDLL:
    """The built canary library, compiled once per source, compiler and architecture."""
    command = compiler_command()
    target = _cache_dir() / f"libfwbench_canary-{_build_key(command)}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        build = [*command, *CFLAGS, "-o", str(partial), str(SOURCE)]
        completed = subprocess.run(build, capture_output=True, text=True)
        if completed.returncode != 0:
            raise RuntimeError(f"building {SOURCE.name} failed: {completed.stderr.strip()}")
        os.replace(partial, target)  # atomic: concurrent builders each rename a whole file
    handle = ctypes.CDLL(str(target))
    handle.fw_canary_chain.restype = ctypes.c_int64
    handle.fw_canary_chain.argtypes = (ctypes.c_int64,)
    handle.fw_canary_read.restype = ctypes.c_int64
    handle.fw_canary_read.argtypes = (ctypes.c_void_p, *(ctypes.c_int64,) * 3)
    return handle


@dataclass(frozen=True)
class CanaryWork:
    """One memory level's fixed canary work, as the hardware file records it."""

    level: str
    capacity_bytes: float | None  # None: DRAM (unbounded)
    buffer_bytes: int
    read_elements: int  # doubles read per piece
    read_reps: int  # times a piece reads them
    chain_iterations: int  # 16 dependent adds each

    def fits(self, working_set_bytes: float) -> bool:
        return self.capacity_bytes is None or working_set_bytes <= self.capacity_bytes


def level_for(works: list[CanaryWork], working_set_bytes: float) -> CanaryWork:
    """The smallest level the working set fits in (the roofline's rule); unknown: DRAM's."""
    if not math.isnan(working_set_bytes):
        for work in works:
            if work.fits(working_set_bytes):
                return work
    return works[-1]


class Canary:
    """A level's canary, its buffer allocated and first touched; `probe` times one probe."""

    def __init__(self, work: CanaryWork, handle: ctypes.CDLL | None = None):
        self.work = work
        self._lib = handle or library()
        self._buffer = np.ones(work.buffer_bytes // ELEMENT_BYTES)
        self._address = self._buffer.ctypes.data
        self._offset = 0
        for _ in range(3):  # untimed: pages mapped, cache-level buffers in place
            self.probe()

    def _read_ns(self) -> int:
        work = self.work
        ns = self._lib.fw_canary_read(
            self._address, self._offset, work.read_elements, work.read_reps
        )
        if ns < 0:
            raise RuntimeError(f"canary read rejected its arguments: {asdict(work)}")
        self._offset += work.read_elements  # DRAM: the next slice; caches read all of it
        if self._offset + work.read_elements > len(self._buffer):
            self._offset = 0
        return ns

    def probe(self) -> tuple[float, float]:
        """Seconds of the chain and of the read, each summed over PIECES pieces."""
        chain_ns = read_ns = 0
        for _ in range(PIECES):
            chain_ns += self._lib.fw_canary_chain(self.work.chain_iterations)
            read_ns += self._read_ns()
        return chain_ns * 1e-9, read_ns * 1e-9


def _scaled(measured_s: float, units: int) -> int:
    """Units of work that last PIECE_S at the pace `units` ran in `measured_s`."""
    return max(1, round(units * PIECE_S / max(measured_s, 1e-9)))


def _chain_iterations(handle: ctypes.CDLL) -> int:
    trial = 20_000
    handle.fw_canary_chain(trial)
    best = min(handle.fw_canary_chain(trial) for _ in range(5)) * 1e-9
    return _scaled(best, trial)


def _work(name: str, capacity: float | None, largest: float, chain: int) -> CanaryWork:
    """The level's buffer (half a cache; DRAM: a multiple of the largest cache) and the reads
    that make a piece last about PIECE_S: the whole buffer as many times as that takes, or,
    where one pass is longer (DRAM, a large last-level cache), a slice of it, the next slice
    each piece."""
    if capacity is None:
        buffer = min(MAX_BUFFER_BYTES, int(DRAM_BUFFER_OVER_CACHE * largest))
    else:
        buffer = int(capacity // 2)
    buffer = max(LANES * ELEMENT_BYTES, buffer // (LANES * ELEMENT_BYTES) * LANES * ELEMENT_BYTES)
    elements = buffer // ELEMENT_BYTES
    trial = Canary(CanaryWork(name, capacity, buffer, elements, 1, chain))
    once = min(trial.probe()[1] for _ in range(5)) / PIECES
    if once > PIECE_S or capacity is None:  # a slice sized to PIECE_S, at most half the buffer
        sliced = _scaled(once, elements) // LANES * LANES
        return CanaryWork(name, capacity, buffer, max(LANES, min(sliced, elements // 2)), 1, chain)
    return CanaryWork(name, capacity, buffer, elements, _scaled(once, 1), chain)


def _quantiles(values: np.ndarray) -> dict[str, float]:
    return {name: float(np.percentile(values, q)) for name, q in QUANTILES.items()}


def baseline(capacities: Mapping[str, int | None], probes: int = BASELINE_PROBES) -> dict:
    """Per memory level (capacities smallest first, DRAM's None): its fixed work and the
    quiet distribution of `probes` probes' chain and read times."""
    handle = library()
    chain = _chain_iterations(handle)
    largest = max((c for c in capacities.values() if c), default=32 << 20)
    levels = {}
    for name, capacity in capacities.items():
        work = _work(name, None if name == DRAM else capacity, largest, chain)
        canary = Canary(work, handle)
        start = time.perf_counter()
        times = np.array([canary.probe() for _ in range(probes)])
        levels[name] = {
            "work": asdict(work),
            "probes": probes,
            "seconds": time.perf_counter() - start,
            "chain_s": _quantiles(times[:, 0]),
            "read_s": _quantiles(times[:, 1]),
        }
    return {
        "levels": levels,
        "piece_s": PIECE_S,
        "pieces": PIECES,
        "method": (
            "canary.c, one thread: a probe is a dependent add chain and a read of the level's "
            f"buffer, {PIECES} pieces each of about {PIECE_S * 1e6:.0f} µs, interleaved; "
            "cache levels read half the level's capacity, DRAM a slice of a buffer "
            f"{DRAM_BUFFER_OVER_CACHE} × the largest cache, a new slice each piece"
        ),
    }


def works_from_baseline(document: Mapping[str, Any]) -> list[CanaryWork]:
    """The levels' fixed work in a hardware file's `canary` section, smallest level first."""
    return [CanaryWork(**entry["work"]) for entry in document["levels"].values()]
