"""A framework adapter with no framework: numpy arithmetic, controllable delays and failures,
and `request`, a cell for it to run. Lets the harness be tested without importing torch, jax
or tensorflow (and is imported, in a subprocess too, where a test module must not be)."""

from __future__ import annotations

import contextlib
import dataclasses
import time

import numpy as np

from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.frameworks.trace import Trace
from fwbench.model.reference import forward
from fwbench.plan.request import DEFAULT_LOCK

from plans import plan_of

BUILD_DELAY_S = 0.0
FAIL_IN_BUILD: Exception | None = None
FAIL_AT_BATCH: int | None = None  # the batch whose input preparation fails


class FakeRunner:
    def __init__(self, spec, weights, mode):
        self.spec, self.weights, self.mode = spec, weights, mode

    def prepare(self, x):
        if len(x) == FAIL_AT_BATCH:
            raise ValueError(f"no kernel for batch {len(x)}")
        return x

    def __call__(self, prepared):
        with self.timing_context():
            return self.call_in_context(prepared)

    def timing_context(self):
        return contextlib.nullcontext()

    def call_in_context(self, prepared):
        return forward(self.spec, self.weights, prepared)

    def sync(self, output):
        return None

    def to_numpy(self, output):
        return np.asarray(output)

    def compile_info(self):
        return CompileInfo(compiled=self.mode != "eager", how="fake", graph_count=1)

    def peak_device_memory_bytes(self):
        return None

    def counter_flops(self, prepared):
        return None, "the fake adapter has no counter"

    device = "cpu"

    def launch_floor(self):
        return None  # the null call

    def own_trace(self, trace):
        return dataclasses.replace(trace, note="the fake profiler: one kernel per call")

    def kernel_precision(self, prepared):
        return None  # no dtypes to see


def set_threads(threads):
    return {"fake_threads": threads}


def build(spec, weights, mode, device, options=None, artifact=None, precision="float32"):
    if FAIL_IN_BUILD is not None:
        raise FAIL_IN_BUILD
    time.sleep(BUILD_DELAY_S)
    return FakeRunner(spec, weights, mode)


def null_call(device):
    return NullCall(lambda: None, lambda _: None)


# The fake profiler sees one dispatch and one kernel per call, lasting these shares of the
# run's wall time per call, each from the call's start.
KERNEL_SHARE, DISPATCH_SHARE = 0.5, 0.8


def profile(run, calls):
    start = time.perf_counter_ns()
    run()
    per_call = (time.perf_counter_ns() - start) / calls
    kernels = tuple((i * per_call, i * per_call + KERNEL_SHARE * per_call) for i in range(calls))
    spans = tuple((i * per_call, i * per_call + DISPATCH_SHARE * per_call) for i in range(calls))
    return Trace(calls, dispatches=calls, kernels=kernels, events=2 * calls, spans=spans)


COUNTER_SCOPE = "matmul"


FAKE_CELL = dict(
    system="local", framework="torch", version="0.0-fake", mode="eager", arch="mlp", batch=2
)
FAKE_CONFIG = {
    "frameworks": ["torch"],
    "modes": {"torch": ["eager"]},
    "architectures": ["mlp"],
    "dims": {"mlp": {"input": 8, "hidden": [4], "classes": 3}},
    "batch_sizes": [2],
    "threads": 1,
    "bench": {
        "warmup": 1,
        "repeats": 4,
        "busy_threshold_cores": 1e9,
        "retries": 0,
        "timeout_s": 60,
    },
}


def request(lock: str = DEFAULT_LOCK, inject_failure: bool = False, **bench_settings):
    """The plan's request for a small torch-named cell (the fake stands in for torch), with
    `bench_settings` as the config's bench section says them."""
    injected = {"inject_failure": ["torch/eager/mlp"]} if inject_failure else {}
    config = FAKE_CONFIG | {"bench": FAKE_CONFIG["bench"] | bench_settings | injected}
    plan = plan_of(config)
    return dataclasses.replace(plan.cell_request(FAKE_CELL), lock=lock)
