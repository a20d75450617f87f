"""The rounds: every variant of one (architecture, batch) measured in alternation, so that each
ratio between two variants comes from samples taken moments apart and the machine's drift
(this VM's last-level cache changes speed for seconds at a time: self_measurement/
drift_timescale.py) cancels from it.

A job measures one set of one architecture at every rounds batch and holds the host's timing
lock throughout; the plan spreads a row's sets over the sweep (fwbench.plan.sweep.Plan.order).
It starts one worker process per variant (fwbench.measure.turns: its own framework alone, with
the Python its cells ran with, so its conda env under `--sdm conda`; built as a cell's later
process at each batch it serves, from the cells' warm compile caches, so a framework's import
and start-up are paid once per set, not once per batch), side by side on the host's core groups
while nothing is timed. Then, batch by batch in an order shuffled per set, it asks each worker
serving the batch in turn for its warm-up there on the timed cores, and runs `rounds` rounds,
each variant taking one turn per round in an order shuffled every round (seeded per set and
batch, by a seed drawn fresh per job unless config rounds.order_seed fixes one: two sweeps
replay no order), the others blocked on their pipes. A turn is two samples back to back:
`after_switch` (right after another variant: the cost of a turn is its ratio to the next) and
`warm`, the one the ratios use. Fresh sets at different times of the sweep keep the variation
between processes (layout, allocator, compile) and between the sweep's moments in the ratios'
CIs (fwbench.analysis.rounds). Each batch's rounds go to a rounds file of their own. A variant
whose worker fails is recorded with its error (at one batch where only that batch failed); the
others go on.
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
    """One variant's worker: its cell's request at each batch it serves (alike but for the
    batch), the Python its cells ran with, and whether it is the A/A control's second one."""

    requests: tuple[CellRequest, ...]
    python: str  # the interpreter its cells ran with (the cell file's `python`)
    replica: int = 0  # 1: the A/A control's second worker of the variant

    @property
    def name(self) -> str:
        request = self.requests[0]
        return variant_name(request.framework, request.mode, request.precision, self.replica)

    @property
    def batches(self) -> list[int]:
        return [request.batch for request in self.requests]

    def at(self, batch: int) -> CellRequest:
        return next(request for request in self.requests if request.batch == batch)


class WorkerFailed(RuntimeError):
    pass


