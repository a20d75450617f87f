"""One variant's worker in the rounds (fwbench.measure.rounds): a process of its own, started
with its framework's Python (its conda env under `--sdm conda`), that builds the variant as a
cell's later process does (same threads, pinning, warm compile cache), once for each batch it
serves (the framework's import and start-up paid once for all of them), and then times a turn
each time the coordinator asks, blocked on its pipe in between (no spinning, no CPU).

    python -m fwbench.measure.turns REQUESTS_JSON [ARTIFACT] [BUILD_CORES]

REQUESTS_JSON is a JSON list of cell requests' JSON, one per batch, alike but for the batch.

BUILD_CORES (a comma list, as many CPUs as the request's threads) is where it builds: the
coordinator builds a set's workers side by side on the host's core groups while nothing is
timed, and a worker built away from its timed cores moves every one of its threads there
before it answers "built" (its thread pools keep the size the timed cores give them).

The protocol, one JSON object per line: the worker first answers {"built": {...}} (its
"failed_batches" maps a batch whose build failed to the framework's error; {"failed": {...}}
where every batch failed); then to {"warm": B} it times its first call at batch B (a fresh
process's, from a warm compile cache, on the timed cores while the other workers wait: the
rounds' `first_call_warm_s`), runs the request's warm-up calls and answers
{"calls": k, "first_call_s": s} (k calls per sample, from the warm-up's pace and
`min_sample_s`, as a cell does); to {"turn": n, "batch": B} it times n samples of k calls at
batch B back to back and answers {"ns": [...]}; {"quit": true} ends it. Its stdout is the
protocol's alone: whatever a framework prints goes to stderr (the job's log).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import IO, Any

from fwbench import frameworks
from fwbench.host.harness import calls_per_sample, no_gc, warm_up
from fwbench.host.threads import move_to_cores, setup_threads
from fwbench.measure import compile_cache
from fwbench.measure.bench import build
from fwbench.measure.job import failure_attrs
from fwbench.plan.request import CellRequest


def _send(replies: IO[str], message: dict[str, Any]) -> None:
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def sample_ns(call: Callable[[], Any], sync: Callable[[Any], None], calls: int) -> int:
    """One timed sample: `calls` synced calls, perf_counter_ns around them."""
    start = time.perf_counter_ns()
    for _ in range(calls):
        sync(call())
    return time.perf_counter_ns() - start


def _serve(
    calls_at: dict[int, Callable[[], Any]],
    sync: Callable[[Any], None],
    request: CellRequest,
    commands: IO[str],
    replies: IO[str],
) -> None:
    """Answer the coordinator's commands until it says quit (or closes the pipe); `calls_at`
    holds each built batch's call."""
    calls: dict[int, int] = {}
    for line in commands:
        command = json.loads(line)
        if "warm" in command:
            batch = int(command["warm"])
            first_call_s = sample_ns(calls_at[batch], sync, 1) * 1e-9
            _, pace_s = warm_up(calls_at[batch], sync, request.warmup)
            calls[batch] = calls_per_sample(pace_s, request.min_sample_s)
            _send(replies, {"calls": calls[batch], "first_call_s": first_call_s})
        elif "turn" in command:
            batch = int(command["batch"])
            ns = [sample_ns(calls_at[batch], sync, calls[batch]) for _ in range(command["turn"])]
            _send(replies, {"ns": ns})
        else:
            return


def _to_timed_cores(timed: list[int], build_cores: Sequence[int]) -> None:
    """After a build away from the timed cores: every thread onto them, or an error."""
    if build_cores and sorted(build_cores) != sorted(timed):
        stray = move_to_cores(timed)
        if stray:
            raise RuntimeError(f"threads {stray} stayed off the timed cores {timed}")


def _build_batches(
    requests: Sequence[CellRequest], attrs: dict[str, Any]
) -> tuple[Any, dict[int, tuple[Any, Any]], dict[str, str]]:
    """Each request's runner and prepared input by batch, and each batch whose build failed
    with the framework's error; raises the first error where every batch failed."""
    built: dict[int, tuple[Any, Any]] = {}
    failed: dict[str, str] = {}
    adapter_runner = None
    first_error: Exception | None = None
    for request in requests:
        try:
            _, runner, prepared = build(request, attrs)
        except Exception as error:  # one batch's failure is data: the others go on
            failed[str(request.batch)] = failure_attrs(error)["error_message"]
            first_error = first_error or error
            continue
        built[request.batch] = (runner, prepared)
        adapter_runner = adapter_runner or runner
    if not built:
        raise first_error  # type: ignore[misc]
    return adapter_runner, built, failed


def work(
    requests: Sequence[CellRequest],
    commands: IO[str],
    replies: IO[str],
    build_cores: Sequence[int] = (),
) -> None:
    """Set up as a cell's process, build the variant at each request's batch (on
    `build_cores` where given), then serve turns on the timed cores inside its framework
    context with the garbage collector off (as a cell's timed loop); its first call at a batch
    waits for the coordinator's "warm"."""
    request = requests[0]
    frameworks.check_framework_mode(request.framework, request.mode)
    os.environ.update(frameworks.pre_import_env(request.framework, request.device))
    threads = setup_threads(request.threads)
    if build_cores:
        os.sched_setaffinity(0, build_cores)
    with compile_cache.worker_dirs(requests) as (_, cache_note):
        attrs: dict[str, Any] = {"compile_cache": cache_note, "threads": threads}
        try:
            runner, built, failed = _build_batches(requests, attrs)
            with runner.timing_context():
                _to_timed_cores(threads["cores"], list(build_cores))
                attrs["build_cores"] = list(build_cores) or threads["cores"]
                _send(replies, {"built": attrs | {"pid": os.getpid(), "failed_batches": failed}})
                with no_gc():
                    _serve(
                        {
                            batch: partial(runner_.call_in_context, prepared)
                            for batch, (runner_, prepared) in built.items()
                        },
                        runner.sync,
                        request,
                        commands,
                        replies,
                    )
        except Exception as error:  # a failed variant is data: the coordinator records it
            _send(replies, {"failed": failure_attrs(error)})


def main() -> None:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # frameworks' prints go to the log
    artifact, cores = (sys.argv[2:] + ["", ""])[:2]
    work(
        [CellRequest.from_json(text, artifact=artifact) for text in json.loads(sys.argv[1])],
        sys.stdin,
        replies,
        [int(core) for core in cores.split(",") if core],
    )
    replies.flush()
    os._exit(0)  # the interpreter's teardown holds nothing (scripts/bench.py says why)


if __name__ == "__main__":
    main()
