"""A framework adapter with no framework: numpy arithmetic, controllable delays and failures,
and `request`, a cell for it to run. Lets the harness be tested without importing torch, jax
or tensorflow (and is imported, in a subprocess too, where a test module must not be)."""

from __future__ import annotations

import contextlib
import time

import numpy as np

from fwbench.frameworks.protocols import CompileInfo, NullCall
from fwbench.measure import bench
from fwbench.model.reference import forward

BUILD_DELAY_S = 0.0
FAIL_IN_BUILD: Exception | None = None


class FakeRunner:
    def __init__(self, spec, weights, mode):
        self.spec, self.weights, self.mode = spec, weights, mode

    def prepare(self, x):
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


def set_threads(threads):
    return {"fake_threads": threads}


def build(spec, weights, mode, device, options=None):
    if FAIL_IN_BUILD is not None:
        raise FAIL_IN_BUILD
    time.sleep(BUILD_DELAY_S)
    return FakeRunner(spec, weights, mode)


def null_call(device):
    return NullCall(lambda: None, lambda _: None)


COUNTER_SCOPE = "matmul"


def request(**changes) -> bench.CellRequest:
    """A small torch-named cell (the fake stands in for torch) with `changes` applied."""
    fields = dict(
        framework="torch",
        mode="eager",
        arch="mlp",
        batch=2,
        dims={"input": 8, "hidden": [4], "classes": 3},
        seed=0,
        device="cpu",
        threads=1,
        warmup=1,
        repeats=4,
        busy_threshold_cores=1e9,
        pressure_threshold=1e9,
        retries=0,
        timeout_s=60,
        versions={"torch": "0.0-fake"},
    )
    return bench.CellRequest(**(fields | changes))
