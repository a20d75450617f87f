"""The low precisions' rounding-error bound (fwbench.model.precision_bound): its derivation's
numbers, and that it sits between what bf16 paths show and what a wrong path shows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fwbench.model import reference
from fwbench.model.precision_bound import (
    FAILURE_PROBABILITY,
    error_bound,
    moves_data,
    rounding_step,
    roundings,
)
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights

DEFAULT_DIMS = {
    "mlp": {"input": 784, "hidden": [512, 512], "classes": 10},
    "rnn": {"input": 32, "hidden": 128, "layers": 2, "seq_len": 32, "classes": 10},
    "lstm": {"input": 32, "hidden": 128, "layers": 2, "seq_len": 32, "classes": 10},
    "transformer": {"d_model": 128, "heads": 4, "ff": 512, "layers": 2, "seq_len": 32},
}


def test_the_bound_is_lambda_u_root_r_with_lambda_from_the_outputs_and_eta():
    spec = build_spec("mlp", DEFAULT_DIMS["mlp"])
    bound = error_bound(spec, "bfloat16", outputs=40)
    lam = math.sqrt(2 * math.log(2 * 40 / FAILURE_PROBABILITY))
    assert roundings(spec) == 12  # three dense stages of four roundings
    assert bound.value == pytest.approx(lam * 2**-8 * math.sqrt(12))
    assert "√12" in bound.basis() and "2^-8" in bound.basis()
    # more outputs, a larger λ: the union bound over every value compared
    assert error_bound(spec, "bfloat16", outputs=4000).value > bound.value


def test_every_architecture_has_a_bound_below_one_and_recurrences_count_every_step():
    specs = {arch: build_spec(arch, dims) for arch, dims in DEFAULT_DIMS.items()}
    assert roundings(specs["rnn"]) == 5 * 2 * 32 + 4
    assert roundings(specs["lstm"]) > roundings(specs["rnn"])
    for spec in specs.values():
        assert 0 < error_bound(spec, "bfloat16", outputs=40).value < 1


def _rounded(values: np.ndarray) -> np.ndarray:
    """float64 values rounded to bfloat16 (round to nearest even), back in float64."""
    import ml_dtypes

    return values.astype(ml_dtypes.bfloat16).astype(np.float64)


def test_an_emulated_bf16_mlp_lies_inside_the_bound_and_a_wrong_scale_outside_it():
    """The reference with weights and every layer's output rounded to bf16 (float64
    accumulation, as the kernels' float32 one): its error sits within the bound, while an
    error of 20 % (a wrong scale) lies outside it."""
    spec = build_spec("mlp", {"input": 64, "hidden": [32, 32], "classes": 10})
    weights = make_weights(spec, 0)
    x = make_input(spec, 4, 0)
    expected = reference.forward(spec, weights, x)
    h = _rounded(x.astype(np.float64))
    for i in range(len(spec.hidden) + 1):
        w, b = (_rounded(weights[f"dense{i}.{k}"].astype(np.float64)) for k in ("W", "b"))
        h = _rounded(_rounded(h @ w) + b)
        h = _rounded(np.maximum(h, 0)) if i < len(spec.hidden) else h
    bound = error_bound(spec, "bfloat16", outputs=expected.size).value
    _, emulated = reference.max_errors(h, expected)
    assert 2**-12 < emulated < bound
    _, wrong = reference.max_errors(expected * 1.2, expected)
    assert wrong > bound


def test_a_precision_without_a_unit_roundoff_is_refused_naming_it():
    spec = build_spec("mlp", DEFAULT_DIMS["mlp"])
    with pytest.raises(ValueError, match="'float16'.*known: bfloat16"):
        error_bound(spec, "float16", outputs=10)
    with pytest.raises(ValueError, match="outputs must be positive"):
        error_bound(spec, "bfloat16", outputs=0)


def test_a_rounding_steps_c_is_half_a_step_over_the_rms_and_zero_where_nothing_rounds():
    assert rounding_step(np.array([3.0, -4.0])) == pytest.approx(1 / (2 * math.sqrt(12.5)))
    # an all-zero tensor (a recurrence's initial state) sits on its zero point: exact
    assert rounding_step(np.zeros((2, 3))) == 0.0


def test_a_data_move_is_named_alike_in_onnx_tflite_and_aten_and_a_computation_is_not():
    for op in ("MaxPool", "MAX_POOL_2D", "max_pool2d", "Reshape", "RESHAPE", "view", "flatten"):
        assert moves_data(op), op
    for op in ("Conv", "CONV_2D", "Add", "FULLY_CONNECTED", "Softmax", "QUANTIZE", "relu"):
        assert not moves_data(op), op
