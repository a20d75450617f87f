"""A framework adapter with no framework: numpy arithmetic, controllable delays and failures.
Lets the harness be tested without importing torch, jax or tensorflow."""

from __future__ import annotations

import time

import numpy as np

from fwbench.frameworks import CompileInfo
from fwbench.reference import forward

BUILD_DELAY_S = 0.0
FAIL_IN_BUILD: Exception | None = None


class FakeRunner:
    def __init__(self, spec, weights, mode):
        self.spec, self.weights, self.mode = spec, weights, mode

    def prepare(self, x):
        return x

    def __call__(self, prepared):
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


def set_threads(n):
    return {"fake_threads": n}


def build(spec, weights, mode, device):
    if FAIL_IN_BUILD is not None:
        raise FAIL_IN_BUILD
    time.sleep(BUILD_DELAY_S)
    return FakeRunner(spec, weights, mode)


COUNTER_SCOPE = "matmul"
