"""self_measurement/rounds_carryover.py: the carryover between variants of the rounds, on
synthetic tables built in memory; no worker, no framework."""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import xarray as xr

from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.io.rounds_file import SAMPLES
from fwbench.io.variables import R

from conftest import REPO

SCRIPT = REPO / "self_measurement" / "rounds_carryover.py"


def _load_script():
    """Import the script by path (registered first: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location("rounds_carryover", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


rc = _load_script()

NAMES = ["torch/eager", "torch/compiled", "jax/jit", "onnxruntime/session", "tensorflow/xla"]


def carryover_table(
    carry: dict[tuple[int, int], float] | None = None,
    variants: int = 5,
    sets: int = 3,
    rounds: int = 20,
    sample_sd: float = 0.03,
    seed: int = 0,
) -> xr.Dataset:
    """One row's joined table: each set runs its rounds back to back, each round every variant
    once in a shuffled order; a turn's log latency is the variant's median + the set's state +
    the variant's process in that set + noise, + carry[(B, A)] (log) where A's turn ran just
    before B's (the predecessor read from the set's whole sequence of turns, rounds joined)."""
    rng = np.random.default_rng(seed)
    carry = carry or {}
    median = np.log(np.linspace(1e-3, 3e-3, variants))[:, None]
    center = median + rng.normal(0, 0.05, sets) + rng.normal(0, 0.02, (variants, sets))
    latency = np.full((variants, sets, rounds, len(SAMPLES)), np.nan)
    position = np.full((variants, sets, rounds), -1, dtype=np.int16)
    for s in range(sets):
        before = None
        for r in range(rounds):
            for place, v in enumerate(rng.permutation(variants)):
                shift = carry.get((v, before), 0.0) if before is not None else 0.0
                noise = rng.normal(0, sample_sd, len(SAMPLES))
                latency[v, s, r] = np.exp(center[v, s] + shift + noise) * [1.05, 1.0]
                position[v, s, r] = place
                before = v
    return xr.Dataset(
        {
            "latency_s": (("variant", "set", "round", "sample"), latency),
            "position": (("variant", "set", "round"), position),
            "status": (("variant", "set"), np.full((variants, sets), STATUS_OK)),
            R.first_call_warm_s: (("variant", "set"), np.full((variants, sets), 0.5)),
        },
        coords={"variant": NAMES[:variants], "set": np.arange(sets), "sample": list(SAMPLES)},
        attrs={"system": "local", "arch": "mlp", "batch": 32},
    )


def test_predecessor_is_the_place_before_and_the_last_of_the_round_before_for_the_first():
    ds = carryover_table(variants=3, sets=1, rounds=3)
    ds["position"][:, 0, :] = [[0, 2, 1], [1, 1, 0], [2, 0, 2]]  # orders 012, 210, 102
    pred = rc.predecessors(ds)[:, 0, :]
    none = rc.NO_PREDECESSOR
    assert pred[:, 0].tolist() == [none, 0, 1]  # the set's first turn has none
    assert pred[:, 1].tolist() == [1, 2, none]  # variant 2 first after its own turn: none
    assert pred[:, 2].tolist() == [1, 0, 0]  # variant 1 first, after round 1's last (0)


def test_a_failed_turn_leaves_the_next_turn_without_predecessor():
    none = rc.NO_PREDECESSOR
    in_the_middle = carryover_table(variants=3, sets=1, rounds=2)
    in_the_middle["position"][:, 0, :] = [[0, -1], [1, 0], [2, 2]]  # round 1: 1, (0 fails), 2
    in_the_middle["status"][0, 0] = STATUS_FAILED
    assert rc.predecessors(in_the_middle)[:, 0, 1].tolist() == [none, 2, none]
    last = carryover_table(variants=3, sets=1, rounds=3)
    last["position"][:, 0, :] = [[0, -1, -1], [1, 0, 1], [2, 1, 0]]  # round 1: 1, 2, (0 fails)
    last["status"][0, 0] = STATUS_FAILED
    pred = rc.predecessors(last)[:, 0, :]
    assert pred[:, 1].tolist() == [none, 2, 1]
    assert pred[:, 2].tolist() == [none, 2, none]  # variant 2 first, after the failed turn


def test_without_carryover_the_cis_cover_zero_about_as_often_as_they_claim():
    pairs = []
    for seed in range(4):
        pairs += [p for p in rc.carryover(carryover_table(seed=seed), boot=500) if p.has_ci]
    summary = rc.summarize([p for p in pairs if p.sample == "warm"])
    assert summary.tested == 4 * 5 * 4  # every ordered pair of 5 variants, in 4 tables
    assert summary.excluding <= 0.12 * summary.tested  # about 5 % expected
    assert max(abs(p.effect) for p in pairs) < math.log(1.05)


def test_a_variant_ten_percent_slower_after_another_is_found_with_the_effect_in_its_ci():
    carry = {(2, 0): math.log(1.10)}  # jax/jit runs 10 % slower right after torch/eager
    pairs = rc.carryover(carryover_table(carry, seed=1), boot=1000)
    for sample in SAMPLES:
        found = rc.summarize([p for p in pairs if p.sample == sample]).largest
        assert (found.successor, found.predecessor) == ("jax/jit", "torch/eager")
        assert found.excludes_zero
        assert found.low <= math.log(1.10) <= found.high
        assert 0.07 < math.expm1(found.effect) < 0.13
