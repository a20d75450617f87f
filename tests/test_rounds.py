"""The rounds: the design's estimate (fwbench.analysis.rounds), the comparisons that take it
(fwbench.analysis.comparisons), the worker's protocol (fwbench.measure.turns), the coordinator
with real worker processes (fwbench.measure.rounds) and the plan's rounds jobs."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from fwbench import frameworks
from fwbench.analysis.comparisons import Cells, Levels, aa_controls, compare
from fwbench.analysis.rounds import METHOD, Rounds, block_of, pooled
from fwbench.analysis.winners import contest
from fwbench.host.threads import core_slots
from fwbench.io.comparisons_file import FASTER
from fwbench.io.dims import STATUS_FAILED, STATUS_OK, CellKey
from fwbench.io.rounds_file import read_rounds, rounds_by_system
from fwbench.io.variables import R, V
from fwbench.measure import turns
from fwbench.measure.rounds import Variant, order_seed, run_rounds
from fwbench.memory.levels import cpu_list
from fwbench.present.tables import aa_control_rule, rounds_rule

import fake_adapter
from plans import plan_of
from synthetic import rounds_dataset

DEFAULT = str(Path(__file__).resolve().parents[1] / "config/config.yaml")

LEVELS = Levels(confidence=0.95, min_effect_pct=5.0, resamples=300)
VARIANTS = [("torch", "eager"), ("torch", "onnxrt"), ("jax", "jit"), ("tensorflow", "eager")]


def synthetic_rounds(medians_s, process_sd, **options):
    """A rounds file of the first len(medians_s) of VARIANTS (tests/synthetic.rounds_dataset)."""
    return rounds_dataset(VARIANTS[: len(medians_s)], medians_s, process_sd, **options)


F32 = "float32"


def key(framework, mode, arch="mlp", batch=32):
    return CellKey(framework, mode, arch, batch)


def test_the_sets_are_blocks_a_drift_between_them_leaves_the_ratio_alone():
    medians = [1e-3, 0.8e-3, 0.5e-3]
    quiet = block_of(synthetic_rounds(medians, [0.005] * 3))
    drifting = block_of(synthetic_rounds(medians, [0.005] * 3, set_drift=(0.0, 0.3, -0.2)))
    for block in (quiet, drifting):
        ratio = math.exp(block.means[("torch", "eager", F32)] - block.means[("jax", "jit", F32)])
        assert ratio == pytest.approx(2.0, rel=0.02)
    a = ("torch", "eager", F32)
    assert drifting.sensitivity[a] == pytest.approx(1.0, abs=0.05)
    assert drifting.turn_cost[a] == pytest.approx(1.05, rel=0.02)


# six variants in pairs that respond alike to the machine's state: (0, 1), (2, 3), (4, 5)
SIX = [*VARIANTS, ("torch", "compiled"), ("jax", "export")]
SENSITIVITY = [1.0, 1.0, 1.6, 1.6, 0.5, 0.5]


def test_two_variants_that_respond_alike_to_the_machine_get_a_narrower_ci():
    ds = rounds_dataset(
        SIX, [1e-3] * 6, [0.01] * 6, sensitivity=SENSITIVITY, set_drift=(0.2, 0.1, -0.3)
    )
    block = block_of(ds)
    alike = block.se_dof(("torch", "eager", F32), ("torch", "onnxrt", F32))[0]
    unalike = block.se_dof(("torch", "eager", F32), ("jax", "jit", F32))[0]
    assert block.sensitivity[("jax", "jit", F32)] == pytest.approx(1.6, abs=0.15)
    assert unalike > 3 * alike


def test_a_cells_share_of_the_machines_state_is_its_variants_sensitivity_squared():
    """Rounds.state_variance, the state's term in a median's CI: γ²τ² of the variant in its
    row's table, τ² pooled over the tables; a row that did not measure the variant takes its
    γ² from the rows that did, a variant no table measured the mean over all; none fitted
    without three sets."""
    drift = (0.2, 0.1, -0.3)
    mlp = rounds_dataset(SIX, [1e-3] * 6, [0.002] * 6, sensitivity=SENSITIVITY, set_drift=drift)
    kept = [0, 1, 2, 4, 5]  # cnn's table lacks tensorflow eager; its median variant is still γ 1
    cnn = rounds_dataset(
        [SIX[i] for i in kept],
        [1e-3] * 5,
        [0.002] * 5,
        sensitivity=[SENSITIVITY[i] for i in kept],
        set_drift=drift,
        arch="cnn",
        seed=1,
    )
    rounds = Rounds([mlp, cnn])
    centered = np.asarray(drift) - np.mean(drift)
    tau2 = 2 * float(centered @ centered) / 4  # two tables × (3 sets − 1)
    eager, dof = rounds.state_variance(key("torch", "eager"))
    assert dof == 4 and eager == pytest.approx(tau2, rel=0.1)
    assert rounds.state_variance(key("jax", "jit"))[0] == pytest.approx(1.6**2 * tau2, rel=0.1)
    tf_eager = rounds.state_variance(key("tensorflow", "eager"))[0]
    assert rounds.state_variance(key("tensorflow", "eager", arch="cnn"))[0] == tf_eager
    assert rounds.state_variance(key("tensorflow", "eager", batch=8))[0] == tf_eager
    mean_share = (2 * 1 + 2 * 1.6**2 + 2 * 0.5**2 + 2 * 1 + 1.6**2 + 2 * 0.5**2) / 11
    unmeasured = rounds.state_variance(key("torch", "aoti"))[0]
    assert unmeasured == pytest.approx(mean_share * tau2, rel=0.1)
    two_sets = Rounds([synthetic_rounds([1e-3, 2e-3], [0.01] * 2, sets=2, set_drift=(0.1, -0.1))])
    assert two_sets.state_variance(key("torch", "eager")) == (0.0, math.inf)
    assert Rounds([]).state_variance(key("torch", "eager")) == (0.0, math.inf)


def test_the_comparisons_rule_says_how_far_the_machines_state_moved_between_the_sets():
    drift = (0.2, 0.1, -0.3)
    rounds = Rounds([synthetic_rounds([1e-3, 2e-3, 3e-3], [0.002] * 3, set_drift=drift)])
    described = json.loads(rounds.describe())
    centered = np.asarray(drift) - np.mean(drift)
    assert described["state_sigma_log"] == pytest.approx(math.sqrt(centered @ centered / 2), 0.1)
    percent = 100 * (math.exp(described["state_sigma_log"]) - 1)
    assert f"latency by σ {percent:.1f}%" in rounds_rule({"rounds": rounds.describe()})
    two_sets = Rounds([synthetic_rounds([1e-3, 2e-3], [0.01] * 2, sets=2, set_drift=(0.1, -0.1))])
    assert "state" not in rounds_rule({"rounds": two_sets.describe()})


TWELVE = [
    *((f, m) for f in ("torch",) for m in ("eager", "compiled", "aoti", "onnxrt")),
    *(("jax", m) for m in ("eager", "jit", "export")),
    *(("tensorflow", m) for m in ("eager", "function", "xla", "litert", "onnxrt")),
]


def test_the_rounds_ci_covers_the_ratio_over_the_machines_states():
    """300 simulated sweeps of three tables of 12 variants, each set at a random state of the
    machine (σ 15%) to which the variants respond with sensitivities 0.6–1.3: the 95 % CI
    holds the ratio at the states' mean for a pair that responds alike in 94–99 % of them and
    for pairs that respond unalike in 89–97 % (three sets estimate the sensitivities roughly:
    91–92 % here; the model without them, γ = 1, held 76–78 % for the two most unalike pairs
    and 99.7 % for the alike one)."""
    medians = np.geomspace(0.5e-3, 2e-3, 12)
    sensitivity = [1.0, 1.2, 1.3, 0.6, 1.0, 0.8, 0.8, 1.1, 0.9, 0.8, 0.7, 0.6]
    alike, unalike = [(3, 11)], [(0, 1), (0, 3), (2, 9)]
    covered = {pair: [] for pair in alike + unalike}
    for seed in range(300):
        states = np.random.default_rng(10_000 + seed).normal(0, 0.15, (3, 3))
        rounds = Rounds(
            [
                rounds_dataset(
                    TWELVE,
                    list(medians),
                    [0.01] * 12,
                    sensitivity=sensitivity,
                    set_drift=tuple(drift),
                    seed=seed + 1000 * k,
                    arch=arch,
                )
                for k, (arch, drift) in enumerate(zip(("mlp", "cnn", "rnn"), states, strict=True))
            ]
        )
        for i, j in covered:
            value, se, dof = rounds.estimate(key(*TWELVE[i]), key(*TWELVE[j]))
            half = scipy_stats.t(dof).ppf(0.975) * se
            covered[(i, j)].append(abs(value - math.log(medians[i] / medians[j])) <= half)
    for pair in alike:
        assert 0.94 <= np.mean(covered[pair]) <= 0.99, (pair, np.mean(covered[pair]))
    for pair in unalike:
        assert 0.89 <= np.mean(covered[pair]) <= 0.97, (pair, np.mean(covered[pair]))


def test_a_noisy_variants_comparisons_get_its_own_wider_ci():
    block = block_of(synthetic_rounds([1e-3] * 4, [0.002, 0.002, 0.002, 0.08], seed=3))
    quiet_pair = block.se_dof(("torch", "eager", F32), ("torch", "onnxrt", F32))[0]
    noisy_pair = block.se_dof(("torch", "eager", F32), ("tensorflow", "eager", F32))[0]
    assert noisy_pair > 3 * quiet_pair


def test_the_rounds_ci_covers_the_true_ratio_at_its_level():
    """500 simulated rounds files, processes differing by 0.5–6 % by variant: the 95 % CI of
    each pair holds the true ratio in 92–98 % of them."""
    medians = [1e-3, 0.9e-3, 0.7e-3, 2e-3]
    truth = math.log(medians[0] / medians[1])
    covered = []
    for seed in range(500):
        ds = synthetic_rounds(
            medians, [0.005, 0.01, 0.02, 0.06], seed=seed, set_drift=(0, 0.1, -0.1)
        )
        value, se, dof = Rounds([ds]).estimate(key("torch", "eager"), key("torch", "onnxrt"))
        half = scipy_stats.t(dof).ppf(0.975) * se
        covered.append(abs(value - truth) <= half)
    assert 0.92 <= np.mean(covered) <= 0.985


def test_a_variant_failed_in_any_set_falls_back_to_its_cells():
    ds = synthetic_rounds([1e-3, 0.5e-3, 0.7e-3], [0.01] * 3)
    ds["status"][1, 2] = STATUS_FAILED
    rounds = Rounds([ds])
    assert rounds.estimate(key("torch", "eager"), key("torch", "onnxrt")) is None
    assert rounds.estimate(key("torch", "eager"), key("jax", "jit")) is not None
    assert rounds.log_median(key("torch", "onnxrt")) is None
    assert rounds.estimate(key("torch", "eager", batch=8), key("jax", "jit", batch=8)) is None


def test_one_set_gives_no_estimate():
    ds = synthetic_rounds([1e-3, 0.5e-3], [0.01] * 2, sets=3).isel(set=[0])
    assert block_of(ds) is None


def test_the_comparisons_take_the_rounds_ratio_and_rank_by_it():
    # the cells say eager is faster (measured at another moment); the rounds say it is slower
    coords = {
        "framework": ["torch"],
        "mode": ["eager", "onnxrt"],
        "arch": ["mlp"],
        "precision": ["float32"],
        "batch": [32],
    }
    median = np.array([[[[[0.9e-3]]], [[[1.0e-3]]]]])
    latency = np.repeat(median[..., None], 10, axis=-1)
    rounds = Rounds([synthetic_rounds([1e-3, 0.5e-3], [0.002, 0.002])])
    cells = Cells(coords, median, latency, None, rounds)
    found = compare(cells, "winner", key("torch", "eager"), key("torch", "onnxrt"), LEVELS)
    assert found.estimate.method == METHOD
    assert found.speedup == pytest.approx(2.0, rel=0.02) and found.verdict == FASTER
    assert cells.pace(key("torch", "onnxrt")) < cells.pace(key("torch", "eager"))
    assert cells.median(key("torch", "eager")) == pytest.approx(0.9e-3)  # the cells' own
    # the winner's and the runner-up's medians come from the samples their ratio came from:
    # a runner-up is never printed faster than the winner
    values, _ = contest(cells, [key("torch", "eager"), key("torch", "onnxrt")], LEVELS)
    assert values[V.winner_fastest] == "torch/onnxrt"
    fastest, runner_up = values[V.winner_fastest_median_s], values[V.winner_runner_up_median_s]
    assert fastest == pytest.approx(0.5e-3, rel=0.02) and runner_up == pytest.approx(1e-3, rel=0.02)
    assert runner_up / fastest == pytest.approx(values[V.winner_runner_up_ratio])


# --- the worker's protocol, in this process with the fake adapter --------------------------


def serve(monkeypatch, commands, **settings):
    monkeypatch.setattr(frameworks, "load", lambda framework, part="infer": fake_adapter)
    replies = io.StringIO()
    request = dataclasses.replace(fake_adapter.request(**settings), process=1)
    requests = [dataclasses.replace(request, batch=batch) for batch in (request.batch, 64)]
    lines = "".join(json.dumps(c) + "\n" for c in commands)
    turns.work(requests, io.StringIO(lines), replies)
    return [json.loads(line) for line in replies.getvalue().splitlines()]


def test_the_worker_builds_every_batch_once_then_warms_and_times_turns_on_request(monkeypatch):
    batch = fake_adapter.request().batch
    commands = [
        {"warm": 64},
        {"turn": 2, "batch": 64},
        {"warm": batch},
        {"turn": 3, "batch": batch},
    ]
    replies = serve(monkeypatch, [*commands, {"quit": True}])
    built = replies[0]["built"]
    assert built["failed_batches"] == {} and "first_call_s" not in built
    for warmed in (replies[1], replies[3]):
        assert warmed["calls"] >= 1 and warmed["first_call_s"] > 0  # timed when warmed
    assert [len(replies[k]["ns"]) for k in (2, 4)] == [2, 3]
    assert all(ns > 0 for k in (2, 4) for ns in replies[k]["ns"])


def test_a_worker_whose_build_fails_at_one_batch_says_why_and_serves_the_others(monkeypatch):
    monkeypatch.setattr(fake_adapter, "FAIL_AT_BATCH", 64)
    batch = fake_adapter.request().batch
    replies = serve(monkeypatch, [{"warm": batch}, {"turn": 1, "batch": batch}])
    assert replies[0]["built"]["failed_batches"] == {"64": "no kernel for batch 64"}
    assert len(replies[2]["ns"]) == 1


def test_a_worker_whose_build_fails_says_why(monkeypatch):
    monkeypatch.setattr(fake_adapter, "FAIL_IN_BUILD", MemoryError("out of memory in build"))
    replies = serve(monkeypatch, [{"warm": 64}])
    assert replies == [{"failed": replies[0]["failed"]}]
    assert replies[0]["failed"]["error_message"] == "out of memory in build"


# --- the coordinator, with real worker processes ---------------------------------------------

TINY = {
    "frameworks": ["torch"],
    "modes": {"torch": ["eager"]},
    "architectures": ["mlp"],
    "dims": {"mlp": {"input": 8, "hidden": [8], "classes": 3}},
    "batch_sizes": [2, 4],
    "threads": 1,
    "bench": {"warmup": 2, "repeats": 3, "min_sample_s": 0.0005, "timeout_s": 120},
    "rounds": {"batches": [2, 4], "sets": 2, "rounds": 3},
}


def tiny_request(plan, batch=2):
    cell = dict(system="local", framework="torch", mode="eager", arch="mlp", batch=batch)
    return plan.cell_request(cell | {"version": plan.version("local", "torch")})


@pytest.mark.torch
def test_the_rounds_alternate_fresh_workers_at_every_batch_and_record_a_failed_variant(tmp_path):
    """torch eager twice (one of them failing on purpose in its build), each worker serving
    batches 2 and 4: two sets of fresh workers, a rounds file per batch; the failing one is
    recorded with its error, the other measured in every round at both batches."""
    plan = plan_of(TINY)
    requests = tuple(tiny_request(plan, batch) for batch in (2, 4))
    failing = tuple(dataclasses.replace(r, inject_failure=True) for r in requests)
    variants = [Variant(requests, sys.executable), Variant(failing, sys.executable)]
    outs = {k: {b: str(tmp_path / f"b{b}-set{k}.nc") for b in (2, 4)} for k in (1, 0)}
    for k in (1, 0):
        written = run_rounds(variants, k, 3, 0, str(tmp_path / "lock"), outs[k])
        assert [ds.attrs["batch"] for ds in written] == [2, 4]
    assert read_rounds(outs[0][4])["set"].values.tolist() == [0]
    rows = rounds_by_system([path for k in (0, 1) for path in outs[k].values()])["local"]
    assert sorted(int(ds.attrs["batch"]) for ds in rows) == [2, 4]  # a table per batch
    for ds in rows:
        assert ds.sizes == {"variant": 2, "set": 2, "round": 3, "sample": 2}
        assert ds["status"].values.tolist() == [[STATUS_OK] * 2, [STATUS_FAILED] * 2]
        assert "bench.inject_failure" in str(ds["error_message"].values[1, 0])
        assert np.isfinite(ds["latency_s"].values[0]).all()
        assert np.isnan(ds["latency_s"].values[1]).all()
        assert (ds["position"].values[0] == 0).all()  # alone in its rounds
        assert ds.attrs["round_wall_s"] > 0
        assert ds["start_utc"].values[0] > ds["start_utc"].values[1]
        for name in (R.setup_s, R.first_call_warm_s):
            values = ds[name].values
            assert (values[0] > 0).all() and np.isnan(values[1]).all(), name
        assert (ds[R.first_call_warm_s].values[0] < ds[R.setup_s].values[0]).all()


def _cores_of_threads(pid: int) -> set[tuple[int, ...]]:
    """The CPUs each thread of process `pid` may run on, as the kernel has them."""
    found = set()
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        lines = status.read_text().splitlines()
        line = next(text for text in lines if text.startswith("Cpus_allowed_list"))
        found.add(tuple(sorted(cpu_list(line.split(":")[1].strip()))))
    return found


@pytest.mark.torch
@pytest.mark.skipif(len(core_slots(1)) < 2, reason="needs two cores in the affinity mask")
def test_a_worker_built_beside_the_timed_core_moves_every_thread_there():
    """Built on the second core while the first is the timed one: once it says built, every
    one of its threads (torch's included) may run on the timed core only."""
    timed, away = core_slots(1)[:2]
    request = tiny_request(plan_of(TINY))
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fwbench.measure.turns",
            json.dumps([request.to_json()]),
            "",
            str(away[0]),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        built = json.loads(worker.stdout.readline())["built"]
        assert built["build_cores"] == away and built["threads"]["cores"] == timed
        assert _cores_of_threads(worker.pid) == {tuple(timed)}
    finally:
        worker.communicate(json.dumps({"quit": True}) + "\n", timeout=60)


# --- the plan -------------------------------------------------------------------------------


def test_the_plan_has_one_rounds_job_per_architecture_and_set_and_a_file_per_batch():
    plan = plan_of({"batch_sizes": [1, 32]}, base=DEFAULT)  # the default: every swept batch
    assert plan.rounds_batches == [1, 32]
    assert plan.rounds_files() == [
        f"results/rounds/local/{arch}/b{batch}/set{k}.nc"
        for k in range(3)
        for arch in plan.config["architectures"]
        for batch in (1, 32)
    ]
    wildcards = {"system": "local", "arch": "mlp", "set": "2"}
    assert plan.rounds_outputs(wildcards) == [
        "results/rounds/local/mlp/b1/set2.nc",
        "results/rounds/local/mlp/b32/set2.nc",
    ]
    *variants, control = plan.rounds_variants(wildcards)
    assert control.pop("replica") == 1 and control in variants  # the A/A control's second worker
    modes = [(fw, m) for fw in plan.frameworks for m in plan.config["modes"][fw]]
    # every mode in float32 at both batches; at the table batch alone (precision.batches),
    # every mode but litert in bfloat16, each deployment path in the quantization its users
    # pick first: the 3 runtime paths in int8, torch's compiled and aoti in int8_static
    served = [[b["batch"] for b in v["batches"]] for v in variants]
    assert served == [[1, 32]] * len(modes) + [[32]] * (len(modes) - 1 + 3 + 2)
    assert sum(map(len, served)) == len(plan.rounds_cells(wildcards))
    first = [json.loads(b["request"]) for b in variants[0]["batches"]]
    assert [(r["framework"], r["mode"], r["batch"], r["process"]) for r in first] == [
        (*modes[0], 1, 0),
        (*modes[0], 32, 0),
    ]
    at32 = [v["batches"][-1] for v in variants]
    requests = [json.loads(b["request"]) for b in at32]
    bf16 = [b for b, r in zip(at32, requests, strict=True) if r.get("precision") == "bfloat16"]
    assert len(bf16) == len(modes) - 1 and all(b["cell"].endswith("b32-bf16.nc") for b in bf16)
    int8 = [b for b, r in zip(at32, requests, strict=True) if r.get("precision") == "int8"]
    assert sorted(b["cell"].rsplit("/", 3)[1:] for b in int8) == [
        ["litert", "mlp", "b32-int8.nc"],
        *[["onnxrt", "mlp", "b32-int8.nc"]] * 2,
    ]
    static = [b for b, r in zip(at32, requests, strict=True) if r.get("precision") == "int8_static"]
    assert sorted(b["cell"].rsplit("/", 3)[1] for b in static) == ["aoti", "compiled"]
    artifacts = {b["artifact"].rsplit("/", 1)[1] for b in at32 if b["artifact"]}
    assert artifacts == {"mlp.json", "mlp-bf16.json", "mlp-int8.json", "mlp-int8-static.json"}


def test_the_rounds_batches_are_every_swept_one_the_table_batch_or_a_list():
    assert plan_of({"batch_sizes": [1, 8, 64]}, base=DEFAULT).rounds_batches == [1, 8, 64]
    table = {"batch_sizes": [1, 8, 64], "rounds": {"batches": "table"}}
    assert plan_of(table, base=DEFAULT).rounds_batches == [64]  # the nearest to 32
    assert plan_of({"rounds": {"batches": []}}, base=DEFAULT).rounds_files() == []


def test_a_rounds_batch_must_be_swept():
    with pytest.raises(ValueError, match=r"rounds.batches names \[64\], not in batch_sizes"):
        plan_of({"batch_sizes": [1, 32], "rounds": {"batches": [64]}}, base=DEFAULT)
    plan = plan_of({"batch_sizes": [1, 32], "rounds": {"batches": [32]}}, base=DEFAULT)
    with pytest.raises(ValueError, match=r"set 3 of the rounds: rounds.sets is 3 \(sets 0-2\)"):
        plan.rounds_variants({"system": "local", "arch": "mlp", "set": "3"})
    with pytest.raises(ValueError, match=r"rounds.architectures names \['vit'\]"):
        plan_of({"rounds": {"architectures": ["vit"]}}, base=DEFAULT)
    only_mlp = plan_of({"rounds": {"architectures": ["mlp"], "batches": [32]}}, base=DEFAULT)
    assert only_mlp.rounds_files(set_index=0) == ["results/rounds/local/mlp/b32/set0.nc"]
    with pytest.raises(ValueError, match="'cnn' is not measured in rounds"):
        only_mlp.rounds_variants({"system": "local", "arch": "cnn", "set": "0"})


def test_every_rows_sets_run_at_moments_of_their_own_after_its_cells():
    """Every rounds job after all its input cells; a row's sets in order, at least a fifteenth
    of the sweep apart (the last row's, in the tail of cells no rounds job needs); no two jobs
    back to back (no two tables' sets share a moment); the last set at the very end; the cells
    keep their seeded shuffle."""
    # in two processes a quarter of the cells: their later processes no rounds job needs
    # separate the last row's sets (with one process per cell, the default's, nothing does)
    spread = {"batch_sizes": [1, 8, 32, 128], "bench": {"processes": 2}}
    plan = plan_of(spread, base=DEFAULT)
    place = {path: len(plan.order) - p for path, p in plan.priorities.items()}  # 0 = first
    assert sorted(place.values()) == list(range(len(plan.order)))
    assert sorted(p for p in plan.order if "/rounds/" not in p) == sorted(plan.cell_files)
    jobs = {(job["arch"], job["set"]): plan.rounds_outputs(job)[0] for job in plan.rounds_jobs()}
    assert (
        len(jobs) == 3 * len(plan.config["architectures"]) == len(plan.order) - len(plan.cell_files)
    )
    for (arch, k), job in jobs.items():
        cells = plan.rounds_cells({"system": "local", "arch": arch})
        assert max(place[cell] for cell in cells) < place[job], (arch, k)
        if k:
            assert place[job] - place[jobs[arch, k - 1]] > len(plan.order) / 15, (arch, k)
    ordered = sorted(place[job] for job in jobs.values())
    assert min(b - a for a, b in zip(ordered, ordered[1:], strict=False)) > 1
    assert plan.order[-1] in jobs.values() and plan.ahead_of_bench > len(plan.order)
    wildcards = {"system": "local", "arch": "cnn", "set": "2"}
    assert plan.rounds_priority(wildcards) == plan.priorities[jobs["cnn", 2]]
    rest = [path for path in plan.order if "/rounds/" not in path]
    assert rest != sorted(rest, key=plan.cell_files.index)


def test_a_bf16_pair_takes_no_ratio_from_rounds_that_measured_float32_alone():
    rounds = Rounds([synthetic_rounds([1e-3, 0.5e-3], [0.002, 0.002])])
    eager, onnx = key("torch", "eager"), key("torch", "onnxrt")
    assert rounds.estimate(eager, onnx) is not None  # float32: the rounds measured both
    bf16 = [k.with_precision("bfloat16") for k in (eager, onnx)]
    assert rounds.estimate(*bf16) is None and rounds.log_median(bf16[0]) is None


def test_rounds_that_measured_a_bf16_variant_give_its_ratio_to_float32():
    ds = synthetic_rounds([1e-3, 0.5e-3], [0.002, 0.002]).assign_coords(
        variant=["torch/eager", "torch/eager/bfloat16"],
        framework=("variant", ["torch", "torch"]),
        mode=("variant", ["eager", "eager"]),
        precision=("variant", ["float32", "bfloat16"]),
    )
    rounds = Rounds([ds])
    fp32 = key("torch", "eager")
    log_speedup, se, _ = rounds.estimate(fp32, fp32.with_precision("bfloat16"))
    assert math.exp(log_speedup) == pytest.approx(2.0, rel=0.02) and se < 0.01
    assert "torch/eager/bfloat16" in rounds.describe()


def test_a_sets_order_seed_is_fresh_unless_configured_and_a_bad_one_is_named():
    assert order_seed("7") == 7
    drawn = {order_seed("fresh") for _ in range(8)}
    assert len(drawn) > 1 and all(0 <= seed < 2**31 for seed in drawn)
    with pytest.raises(ValueError, match="'-3'"):
        order_seed("-3")


def test_a_schema_2_rounds_files_warm_first_call_reads_under_its_own_name(tmp_path):
    ds = synthetic_rounds([1e-3, 2e-3], [0.01] * 2, first_call_s=0.5)
    old = ds.rename({R.first_call_warm_s: "first_call_s"})
    old.attrs["schema_version"] = 2
    old.to_netcdf(tmp_path / "set0.nc", engine="h5netcdf")
    read = read_rounds(tmp_path / "set0.nc")
    assert "first_call_s" not in read and R.first_call_warm_s in read
    assert Rounds([read]).warm_first_calls(key("torch", "eager")) == pytest.approx([0.5, 0.6, 0.7])


def test_each_rows_aa_control_is_one_of_its_variants_the_same_in_every_set_drawn_per_row():
    plan = plan_of({"batch_sizes": [32]}, base=DEFAULT)
    row = {"system": "local"}
    chosen = {}
    for arch in plan.config["architectures"]:
        sets = [plan.rounds_variants(row | {"arch": arch, "set": str(k)}) for k in range(3)]
        assert all(found == sets[0] for found in sets)
        assert [v.get("replica", 0) for v in sets[0]] == [0] * (len(sets[0]) - 1) + [1]
        chosen[arch] = plan.aa_control(row | {"arch": arch}, len(sets[0]) - 1)
    assert len(set(chosen.values())) > 1  # rotates over the rows
    off = plan_of({"batch_sizes": [32], "rounds": {"aa_control": False}}, base=DEFAULT)
    found = off.rounds_variants(row | {"arch": "mlp", "set": "0"})
    assert all("replica" not in v for v in found)


def test_the_aa_control_is_judged_like_any_pair_and_its_truth_is_one():
    """Its two workers of one variant differ only by their processes: over 200 simulated
    tables (unequal spreads, a drifting state) its 95% CI excludes 1 in about 5% of them."""
    variants = [*VARIANTS, ("torch", "eager")]
    excluded = 0
    for seed in range(200):
        ds = rounds_dataset(
            variants,
            [1e-3, 0.8e-3, 0.5e-3, 2e-3, 1e-3],
            [0.03, 0.003, 0.01, 0.03, 0.03],
            sensitivity=[1.0, 0.8, 1.3, 1.1, 1.0],
            set_drift=tuple(np.random.default_rng(seed).normal(0, 0.15, 3)),
            seed=seed,
        ).assign_coords(replica=("variant", [0, 0, 0, 0, 1]))
        (control,) = aa_controls(Rounds([ds]), LEVELS)
        assert control["row"] == "mlp/b32" and control["variant"] == "torch/eager"
        excluded += control["ci_low"] > 1 or control["ci_high"] < 1
    assert 2 <= excluded <= 20, excluded  # 5% of 200 is 10
    words = aa_control_rule({"aa_control": json.dumps([control] * 3), "stats_confidence": 0.95})
    assert "3 tables" in words and "calibrated design: about 0.2" in words
    assert aa_control_rule({}) == ""


def test_a_variants_paired_median_is_its_rounds_mean_with_a_ci_at_its_own_spread():
    """The median a figure and the winners print beside a rounds ratio: the geometric mean of
    the variant's set medians, se √(σ²/S) at σ's dof; none for a variant the rounds lack."""
    six_sets = {"sets": 6, "set_drift": (0.0,) * 6}
    spreads = [0.03, 0.002, 0.01, 0.03]  # with two variants their residuals mirror each other
    rounds = Rounds([synthetic_rounds([1e-3, 0.5e-3, 0.8e-3, 2e-3], spreads, **six_sets)])
    eager, onnx = key("torch", "eager"), key("torch", "onnxrt")
    log_median, se, dof = rounds.paired_median(eager)
    assert log_median == pytest.approx(rounds.log_median(eager))
    assert math.exp(log_median) == pytest.approx(1e-3, rel=0.1)
    block = rounds.blocks["mlp", 32]
    variant = ("torch", "eager", "float32")
    assert se == pytest.approx(math.sqrt(block.variances[variant] / block.sets))
    assert dof == block.variance_dofs[variant]
    assert rounds.paired_median(onnx)[1] < se  # the quieter variant's CI is narrower
    two = Rounds([synthetic_rounds([1e-3, 0.5e-3], [0.01, 0.01])])
    assert two.paired_median(key("jax", "jit")) is None
    # the speedup of onnx over eager is the ratio of the two paired medians
    value, _, _ = rounds.estimate(eager, onnx)
    assert value == pytest.approx(log_median - rounds.paired_median(onnx)[0])


def test_tables_at_two_batches_pool_apart_and_each_keeps_its_own_spread():
    """A variant's σ at batch 1 is pooled over batch 1's tables only: one job measures an
    architecture's set at every batch, so its batches share their moments."""
    medians = [1e-3, 0.5e-3, 0.8e-3, 2e-3]
    quiet = synthetic_rounds(medians, [0.002] * 4, batch=1, seed=1)
    loud = synthetic_rounds(medians, [0.05] * 4, batch=32, seed=2)
    rounds = Rounds([quiet, loud])
    variant = ("torch", "eager", "float32")
    alone = {
        b: Rounds([ds]).blocks["mlp", b].variances[variant] for b, ds in ((1, quiet), (32, loud))
    }
    for batch in (1, 32):
        assert rounds.blocks["mlp", batch].variances[variant] == pytest.approx(alone[batch])
    across = pooled([block_of(quiet), block_of(loud)])[0].variances[variant]
    assert across != pytest.approx(alone[1])  # what pooling across the batches would give
