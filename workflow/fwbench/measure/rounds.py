"""The rounds: every variant of one (architecture, batch) measured in alternation, so that each
ratio between two variants comes from samples taken moments apart and the machine's drift
(this VM's last-level cache changes speed for seconds at a time: self_measurement/
drift_timescale.py) cancels from it.

A job measures one set and holds the host's timing lock throughout; the plan spreads a row's
sets over the sweep (fwbench.plan.sweep.Plan.order). It starts one worker process per variant
(fwbench.measure.turns: its own framework alone, with the Python its cell ran with, so its
conda env under `--sdm conda`; built as a cell's later process, from the cell's warm compile
cache), side by side on the host's core groups while nothing is timed; asks each in turn for
its warm-up on the timed cores; then runs `rounds` rounds, each variant taking one turn per
round in an order shuffled every round (seeded per set, by a seed drawn fresh per job unless
config rounds.order_seed fixes one: two sweeps replay no order), the others blocked on their
pipes. A turn is two samples back to back: `after_switch` (right after another variant: the
cost of a turn is its ratio to the next) and `warm`, the one the ratios use. Fresh sets at different
times of the sweep keep the variation between processes (layout, allocator, compile) and
between the sweep's moments in the ratios' CIs (fwbench.analysis.rounds). A variant whose
worker fails is recorded with its error; the others go on.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import xarray as xr

from fwbench.host.harness import timing_lock
from fwbench.host.threads import core_slots
from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.io.rounds_file import REPLICA, SAMPLES, variant_name, write_rounds
from fwbench.io.variables import R
from fwbench.plan.request import CellRequest
from fwbench.rng import seeded_rng


@dataclass(frozen=True)
class Variant:
    request: CellRequest
    python: str  # the interpreter its cell ran with (the cell file's `python`)
    replica: int = 0  # 1: the A/A control's second worker of the variant

    @property
    def name(self) -> str:
        request = self.request
        return variant_name(request.framework, request.mode, request.precision, self.replica)


class WorkerFailed(RuntimeError):
    pass


class Worker:
    """One variant's worker process and its pipe."""

    def __init__(self, variant: Variant, set_index: int, build_cores: list[int]):
        request = replace(variant.request, process=set_index + 1)  # a warm compile cache
        self.timeout_s = request.timeout_s
        self.process = subprocess.Popen(
            [
                variant.python,
                "-m",
                "fwbench.measure.turns",
                request.to_json(),
                request.artifact or "",
                ",".join(str(core) for core in build_cores),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def read(self) -> dict[str, Any]:
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout_s)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise WorkerFailed(
                f"worker gave no answer within bench.timeout_s={self.timeout_s} s"
                if not ready
                else f"worker ended (exit status {self.process.poll()})"
            )
        reply = json.loads(line)
        if "failed" in reply:
            self.close()
            raise WorkerFailed(reply["failed"]["error_message"])
        return reply

    def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"quit": True}) + "\n")
                self.process.stdin.flush()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()


@dataclass
class Record:
    """What one set of the rounds measured, per variant."""

    variants: list[Variant]
    set_index: int
    rounds: int

    def __post_init__(self) -> None:
        shape = (len(self.variants),)
        self.latency_s = np.full(shape + (self.rounds, len(SAMPLES)), np.nan)
        self.position = np.full(shape + (self.rounds,), -1, dtype=np.int16)
        self.calls = np.zeros(shape, dtype=np.int64)
        self.status = np.full(shape, STATUS_OK, dtype=object)
        self.error = np.full(shape, "", dtype=object)
        self.setup_s = np.full(shape, np.nan)
        self.first_call_s = np.full(shape, np.nan)
        self.round_wall_s: list[float] = []
        self.start_utc = ""

    def fail(self, v: int, error: Exception) -> None:
        self.status[v] = STATUS_FAILED
        self.error[v] = str(error)
        print(
            f"fwbench rounds: {self.variants[v].name}, set {self.set_index}: {error}",
            file=sys.stderr,
        )


def _built(record: Record) -> dict[int, Worker]:
    """The set's workers, built side by side, one on each of the host's core groups (nothing
    is timed meanwhile: the cost of a set is mostly its workers' start-up); each moves to the
    timed cores once built (fwbench.measure.turns)."""
    waiting = list(enumerate(record.variants))
    free = core_slots(record.variants[0].request.threads) or [[]]
    building: dict[int, tuple[Worker, float, list[int]]] = {}
    built: dict[int, Worker] = {}
    while waiting or building:
        while waiting and free:
            v, variant = waiting.pop(0)
            cores = free.pop(0)
            building[v] = (Worker(variant, record.set_index, cores), time.perf_counter(), cores)
        streams = {worker.process.stdout: v for v, (worker, _, _) in building.items()}
        timeout_s = max(worker.timeout_s for worker, _, _ in building.values())
        ready, _, _ = select.select(list(streams), [], [], timeout_s)
        for v in [streams[stream] for stream in ready] or list(building):
            worker, start, cores = building.pop(v)
            free.append(cores)
            try:
                if not ready:
                    worker.close()
                    raise WorkerFailed(f"no answer within bench.timeout_s={timeout_s} s")
                worker.read()  # {"built": ...} or the worker's {"failed": ...}
                built[v] = worker
                record.setup_s[v] = time.perf_counter() - start
            except WorkerFailed as error:
                record.fail(v, error)
    return dict(sorted(built.items()))


