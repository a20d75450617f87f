"""The TensorFlow inference adapter computes the reference function in every mode, says truly
whether it compiled, counts FLOPs where TF's profiler can, and loads no other framework."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks import tensorflow_infer as adapter
from fwbench.reference import forward, max_errors
from fwbench.specs import ARCHITECTURES, build_spec
from fwbench.weights import dense_chain, make_input, make_weights

TOLERANCE = 1e-4  # normwise relative error, float32 against the float64 reference
BATCH = 2
MODES = frameworks.MODES["tensorflow"]
SMALL_DIMS = {
    "mlp": {"input": 20, "hidden": [32]},
    "cnn": {"channels": 3, "height": 8, "width": 8, "conv_channels": [4, 8], "dense": [16]},
    "rnn": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "lstm": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "transformer": {"d_model": 16, "heads": 4, "ff": 32, "layers": 2, "seq_len": 6},
}


def _run(arch: str, mode: str, dims: dict | None) -> tuple[adapter.TensorFlowRunner, float]:
    """Build, call twice (first call traces/compiles), return the runner and its relative error
    against the reference."""
    spec = build_spec(arch, dims)
    weights = make_weights(spec)
    x = make_input(spec, BATCH)
    runner = adapter.build(spec, weights, mode, "cpu")
    prepared = runner.prepare(x)
    runner.sync(runner(prepared))
    output = runner.to_numpy(runner(prepared))
    assert output.dtype == np.float32
    return runner, max_errors(output, forward(spec, weights, x))[1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_mode_computes_the_reference_function_on_small_dims(arch: str, mode: str) -> None:
    _, relative_error = _run(arch, mode, SMALL_DIMS[arch])
    assert relative_error <= TOLERANCE


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_default_dims_compute_the_reference_function_eagerly(arch: str) -> None:
    _, relative_error = _run(arch, "eager", None)
    assert relative_error <= TOLERANCE


def test_prepare_gives_the_cnn_channels_last_input() -> None:
    spec = build_spec("cnn", SMALL_DIMS["cnn"])
    runner = adapter.build(spec, make_weights(spec), "eager", "cpu")
    x = make_input(spec, BATCH)
    prepared = runner.prepare(x)
    np.testing.assert_array_equal(prepared.numpy(), x.transpose(0, 2, 3, 1))


def test_prepare_rejects_an_input_of_the_wrong_shape_naming_it() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    runner = adapter.build(spec, make_weights(spec), "eager", "cpu")
    with pytest.raises(ValueError, match=r"\(2, 21\)"):
        runner.prepare(np.zeros((2, 21), dtype=np.float32))


def test_eager_mode_reports_no_compilation() -> None:
    runner, _ = _run("mlp", "eager", SMALL_DIMS["mlp"])
    info = runner.compile_info()
    assert not info.compiled
    assert info.graph_count == 0


@pytest.mark.parametrize("mode", ["function", "xla"])
def test_compiled_modes_trace_one_graph_and_keep_it_across_calls(mode: str) -> None:
    runner, _ = _run("mlp", mode, SMALL_DIMS["mlp"])
    info = runner.compile_info()
    assert info.compiled
    assert info.graph_count == 1  # two calls, one trace: warm calls do not retrace
    assert info.graph_breaks == 0 and info.fallbacks == 0


def test_xla_mode_is_confirmed_by_xla_itself() -> None:
    runner, _ = _run("cnn", "xla", SMALL_DIMS["cnn"])
    info = runner.compile_info()
    assert "_XlaMustCompile=True" in info.how
    assert "HLO" in info.details["xla"]


def test_function_mode_does_not_claim_xla() -> None:
    runner, _ = _run("mlp", "function", SMALL_DIMS["mlp"])
    assert "no XLA" in runner.compile_info().how
    assert "xla" not in runner.compile_info().details


def test_function_mode_is_not_called_compiled_when_tf_runs_functions_eagerly() -> None:
    adapter.tf.config.run_functions_eagerly(True)
    try:
        runner, relative_error = _run("mlp", "function", SMALL_DIMS["mlp"])
        info = runner.compile_info()
    finally:
        adapter.tf.config.run_functions_eagerly(False)
    assert relative_error <= TOLERANCE
    assert not info.compiled
    assert "ran eagerly" in info.how


def test_xla_mode_keeps_the_lstm_off_cudnn_which_xla_cannot_compile() -> None:
    runner, _ = _run("lstm", "xla", SMALL_DIMS["lstm"])
    assert runner.compile_info().details["cudnn_lstm_allowed"] is False


@pytest.mark.skipif(
    bool(adapter.tf.config.list_physical_devices("GPU")), reason="a GPU is visible here"
)
def test_cuda_without_a_visible_gpu_is_an_error_naming_it() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(RuntimeError, match="'cuda'"):
        adapter.build(spec, make_weights(spec), "eager", "cuda")


def test_peak_device_memory_is_none_on_cpu() -> None:
    runner, _ = _run("mlp", "eager", SMALL_DIMS["mlp"])
    assert runner.peak_device_memory_bytes() is None


def test_unknown_mode_is_rejected_naming_it() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'jit'"):
        adapter.build(spec, make_weights(spec), "jit", "cpu")


def test_unknown_device_is_rejected_naming_it() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'tpu'"):
        adapter.build(spec, make_weights(spec), "eager", "tpu")


def test_set_threads_rejects_a_non_positive_count_naming_it() -> None:
    with pytest.raises(ValueError, match="0"):
        adapter.set_threads(0)


def _counter(arch: str) -> tuple[float | None, str]:
    spec = build_spec(arch, SMALL_DIMS[arch])
    runner = adapter.build(spec, make_weights(spec), "function", "cpu")
    return runner.counter_flops(runner.prepare(make_input(spec, BATCH)))


def test_counter_flops_of_the_mlp_is_the_hand_count() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    layers = dense_chain([spec.input, *spec.hidden, spec.classes])
    matmuls = 2 * BATCH * sum(n_in * n_out for n_in, n_out in layers)
    bias_adds = BATCH * sum(n_out for _, n_out in layers)  # TF counts a BiasAdd, not a ReLU
    flops, note = _counter("mlp")
    assert flops == matmuls + bias_adds, note


def test_counter_flops_of_the_cnn_counts_every_multiply_add() -> None:
    spec = build_spec("cnn", SMALL_DIMS["cnn"])
    multiply_adds, conv_outputs = 0, 0
    height, width, cin = spec.height, spec.width, spec.channels
    for cout in spec.conv_channels:
        multiply_adds += BATCH * height * width * spec.kernel**2 * cin * cout
        conv_outputs += BATCH * height * width * cout
        height, width, cin = height // 2, width // 2, cout
    channels, height, width = spec.feature_map()
    dense = dense_chain([channels * height * width, *spec.dense, spec.classes])
    multiply_adds += BATCH * sum(n_in * n_out for n_in, n_out in dense)
    flops, note = _counter("cnn")
    # Above the multiply-adds only by element ops: a bias add and a pooling compare per conv
    # output, a bias add per dense output.
    dense_outputs = BATCH * sum(n_out for _, n_out in dense)
    assert 2 * multiply_adds < flops <= 2 * multiply_adds + 2 * conv_outputs + dense_outputs, note


@pytest.mark.parametrize(("arch", "blind_spot"), [("rnn", "While"), ("lstm", "While")])
def test_counter_flops_refuses_recurrent_loops_and_says_why(arch: str, blind_spot: str) -> None:
    flops, note = _counter(arch)
    assert flops is None
    assert blind_spot in note


def test_counter_flops_refuses_attention_einsums_and_says_why() -> None:
    flops, note = _counter("transformer")
    assert flops is None
    assert "Einsum" in note


_FRESH_PROCESS = textwrap.dedent(
    """
    import json, sys
    from fwbench.frameworks import tensorflow_infer as adapter
    from fwbench.specs import build_spec
    from fwbench.weights import make_input, make_weights

    report = {"threads": adapter.set_threads(1)}
    spec = build_spec("mlp", {"input": 8, "hidden": [8]})
    runner = adapter.build(spec, make_weights(spec), "eager", "cpu")
    runner.sync(runner(runner.prepare(make_input(spec, 2))))
    names = ("torch", "jax", "jaxlib", "tensorflow")
    report["loaded"] = sorted(name for name in names if name in sys.modules)
    try:
        adapter.set_threads(2)
        report["late_set_threads"] = "accepted"
    except RuntimeError as err:
        report["late_set_threads"] = str(err)
    import jax  # noqa: F401
    report["jax_importable_afterwards"] = True
    print(json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def fresh_process() -> dict:
    """What a process that imports only this adapter sees (as a TF benchmark job does)."""
    env = os.environ | frameworks.pre_import_env("tensorflow", "cpu")
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_adapter_loads_neither_torch_nor_jax(fresh_process: dict) -> None:
    assert fresh_process["loaded"] == ["tensorflow"]


def test_jax_stays_importable_after_the_adapter_import(fresh_process: dict) -> None:
    assert fresh_process["jax_importable_afterwards"]


def test_set_threads_applies_tf_threading_before_the_first_op(fresh_process: dict) -> None:
    assert fresh_process["threads"] == {
        "intra_op_parallelism_threads": 1,
        "inter_op_parallelism_threads": 1,
    }


def test_set_threads_after_the_first_op_raises(fresh_process: dict) -> None:
    assert "before any op runs" in fresh_process["late_set_threads"]
