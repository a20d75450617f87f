"""What only the JAX adapter has: jax.jit's executable cache as its compile evidence, the
lax.scan/Python-loop split of recurrences, XLA's cost analysis as its FLOP counter, a
set_threads that can only report, a backend that must not start at import, and the shapes
whose padding and pooling JAX writes by hand.

What every adapter does is in tests/test_adapter_contract.py.
"""

from __future__ import annotations

import re

import pytest

from fwbench.frameworks import MODES, is_export_mode
from fwbench.model.weights import dense_chain

from adapter_cases import (
    BATCH,
    SMALL_DIMS,
    TOLERANCE,
    fresh_process,
    lazy_import,
    run,
    small_runner,
)

# An export mode runs an artifact, which has no counter of its own (the other modes count the
# same function: frameworks.base.EXPORTED_COUNTER_NOTE).
COUNTING_MODES = [mode for mode in MODES["jax"] if not is_export_mode("jax", mode)]

pytestmark = pytest.mark.jax
jax = lazy_import("jax")
jax_infer = lazy_import("fwbench.frameworks.jax.infer")


@pytest.mark.parametrize(
    ("arch", "dims"),
    [
        ("cnn", {"channels": 2, "height": 7, "width": 9, "conv_channels": [3], "kernel": 2}),
        ("cnn", {"channels": 1, "height": 10, "width": 6, "conv_channels": [3, 4], "kernel": 5}),
        ("rnn", {"input": 3, "hidden": 4, "layers": 3, "seq_len": 4}),
        ("lstm", {"input": 3, "hidden": 4, "layers": 1, "seq_len": 4}),
        ("transformer", {"d_model": 8, "heads": 2, "ff": 8, "layers": 1, "layer_norm_eps": 0.5}),
    ],
)
@pytest.mark.parametrize("mode", MODES["jax"])
def test_edge_shapes_compute_the_reference_function(arch: str, dims: dict, mode: str) -> None:
    """Even kernels (asymmetric 'same' padding), odd maps (floor pooling), one or three
    recurrent layers, and a layer-norm eps large enough that ignoring it shows."""
    relative = run("jax", arch, mode, dims).relative_error
    assert relative <= TOLERANCE, f"{arch}/{mode} {dims}: normwise relative error {relative:.2e}"


# ---- compile evidence --------------------------------------------------------------------------


def test_jit_compiles_one_executable_and_reuses_it() -> None:
    result = run("jax", "transformer", "jit", SMALL_DIMS["transformer"])
    result.runner.sync(result.runner(result.prepared))  # a third call
    info = result.runner.compile_info()
    assert info.compiled
    assert info.how == "jax.jit (XLA)"
    assert info.graph_count == 1
    assert (info.graph_breaks, info.fallbacks) == (0, 0)


def test_jit_is_not_claimed_compiled_before_its_first_call() -> None:
    runner, _ = small_runner("jax", "mlp", "jit")
    assert not runner.compile_info().compiled
    assert runner.compile_info().graph_count == 0


def test_eager_says_it_dispatches_op_by_op() -> None:
    info = run("jax", "mlp", "eager", SMALL_DIMS["mlp"]).compile_info
    assert not info.compiled
    assert info.how == "op-by-op dispatch, no jit"
    assert info.graph_count == 0


@pytest.mark.parametrize(
    ("mode", "whole_forward_is_one_jit", "has_scan"),
    [
        ("jit", True, True),
        ("eager", False, False),
    ],
)
def test_jit_wraps_the_whole_forward_with_a_scan_and_eager_loops_in_python(
    mode: str, whole_forward_is_one_jit: bool, has_scan: bool
) -> None:
    result = run("jax", "lstm", mode, SMALL_DIMS["lstm"])
    jaxpr = jax.make_jaxpr(result.runner.forward)(result.runner.params, result.prepared)
    assert (len(jaxpr.eqns) == 1) is whole_forward_is_one_jit
    assert bool(re.search(r"\bscan\[", str(jaxpr))) is has_scan


# ---- XLA's FLOP count ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", COUNTING_MODES)
def test_mlp_flop_counter_matches_a_hand_count(mode: str) -> None:
    """XLA counts 2·in·out per sample for each matmul plus one flop per bias add and ReLU."""
    runner, x = small_runner("jax", "mlp", mode)
    widths = [20, 32, 10]
    matmuls = 2 * BATCH * sum(n_in * n_out for n_in, n_out in dense_chain(widths))
    elementwise = BATCH * (32 + 10) + BATCH * 32
    flops, note = runner.counter_flops(runner.prepare(x))
    assert flops == matmuls + elementwise, note
    assert "cost_analysis" in note


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_recurrent_flop_counter_counts_every_time_step(arch: str) -> None:
    """A lax.scan body counted once would fall well below the matmuls of all steps."""
    runner, x = small_runner("jax", arch, "jit")
    seq, n_in, hidden, gates = 5, 8, 16, 4 if arch == "lstm" else 1
    per_step = 2 * BATCH * gates * hidden * (n_in + hidden + hidden + hidden)  # both layers
    all_matmuls = seq * per_step + 2 * BATCH * hidden * 10
    flops, note = runner.counter_flops(runner.prepare(x))
    assert all_matmuls <= flops < 2 * all_matmuls, note
    assert "unrolled" in note


# ---- threads and import ----------------------------------------------------------------------


def test_set_threads_reports_the_affinity_and_xla_flags(monkeypatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    settings = jax_infer.set_threads(1)
    assert settings["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=false"
    assert settings["requested"] == 1
    assert settings["affinity_matches"] is (len(settings["affinity_cores"]) == 1)


def test_importing_the_adapter_starts_no_backend() -> None:
    """A backend started at import would fix XLA's thread pool before the job's settings."""
    report = fresh_process("jax")
    assert "jax" in report["after_import"]
    assert report["backend_started_at_import"] is False