def _start(record: Record) -> dict[int, Worker]:
    """The set's workers, built and then warmed one after the other on the timed cores (each
    warm-up starts with the worker's first call, timed: nothing else runs then)."""
    workers = {}
    start_set = time.perf_counter()
    for v, worker in _built(record).items():
        start = time.perf_counter()
        try:
            warmed = worker.ask({"warm": True})
            record.calls[v], record.first_call_s[v] = warmed["calls"], warmed["first_call_s"]
            workers[v] = worker
        except WorkerFailed as error:
            record.fail(v, error)
            continue
        record.setup_s[v] += time.perf_counter() - start
    print(
        f"fwbench rounds: set {record.set_index}: {len(workers)} workers built and warmed in "
        f"{time.perf_counter() - start_set:.1f} s",
        file=sys.stderr,
    )
    return workers


def _run_set(record: Record, rng: np.random.Generator) -> None:
    workers = _start(record)
    for r in range(record.rounds):
        start = time.perf_counter()
        for place, v in enumerate(rng.permutation(sorted(workers))):
            try:
                ns = workers[v].ask({"turn": len(SAMPLES)})["ns"]
            except WorkerFailed as error:
                record.fail(v, error)
                del workers[v]
                continue
            record.latency_s[v, r] = np.asarray(ns) * 1e-9 / record.calls[v]
            record.position[v, r] = place
        record.round_wall_s.append(time.perf_counter() - start)
    for worker in workers.values():
        worker.close()


def _dataset(record: Record, seed: int) -> xr.Dataset:
    first = record.variants[0].request
    names = [variant.name for variant in record.variants]
    coords = {
        "variant": names,
        "framework": ("variant", [v.request.framework for v in record.variants]),
        "mode": ("variant", [v.request.mode for v in record.variants]),
        "precision": ("variant", [v.request.precision for v in record.variants]),
        "version": ("variant", [next(iter(v.request.versions.values())) for v in record.variants]),
        REPLICA: ("variant", [v.replica for v in record.variants]),
        "sample": list(SAMPLES),
        "set": [record.set_index],
    }
    dims3 = ("variant", "set", "round")
    one_set = ("variant", "set")  # the file's one set: each array gains that axis
    return xr.Dataset(
        {
            R.latency_s: (dims3 + ("sample",), record.latency_s[:, None]),
            R.position: (dims3, record.position[:, None]),
            R.calls_per_sample: (one_set, record.calls[:, None]),
            R.setup_s: (one_set, record.setup_s[:, None]),
            R.first_call_warm_s: (one_set, record.first_call_s[:, None]),
            R.status: (one_set, record.status.astype(str)[:, None]),
            R.error_message: (one_set, record.error.astype(str)[:, None]),
            R.start_utc: (("set",), [record.start_utc]),
        },
        coords=coords,
        attrs={
            "system": first.system,
            "arch": first.arch,
            "batch": first.batch,
            "rounds": record.rounds,
            "seed": seed,
            "threads": first.threads,
            "round_wall_s": float(np.median(record.round_wall_s))
            if record.round_wall_s
            else np.nan,
        },
    )


def run_rounds(
    variants: list[Variant], set_index: int, rounds: int, seed: int, lock: str, output: str
) -> xr.Dataset:
    """Measure the variants' set `set_index` of `rounds` rounds and write its rounds file."""
    if not variants:
        raise ValueError("the rounds need at least one variant")
    record = Record(variants, set_index, rounds)
    first = variants[0].request
    rng = seeded_rng(seed, f"rounds/{first.system}/{first.arch}/b{first.batch}/set{set_index}")
    with timing_lock(lock):
        record.start_utc = datetime.now(UTC).isoformat()
        _run_set(record, rng)
    ds = _dataset(record, seed)
    write_rounds(ds, output)
    return ds


def order_seed(text: str) -> int:
    """The set's order seed: the configured integer, or for "fresh" one drawn now."""
    if text == "fresh":
        return secrets.randbits(31)
    if not text.isdigit():
        raise ValueError(
            f'the rounds\' order seed must be "fresh" or an integer >= 0, not {text!r}'
        )
    return int(text)


def python_of(cell_attrs: dict[str, Any]) -> str:
    """The interpreter a variant's worker runs with: its cell's, or this one's for a cell
    written before cells recorded it."""
    python = cell_attrs.get("python", "")
    return python if python and os.path.exists(python) else sys.executable
