"""What only the TensorFlow adapter has: channels-last inputs, XLA's own confirmation of the
xla mode, tf.config.run_functions_eagerly, the cuDNN LSTM kept out of XLA, the TF profiler's
FLOP counts and blind spots, thread settings that only hold before the first op, and an import
that keeps jax and sklearn out while leaving them importable.

What every adapter does is in tests/test_adapter_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.model.specs import build_spec
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

pytestmark = pytest.mark.tensorflow
tf_infer = lazy_import("fwbench.frameworks.tensorflow.infer")
# TensorFlow as the adapter imports it (its pre-import environment set)
tf = lazy_import("fwbench.frameworks.tensorflow.infer", attribute="tf")


def test_prepare_gives_the_cnn_channels_last_input() -> None:
    runner, x = small_runner("tensorflow", "cnn")
    np.testing.assert_array_equal(runner.prepare(x).numpy(), x.transpose(0, 2, 3, 1))


# ---- compile evidence --------------------------------------------------------------------------


def test_xla_mode_is_confirmed_by_xla_itself() -> None:
    info = run("tensorflow", "cnn", "xla", SMALL_DIMS["cnn"]).compile_info
    assert "_XlaMustCompile=True" in info.how
    assert "HLO" in info.details["xla"]


def test_function_mode_does_not_claim_xla() -> None:
    info = run("tensorflow", "mlp", "function", SMALL_DIMS["mlp"]).compile_info
    assert "no XLA" in info.how
    assert "xla" not in info.details


def test_function_mode_is_not_called_compiled_when_tf_runs_functions_eagerly() -> None:
    tf.config.run_functions_eagerly(True)
    try:
        result = run("tensorflow", "mlp", "function", SMALL_DIMS["mlp"])
    finally:
        tf.config.run_functions_eagerly(False)
    assert result.relative_error <= TOLERANCE
    assert not result.compile_info.compiled
    assert "ran eagerly" in result.compile_info.how


def test_xla_mode_keeps_the_lstm_off_cudnn_which_xla_cannot_compile() -> None:
    info = run("tensorflow", "lstm", "xla", SMALL_DIMS["lstm"]).compile_info
    assert info.details["cudnn_lstm_allowed"] is False


# ---- the TF profiler's FLOP count --------------------------------------------------------------


def _counter(arch: str) -> tuple[float | None, str]:
    runner, x = small_runner("tensorflow", arch, "function")
    return runner.counter_flops(runner.prepare(x))


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


# ---- a fresh process -------------------------------------------------------------------------


def test_jax_stays_importable_after_the_adapter_import() -> None:
    assert fresh_process("tensorflow")["jax_importable_afterwards"] is True


def test_the_import_leaves_sklearn_out_and_importable() -> None:
    report = fresh_process("tensorflow")
    assert report["sklearn_loaded_by_import"] is False
    assert report["sklearn_importable_afterwards"] is True


def test_set_threads_applies_tf_threading_before_the_first_op() -> None:
    assert fresh_process("tensorflow")["threads"] == {
        "intra_op_parallelism_threads": 1,
        "inter_op_parallelism_threads": 1,
    }


def test_set_threads_after_the_first_op_raises() -> None:
    assert "before any op runs" in fresh_process("tensorflow")["late_set_threads"]