class Worker:
    """One variant's worker process and its pipe."""

    def __init__(self, variant: Variant, set_index: int, build_cores: list[int]):
        requests = [replace(r, process=set_index + 1) for r in variant.requests]  # warm caches
        self.timeout_s = max(request.timeout_s for request in requests)
        self.process = subprocess.Popen(
            [
                variant.python,
                "-m",
                "fwbench.measure.turns",
                json.dumps([request.to_json() for request in requests]),
                requests[0].artifact or "",
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
    """What one set of the rounds measured at one batch, per variant serving it (`members`:
    their indices among the set's workers)."""

    variants: list[Variant]
    members: list[int]
    set_index: int
    rounds: int
    batch: int

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

    def fail(self, v: int, error: Exception | str) -> None:
        """Record the set's worker `v` failed at this batch (once: its first error)."""
        i = self.members.index(v)
        if self.status[i] == STATUS_FAILED:
            return
        self.status[i] = STATUS_FAILED
        self.error[i] = str(error)
        print(
            f"fwbench rounds: {self.variants[i].name}, b{self.batch}, set {self.set_index}: "
            f"{error}",
            file=sys.stderr,
        )


@dataclass
class SetRun:
    """One set: its workers (every variant of the row, each serving its batches) and a Record
    per batch."""

    variants: list[Variant]
    set_index: int
    records: dict[int, Record]
    workers: dict[int, Worker]
    build_s: dict[int, float]

    @classmethod
    def of(cls, variants: list[Variant], set_index: int, rounds: int, batches: list[int]):
        records = {}
        for batch in batches:
            members = [v for v, variant in enumerate(variants) if batch in variant.batches]
            records[batch] = Record(
                [variants[v] for v in members], members, set_index, rounds, batch
            )
        return cls(variants, set_index, records, {}, {})

    def fail(self, v: int, error: Exception | str, batches: list[int] | None = None) -> None:
        """Worker `v` failed at `batches` (every batch it serves by default)."""
        for batch in self.variants[v].batches if batches is None else batches:
            if batch in self.records:
                self.records[batch].fail(v, error)

    def drop(self, v: int, error: Exception, batch: int) -> None:
        """Worker `v` ended at `batch`: failed there and at every batch it had yet to serve."""
        del self.workers[v]
        self.fail(v, error, [batch])
        self.fail(v, f"the worker ended at batch {batch}: {error}")


def _built(run: SetRun) -> None:
    """The set's workers, built side by side, one on each of the host's core groups (nothing
    is timed meanwhile: the cost of a set is mostly its workers' start-up); each moves to the
    timed cores once built (fwbench.measure.turns). A batch whose build failed is recorded
    failed; the worker serves the others."""
    waiting = list(enumerate(run.variants))
    free = core_slots(run.variants[0].requests[0].threads) or [[]]
    building: dict[int, tuple[Worker, float, list[int]]] = {}
    while waiting or building:
        while waiting and free:
            v, variant = waiting.pop(0)
            cores = free.pop(0)
            building[v] = (Worker(variant, run.set_index, cores), time.perf_counter(), cores)
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
                built = worker.read()["built"]  # or the worker's {"failed": ...}
                run.workers[v] = worker
                run.build_s[v] = time.perf_counter() - start
                for batch, error in built.get("failed_batches", {}).items():
                    run.fail(v, error, [int(batch)])
            except WorkerFailed as error:
                run.fail(v, error)
    run.workers = dict(sorted(run.workers.items()))


def _warm(run: SetRun, batch: int) -> list[int]:
    """The workers serving `batch` (built there), warmed one after the other on the timed
    cores (each warm-up starts with the worker's first call at the batch, timed: nothing
    else runs then); the ones warmed."""
    record = run.records[batch]
    warmed = []
    for i, v in enumerate(record.members):
        if v not in run.workers or record.status[i] == STATUS_FAILED:
            continue
        start = time.perf_counter()
        try:
            reply = run.workers[v].ask({"warm": batch})
        except WorkerFailed as error:
            run.drop(v, error, batch)
            continue
        record.calls[i], record.first_call_s[i] = reply["calls"], reply["first_call_s"]
        record.setup_s[i] = run.build_s[v] + time.perf_counter() - start
        warmed.append(v)
    return warmed


def _run_batch(run: SetRun, batch: int, rng: np.random.Generator) -> None:
    """The set's rounds at one batch: every warmed worker serving it, one turn each per round
    in an order shuffled every round."""
    record = run.records[batch]
    record.start_utc = datetime.now(UTC).isoformat()
    start_batch = time.perf_counter()
    turning = _warm(run, batch)
    print(
        f"fwbench rounds: set {run.set_index}, b{batch}: {len(turning)} workers warmed in "
        f"{time.perf_counter() - start_batch:.1f} s",
        file=sys.stderr,
    )
    index = {v: record.members.index(v) for v in turning}  # worked out before the turns
    for r in range(record.rounds):
        start = time.perf_counter()
        for place, v in enumerate(rng.permutation(turning)):
            if v not in run.workers:
                continue
            i = index[v]
            try:
                ns = run.workers[v].ask({"turn": len(SAMPLES), "batch": batch})["ns"]
            except WorkerFailed as error:
                run.drop(v, error, batch)
                continue
            record.latency_s[i, r] = np.asarray(ns) * 1e-9 / record.calls[i]
            record.position[i, r] = place
        record.round_wall_s.append(time.perf_counter() - start)


def _dataset(record: Record, seed: int) -> xr.Dataset:
    first = record.variants[0].at(record.batch)
    names = [variant.name for variant in record.variants]
    requests = [variant.at(record.batch) for variant in record.variants]
    coords = {
        "variant": names,
        "framework": ("variant", [r.framework for r in requests]),
        "mode": ("variant", [r.mode for r in requests]),
        "precision": ("variant", [r.precision for r in requests]),
        "version": ("variant", [next(iter(r.versions.values())) for r in requests]),
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
            "batch": record.batch,
            "rounds": record.rounds,
            "seed": seed,
            "threads": first.threads,
            "round_wall_s": float(np.median(record.round_wall_s))
            if record.round_wall_s
            else np.nan,
        },
    )


def run_rounds(
    variants: list[Variant],
    set_index: int,
    rounds: int,
    seed: int,
    lock: str,
    outputs: dict[int, str],
) -> list[xr.Dataset]:
    """Measure the variants' set `set_index` of `rounds` rounds at each batch of `outputs`
    (batch: its rounds file), the batches in an order shuffled per set, and write the rounds
    files; the set's workers are built once and serve every batch."""
    if not variants:
        raise ValueError("the rounds need at least one variant")
    batches = list(outputs)
    missing = [b for b in batches if not any(b in v.batches for v in variants)]
    if missing:
        raise ValueError(f"no variant serves the rounds batches {missing}")
    run = SetRun.of(variants, set_index, rounds, batches)
    first = variants[0].requests[0]
    row = f"rounds/{first.system}/{first.arch}"
    with timing_lock(lock):
        start = time.perf_counter()
        _built(run)
        print(
            f"fwbench rounds: set {set_index}: {len(run.workers)} workers built in "
            f"{time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
        try:
            for batch in seeded_rng(seed, f"{row}/set{set_index}").permutation(batches):
                rng = seeded_rng(seed, f"{row}/b{batch}/set{set_index}")
                _run_batch(run, int(batch), rng)
        finally:
            for worker in run.workers.values():
                worker.close()
    found = [_dataset(run.records[batch], seed) for batch in batches]
    for ds, batch in zip(found, batches, strict=True):
        write_rounds(ds, outputs[batch])
    return found


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
