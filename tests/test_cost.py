"""The analytic cost model: hand-computed small cases, scaling, and the reference's own matmuls."""

from __future__ import annotations

import numpy as np
import pytest

from fwbench.model import reference
from fwbench.model.cost import COUNTING_CONVENTIONS, cost
from fwbench.model.specs import ARCHITECTURES, build_spec
from fwbench.model.weights import make_input, make_weights

SMALL_DIMS = {
    "mlp": {"input": 5, "hidden": [4, 3], "classes": 2},
    "cnn": {"channels": 2, "height": 5, "width": 6, "conv_channels": [3, 2], "dense": [4]},
    "rnn": {"input": 3, "hidden": 4, "layers": 2, "seq_len": 3, "classes": 2},
    "lstm": {"input": 3, "hidden": 4, "layers": 2, "seq_len": 3, "classes": 2},
    "transformer": {"d_model": 4, "heads": 2, "ff": 6, "layers": 2, "seq_len": 3, "classes": 2},
}


def test_mlp_4_3_2_at_batch_2_matches_the_hand_count():
    c = cost(build_spec("mlp", {"input": 4, "hidden": [3], "classes": 2}), batch=2)
    assert c.matmul_flops == 2 * 2 * (4 * 3 + 3 * 2)  # 72
    assert c.flops == 72 + 2 * 3 + 2 * 2 + 2 * 3  # + biases + ReLU = 88
    assert c.weight_bytes == 4 * (4 * 3 + 3 + 3 * 2 + 2)  # 23 floats = 92
    assert c.bytes == 92 + 4 * (2 * 4 + 2 * 2)  # + input + output = 140
    assert c.activation_bytes == 2 * 4 * (2 * 3 + 2 * 3)  # dense0 and ReLU, written + read
    assert c.arithmetic_intensity == pytest.approx(88 / 140)
    assert c.working_set_bytes == 140 + 4 * (2 * 3 + 2 * 3)  # + dense0 and ReLU outputs live


def test_cnn_one_block_matches_the_hand_count():
    spec = build_spec(
        "cnn",
        {"channels": 1, "height": 4, "width": 4, "conv_channels": [2], "dense": [], "classes": 3},
    )
    c = cost(spec, batch=1)
    conv = 2 * 16 * 9 * 1 * 2  # 16 positions, 3x3x1 kernel, 2 output channels
    head = 2 * 8 * 3  # flatten 2x2x2 -> 3
    assert c.matmul_flops == conv + head
    assert c.flops == conv + head + 32 + 32 + 32 + 3  # conv bias, ReLU, pool 4/output, head bias
    assert c.weight_bytes == 4 * (9 * 2 + 2 + 8 * 3 + 3)
    assert c.bytes == c.weight_bytes + 4 * (16 + 3)
    assert c.activation_bytes == 2 * 4 * (32 + 32 + 8)  # conv, ReLU, pool
    assert c.working_set_bytes == c.bytes + 4 * (32 + 32)  # conv and ReLU outputs live at once


def test_lstm_counts_both_matmuls_per_step_and_eighteen_flops_of_gate_math_per_unit():
    spec = build_spec("lstm", {"input": 2, "hidden": 3, "layers": 1, "seq_len": 2, "classes": 2})
    c = cost(spec, batch=1)
    gates = 4 * 3
    matmul = 2 * 2 * (2 + 3) * gates + 2 * 3 * 2  # 2 steps of [x, h] @ [W_ih; W_hh], head
    assert c.matmul_flops == matmul
    # sums + bias; gates: 3 sigmoids of 4, 2 tanh, 3 multiplies, 1 add; head bias
    assert c.flops == matmul + 2 * 2 * gates + (3 * 4 + 2 + 3 + 1) * 2 * 3 + 2
    assert c.weight_bytes == 4 * (2 * gates + 3 * gates + gates + 3 * 2 + 2)


def test_rnn_gate_math_is_one_tanh_per_unit():
    dims = {"input": 2, "hidden": 3, "layers": 1, "seq_len": 2, "classes": 2}
    c = cost(build_spec("rnn", dims), batch=1)
    assert c.matmul_flops == 2 * 2 * (2 + 3) * 3 + 2 * 3 * 2
    assert c.flops == c.matmul_flops + 2 * 2 * 3 + 2 * 3 + 2


def test_transformer_layer_matches_the_hand_count():
    dims = {"d_model": 2, "heads": 1, "ff": 3, "layers": 1, "seq_len": 2, "classes": 2}
    c = cost(build_spec("transformer", dims), batch=1)
    # q, k, v, o projections 4 * 16; QK^T and PV 16 each; ff1, ff2 24 each; head 8
    assert c.matmul_flops == 4 * 16 + 16 + 16 + 24 + 24 + 8
    biases = 4 * 4 + 6 + 4 + 2
    scores = 4 + 5 * 4  # scale + softmax over 2x2 scores
    norms = 2 * (8 * 4 + 4 * 2)  # two layer norms over 2 rows of 2
    rest = 4 + 4 + 6 + 4 + 2  # two residuals, ReLU, mean-pool sum + divide
    assert c.flops == c.matmul_flops + biases + scores + norms + rest


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_weight_bytes_are_every_generated_weight_once(arch):
    spec = build_spec(arch, SMALL_DIMS[arch])
    generated = sum(w.size for w in make_weights(spec).values())
    assert cost(spec, batch=3).weight_bytes == 4 * generated
    assert cost(spec, batch=3, dtype="bfloat16").weight_bytes == 2 * generated


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_flops_are_linear_in_batch_and_weight_bytes_do_not_depend_on_it(arch):
    spec = build_spec(arch, SMALL_DIMS[arch])
    one, five = cost(spec, batch=1), cost(spec, batch=5)
    assert five.flops == 5 * one.flops
    assert five.matmul_flops == 5 * one.matmul_flops
    assert five.activation_bytes == 5 * one.activation_bytes
    assert five.weight_bytes == one.weight_bytes
    io_bytes = one.bytes - one.weight_bytes
    assert five.bytes == one.weight_bytes + 5 * io_bytes


