"""The JAX adapter computes reference.forward in every mode, and says truly how it ran."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from fwbench import reference, specs, weights
from fwbench.frameworks import MODES

from conftest import REPO

jax = pytest.importorskip("jax")
jax_infer = pytest.importorskip("fwbench.frameworks.jax_infer")

TOLERANCE = 1e-4  # normwise relative error, reference.max_errors
SMALL_DIMS = {
    "mlp": {"input": 20, "hidden": [32]},
    "cnn": {"channels": 3, "height": 8, "width": 8, "conv_channels": [4, 8], "dense": [16]},
    "rnn": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "lstm": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "transformer": {"d_model": 16, "heads": 4, "ff": 32, "layers": 2, "seq_len": 6},
}


def _run(arch: str, mode: str, dims: dict | None, batch: int = 2):
    """(runner, prepared input, output as numpy, float64 reference output)."""
    spec = specs.build_spec(arch, dims)
    shared = weights.make_weights(spec)
    x = weights.make_input(spec, batch)
    runner = jax_infer.build(spec, shared, mode, "cpu")
    prepared = runner.prepare(x)
    output = runner(prepared)
    runner.sync(output)
    return runner, prepared, runner.to_numpy(output), reference.forward(spec, shared, x)


@pytest.mark.parametrize("mode", MODES["jax"])
@pytest.mark.parametrize("arch", specs.ARCHITECTURES)
def test_every_mode_computes_the_reference_function(arch, mode):
    _, _, output, expected = _run(arch, mode, SMALL_DIMS[arch])
    _, relative = reference.max_errors(output, expected)
    assert output.dtype == np.float32
    assert relative <= TOLERANCE, f"{arch}/{mode}: normwise relative error {relative:.2e}"


@pytest.mark.parametrize("arch", specs.ARCHITECTURES)
def test_default_dims_compute_the_reference_function_under_jit(arch):
    _, _, output, expected = _run(arch, "jit", None)
    _, relative = reference.max_errors(output, expected)
    assert relative <= TOLERANCE, f"{arch}: normwise relative error {relative:.2e}"


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
def test_edge_shapes_compute_the_reference_function(arch, dims, mode):
    """Even kernels (asymmetric 'same' padding), odd maps (floor pooling), one or three
    recurrent layers, and a layer-norm eps large enough that ignoring it shows."""
    _, _, output, expected = _run(arch, mode, dims)
    _, relative = reference.max_errors(output, expected)
    assert relative <= TOLERANCE, f"{arch}/{mode} {dims}: normwise relative error {relative:.2e}"


@pytest.mark.parametrize("arch", ["cnn", "lstm"])
def test_outputs_keep_the_batch_order(arch):
    """Layout conversions (NHWC, time-major) must not mix samples: each row of a batch-3 call
    equals that sample run alone."""
    spec = specs.build_spec(arch, SMALL_DIMS[arch])
    runner = jax_infer.build(spec, weights.make_weights(spec), "jit", "cpu")
    x = weights.make_input(spec, 3)
    together = runner.to_numpy(runner(runner.prepare(x)))
    alone = [runner.to_numpy(runner(runner.prepare(x[i : i + 1])))[0] for i in range(3)]
    np.testing.assert_allclose(together, np.stack(alone), rtol=1e-5, atol=1e-6)


def test_jit_compiles_one_executable_and_reuses_it():
    runner, prepared, _, _ = _run("transformer", "jit", SMALL_DIMS["transformer"])
    runner.sync(runner(prepared))
    info = runner.compile_info()
    assert info.compiled
    assert info.how == "jax.jit (XLA)"
    assert info.graph_count == 1
    assert (info.graph_breaks, info.fallbacks) == (0, 0)


def test_jit_is_not_claimed_compiled_before_its_first_call():
    spec = specs.build_spec("mlp", SMALL_DIMS["mlp"])
    runner = jax_infer.build(spec, weights.make_weights(spec), "jit", "cpu")
    assert not runner.compile_info().compiled
    assert runner.compile_info().graph_count == 0


def test_eager_is_reported_as_not_compiled():
    runner, _, _, _ = _run("mlp", "eager", SMALL_DIMS["mlp"])
    info = runner.compile_info()
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
    mode, whole_forward_is_one_jit, has_scan
):
    runner, prepared, _, _ = _run("lstm", mode, SMALL_DIMS["lstm"])
    jaxpr = jax.make_jaxpr(runner.forward)(runner.params, prepared)
    assert (len(jaxpr.eqns) == 1) is whole_forward_is_one_jit
    assert bool(re.search(r"\bscan\[", str(jaxpr))) is has_scan


@pytest.mark.parametrize("mode", MODES["jax"])
def test_mlp_flop_counter_matches_a_hand_count(mode):
    """XLA counts 2·in·out per sample for each matmul plus one flop per bias add and ReLU."""
    runner, prepared, _, _ = _run("mlp", mode, SMALL_DIMS["mlp"])
    batch, widths = 2, [20, 32, 10]
    matmuls = 2 * batch * sum(n_in * n_out for n_in, n_out in weights.dense_chain(widths))
    elementwise = batch * (32 + 10) + batch * 32
    flops, note = runner.counter_flops(prepared)
    assert flops == matmuls + elementwise, note
    assert "cost_analysis" in note


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_recurrent_flop_counter_counts_every_time_step(arch):
    """A lax.scan body counted once would fall well below the matmuls of all steps."""
    runner, prepared, _, _ = _run(arch, "jit", SMALL_DIMS[arch])
    batch, seq, n_in, hidden, gates = 2, 5, 8, 16, 4 if arch == "lstm" else 1
    per_step = 2 * batch * gates * hidden * (n_in + hidden + hidden + hidden)  # both layers
    all_matmuls = seq * per_step + 2 * batch * hidden * 10
    flops, note = runner.counter_flops(prepared)
    assert all_matmuls <= flops < 2 * all_matmuls, note
    assert "unrolled" in note


def test_peak_device_memory_is_none_on_cpu():
    runner, _, _, _ = _run("mlp", "jit", SMALL_DIMS["mlp"])
    assert runner.peak_device_memory_bytes() is None


def test_an_unknown_mode_raises_naming_it():
    spec = specs.build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'compiled'"):
        jax_infer.build(spec, weights.make_weights(spec), "compiled", "cpu")


def test_an_unknown_device_raises_naming_it():
    spec = specs.build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'tpu'"):
        jax_infer.build(spec, weights.make_weights(spec), "eager", "tpu")


def test_an_input_in_the_wrong_layout_raises_naming_its_shape():
    spec = specs.build_spec("cnn", SMALL_DIMS["cnn"])
    runner = jax_infer.build(spec, weights.make_weights(spec), "eager", "cpu")
    nhwc = weights.make_input(spec, 2).transpose(0, 2, 3, 1)
    with pytest.raises(ValueError, match=r"\(2, 8, 8, 3\)"):
        runner.prepare(nhwc)


def test_set_threads_reports_the_affinity_and_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    settings = jax_infer.set_threads(1)
    assert settings["XLA_FLAGS"] == "--xla_cpu_multi_thread_eigen=false"
    assert settings["requested"] == 1
    assert settings["affinity_matches"] is (len(settings["affinity_cores"]) == 1)
    with pytest.raises(ValueError, match="0"):
        jax_infer.set_threads(0)


def test_importing_the_adapter_imports_no_other_framework_and_starts_no_backend():
    """A backend started at import would fix XLA's thread pool before the job's settings."""
    code = (
        "import sys, fwbench.frameworks.jax_infer\n"
        "from jax._src import xla_bridge\n"
        "print(sorted(m for m in ('torch', 'tensorflow', 'keras') if m in sys.modules))\n"
        "print('jax' in sys.modules, xla_bridge.backends_are_initialized())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True", "False"]