def test_the_mlp_working_set_is_weights_io_and_the_largest_pair_of_consecutive_outputs():
    spec = build_spec("mlp", {"input": 4, "hidden": [5, 3], "classes": 2})
    c = cost(spec, batch=2)
    weights = (4 * 5 + 5) + (5 * 3 + 3) + (3 * 2 + 2)  # 51
    io = 2 * 4 + 2 * 2  # input + output
    # op outputs in order: dense0, ReLU, dense1, ReLU, dense2 (the head)
    outputs = [2 * 5, 2 * 5, 2 * 3, 2 * 3, 2 * 2]
    live = max(a + b for a, b in zip(outputs, outputs[1:], strict=False))  # dense0 + ReLU = 20
    assert c.working_set_bytes == 4 * (weights + io + live) == 332
    assert cost(spec, batch=2, dtype="bfloat16").working_set_bytes == 332 // 2


def test_the_working_set_is_the_largest_pair_not_the_sum_of_all_activations():
    spec = build_spec("mlp", {"input": 4, "hidden": [8, 8, 8, 8], "classes": 2})
    c = cost(spec, batch=1)
    assert c.working_set_bytes == c.bytes + 4 * (8 + 8)
    assert c.working_set_bytes < c.bytes + c.activation_bytes // 2


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_working_set_holds_weights_input_and_output_and_its_activations_scale_with_batch(
    arch,
):
    spec = build_spec(arch, SMALL_DIMS[arch])
    one, five = cost(spec, batch=1), cost(spec, batch=5)
    assert one.working_set_bytes > one.bytes  # weights + input + output, and live activations
    assert five.working_set_bytes > one.working_set_bytes
    # every op's output is linear in batch, the weights are not
    assert five.working_set_bytes - five.weight_bytes == 5 * (
        one.working_set_bytes - one.weight_bytes
    )


def test_a_wider_hidden_layer_changes_the_cost_by_its_own_terms():
    narrow = cost(build_spec("mlp", {"input": 4, "hidden": [3], "classes": 2}), batch=2)
    wide = cost(build_spec("mlp", {"input": 4, "hidden": [7], "classes": 2}), batch=2)
    # each extra hidden unit: 2*2*(4+2) matmul FLOPs, 2 bias + 2 ReLU FLOPs
    assert wide.flops - narrow.flops == 4 * (2 * 2 * (4 + 2) + 2 + 2)
    assert wide.weight_bytes - narrow.weight_bytes == 4 * 4 * (4 + 1 + 2)


class _CountingArray(np.ndarray):
    """An ndarray that adds the FLOPs of every matmul and einsum done on it to `counter`."""

    counter = {"matmul_flops": 0}

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, _CountingArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(x) for x in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        if ufunc is np.matmul and method == "__call__":
            _CountingArray.counter["matmul_flops"] += 2 * result.size * plain[0].shape[-1]
        return result.view(_CountingArray) if isinstance(result, np.ndarray) else result

    def __array_function__(self, func, types, args, kwargs):
        if func is np.einsum:
            inputs, _ = args[0].split("->")
            sizes = {}
            for letters, operand in zip(inputs.split(","), args[1:], strict=True):
                sizes |= dict(zip(letters, np.shape(operand), strict=True))
            _CountingArray.counter["matmul_flops"] += 2 * int(np.prod(list(sizes.values())))
        return super().__array_function__(func, types, args, kwargs)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_matmul_flops_equal_the_multiply_adds_the_reference_performs(arch):
    spec = build_spec(arch, SMALL_DIMS[arch])
    weights = {name: w.view(_CountingArray) for name, w in make_weights(spec).items()}
    x = make_input(spec, 2).view(_CountingArray)
    _CountingArray.counter["matmul_flops"] = 0
    out = reference.forward(spec, weights, x)
    assert out.shape == (2, spec.classes)
    assert _CountingArray.counter["matmul_flops"] == cost(spec, batch=2).matmul_flops


def test_bad_batch_and_dtype_are_named_in_the_error():
    spec = build_spec("mlp")
    with pytest.raises(ValueError, match="0"):
        cost(spec, batch=0)
    with pytest.raises(ValueError, match="int4"):
        cost(spec, batch=1, dtype="int4")


def test_the_conventions_string_states_the_softmax_and_layer_norm_counts():
    assert "softmax 5 per element" in COUNTING_CONVENTIONS
    assert "layer norm 8 per element + 4 per row" in COUNTING_CONVENTIONS
