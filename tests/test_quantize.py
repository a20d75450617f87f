"""int8 in the deployment runtimes as precisions of their own: ONNX Runtime's dynamic (int8) and
static QDQ (int8_static) quantization of a framework's float32 export
(fwbench.runtimes.onnxrt.quantize) and the TFLite converter's dynamic-range and full-integer
quantization (frameworks.tensorflow.export), planned for those paths alone, made in the export
job (a static one calibrated on a seeded set of its own), held against a bound read from the
artifact's own scales (fwbench.model.precision_bound.quantization_bound), its integer products
seen in ORT's profile or LiteRT's file, its bytes at mixed widths, its roof the int8 GEMM
peak."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.analysis.roofline import HardwareLimits
from fwbench.frameworks.kernel_precision import KERNEL_TIME
from fwbench.host.identity import int8_widens
from fwbench.io.artifact_file import read_manifest
from fwbench.io.cell_file import read_cell
from fwbench.model import cost as cost_model
from fwbench.model.precision_bound import (
    FAILURE_PROBABILITY,
    Roundings,
    integer_limits,
    integer_step,
    quantization_bound,
    saturated,
)
from fwbench.model.specs import build_spec
from fwbench.plan import paths
from fwbench.precisions import FLOAT32, INT8, INT8_STATIC

from conftest import in_fresh_process
from plans import export_and_run_cell, plan_of

pytestmark = pytest.mark.per_framework

MLP = {"input": 64, "hidden": [128, 64], "classes": 10}


# ---- planning and paths --------------------------------------------------------------------


def test_int8_is_planned_for_the_deployment_runtimes_alone_on_a_path_of_its_own():
    for framework, mode in [
        ("torch", "onnxrt"),
        ("tensorflow", "onnxrt"),
        ("tensorflow", "litert"),
    ]:
        assert INT8 in frameworks.mode_precisions(framework, mode)
    for framework, mode in [("torch", "eager"), ("torch", "aoti"), ("jax", "export")]:
        assert INT8 not in frameworks.mode_precisions(framework, mode)
    plan = plan_of(
        {
            "frameworks": ["torch"],
            "modes": {"torch": ["eager", "onnxrt"]},
            "architectures": ["mlp"],
            "batch_sizes": [4],
            "precision": {"low": ["int8"], "batches": [4]},
        }
    )
    int8 = [c for c in plan.cells if c["precision"] == INT8]
    assert [(c["mode"], c["batch"]) for c in int8] == [("onnxrt", 4)]
    assert paths.precision_tag(INT8) == "-int8" and paths.precision_of_tag("-int8") == INT8


def test_only_a_runtime_that_quantizes_is_asked_to():
    assert frameworks.quantizer("torch", "onnxrt", FLOAT32) is None
    assert frameworks.quantizer("torch", "onnxrt", "bfloat16") is None  # the exporter's own
    with pytest.raises(ValueError, match="'int8' is not one of torch/eager's"):
        frameworks.quantizer("torch", "eager", INT8)
    # LiteRT's quantization is the converter's: tensorflow's export writes the int8 file
    assert frameworks.quantizer("tensorflow", "litert", INT8) is None
    # torch's aoti is quantized by PT2E before packaging: torch's export writes it
    assert frameworks.quantizer("torch", "aoti", INT8_STATIC) is None
    assert frameworks.quantizer("torch", "onnxrt", INT8_STATIC).__name__.endswith("onnxrt")


# ---- the bound, the cost model and the roof -------------------------------------------------


def test_the_quantization_bound_is_lambda_times_the_root_sum_of_squared_steps():
    steps = [0.01, 0.0068, 0.02]
    bound = quantization_bound(steps, outputs=80)
    lam = math.sqrt(2 * math.log(2 * 80 / FAILURE_PROBABILITY))
    assert bound.value == pytest.approx(lam * math.sqrt(sum(c * c for c in steps)))
    assert bound.roundings == 3 and "scales" in bound.basis()
    for bad in ([], [0.01, math.nan]):
        with pytest.raises(ValueError, match="finite steps"):
            quantization_bound(bad, outputs=80)


def test_a_stored_activation_at_a_limit_other_than_its_zero_point_counts_as_saturated():
    q = np.array([0, 0, 0, 5, 255, 255], np.uint8)
    assert saturated(q, 0, 0, 255) == 2  # zeros at the zero point are exact (a ReLU's)
    assert saturated(q, 128, 0, 255) == 5  # an affine range: both ends clip
    assert saturated(np.array([-128, 3, 127], np.int8), np.array([-128]), -128, 127) == 1
    found = Roundings()
    found.activation(q, 0, *integer_limits(q.dtype))
    found.weight(np.array([-127, 64, 127], np.int8))
    assert (found.saturated, found.stored, len(found.steps)) == (2, 6, 2)
    assert found.saturated / found.stored == pytest.approx(2 / 6)
    assert (Roundings().saturated, Roundings().stored) == (0, 0)


def test_dynamic_int8_counts_one_byte_weights_and_float32_activations():
    spec = build_spec("mlp", MLP)
    int8, fp32 = cost_model.cost(spec, 8, INT8), cost_model.cost(spec, 8, FLOAT32)
    assert int8.weight_bytes * 4 == fp32.weight_bytes
    assert int8.activation_bytes == fp32.activation_bytes
    assert int8.flops == fp32.flops
    assert fp32.bytes - int8.bytes == fp32.weight_bytes - int8.weight_bytes


def test_an_int8_cell_is_held_against_the_int8_gemm_peak():
    limits = HardwareLimits(1e11, 1e10, "test", int8_peak_ops_per_s=4e11)
    assert limits.peak_of(INT8) == 4e11 and limits.peak_of(FLOAT32) == 1e11


# ---- ONNX Runtime: what the quantized model computed in, and its steps ---------------------


def _node(op: str, ts: float, dur: float, inputs: list[str]) -> dict:
    args = {"op_name": op, "input_type_shape": [{dtype: [4, 8]} for dtype in inputs]}
    return {"cat": "Node", "name": f"n{ts}_kernel_time", "ts": ts, "dur": dur, "args": args}


def test_ort_kernel_time_of_integer_products_counts_as_int8_and_float_ones_by_input_type():
    onnxrt = pytest.importorskip("fwbench.runtimes.onnxrt")
    events = [{"name": "model_run", "ts": 0, "dur": 100}]  # the window: one run
    events += [
        _node("DynamicQuantizeMatMul", 10, 30, ["float", "float", "int8"]),
        _node("DynamicQuantizeLinear", 45, 5, ["float"]),
        _node("ConvInteger", 50, 10, ["uint8", "int8"]),
        _node("LSTM", 60, 20, ["float", "float"]),
        _node("Relu", 85, 9, ["float"]),  # no product: not counted
        _node("MatMul", 200, 99, ["float", "float"]),  # outside the window
    ]
    found = onnxrt.kernel_precision_of(events, INT8, calls=1)
    assert found.basis == KERNEL_TIME and found.casts == 1
    assert found.shares == pytest.approx({INT8: 40 / 60, FLOAT32: 20 / 60})
    assert not found.upcast()
    only_float = onnxrt.kernel_precision_of(events[:1] + events[4:5], INT8, calls=1)
    assert only_float.upcast() and "float32 100%" in only_float.note()


def _matmul_model(weights: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, weights.shape[0]])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, weights.shape[1]])
    w = numpy_helper.from_array(weights.astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString()


# A weight's int8 step for weights uniform on [-1, 1] (rms 1/√3): full range, 127 levels a side
# (√3/254 of the rms); with reduce_range, where the CPU's int8 products widen to 16 bits
# (host.identity.int8_widens), 64 (√3/128).
def weight_step(reduced: bool) -> float:
    return math.sqrt(3) / (128 if reduced else 254)


def test_the_steps_of_a_quantized_matmul_are_those_its_value_ranges_imply(tmp_path):
    """Weights uniform on [-1, 1] become int8 of rms 127/√3 (63/√3 with reduce_range): their
    step is √3/254; an input uniform on [0, 1) becomes uint8 (zero point 0) of rms 255/√3:
    √3/510."""
    onnxrt = pytest.importorskip("fwbench.runtimes.onnxrt")
    from fwbench.frameworks.protocols import Exported

    rng = np.random.default_rng(0)
    source = tmp_path / "float.onnx"
    source.write_bytes(_matmul_model(rng.uniform(-1, 1, (256, 256))))
    quantized = onnxrt.quantize(Exported(str(source), "test"), INT8, str(tmp_path / "m"))
    assert quantized.details["quantization"]["integer_products"] == ["MatMulInteger"]
    assert quantized.details["quantization"]["float_products_left"] == []
    reduced = quantized.details["quantization"]["reduce_range"]
    assert reduced == int8_widens()
    x = rng.uniform(0, 1, (64, 256)).astype(np.float32)
    found = onnxrt.quantization_roundings(quantized.file, {"x": x}, threads=1)
    activation, weight = found.steps
    assert weight == pytest.approx(weight_step(reduced), rel=0.02)
    assert activation == pytest.approx(math.sqrt(3) / 510, rel=0.02)
    assert (found.saturated, found.stored) == (0, 0)  # a dynamic range is each call's own


def test_a_static_quantization_fixes_the_activations_scale_from_its_calibration_set(tmp_path):
    """Calibrated on inputs uniform on [0, 1), the activation's uint8 scale is their range
    over 255 (zero point 0): an input from the same range keeps the step √3/510 of the
    dynamic case, and one twice as large is clipped at the calibrated range, not rescaled."""
    onnxrt = pytest.importorskip("fwbench.runtimes.onnxrt")
    from fwbench.frameworks.protocols import Exported

    rng = np.random.default_rng(0)
    source = tmp_path / "float.onnx"
    source.write_bytes(_matmul_model(rng.uniform(-1, 1, (256, 256))))
    calibration = [rng.uniform(0, 1, (16, 256)).astype(np.float32) for _ in range(4)]
    quantized = onnxrt.quantize(
        Exported(str(source), "test"), INT8_STATIC, str(tmp_path / "m"), calibration
    )
    settings = quantized.details["quantization"]
    assert settings["method"].endswith("quantize_static") and settings["quant_format"] == "QDQ"
    assert settings["integer_products"] == ["MatMul"] and settings["float_products_left"] == []
    x = rng.uniform(0, 1, (64, 256)).astype(np.float32)
    # In the graph's order: the weight, the input, and the product's output, which QDQ rounds
    # to uint8 too (the next op's input in a deeper model).
    found = onnxrt.quantization_roundings(quantized.file, {"x": x}, threads=1)
    weight, activation, output = found.steps
    assert weight == pytest.approx(weight_step(settings["reduce_range"]), rel=0.02)
    assert activation == pytest.approx(math.sqrt(3) / 510, rel=0.02)
    assert 0 < output < 0.1
    # Stored: the input and the product's output, 64 × 256 values each; in range, an input
    # value sits at 255 only within half a step of the calibrated maximum (about 1 in 510).
    assert found.stored == 2 * 64 * 256 and found.saturated / found.stored < 0.01
    wide = onnxrt.quantization_roundings(quantized.file, {"x": 2 * x}, threads=1)
    # A scale fixed beforehand: half of q saturates at 255 (rms 255·√(2/3)), not rescaled.
    assert wide.steps[1] == pytest.approx(1 / (2 * 255 * math.sqrt(2 / 3)), rel=0.03)
    # ... and counted: half the input's values at 255, at least a quarter of all stored.
    assert wide.saturated >= 0.5 * 64 * 256 * 0.95 and wide.saturated / wide.stored > 0.25
    with pytest.raises(ValueError, match="calibration set"):
        onnxrt.quantize(Exported(str(source), "test"), INT8_STATIC, str(tmp_path / "n"))


def test_a_qdq_models_roundings_leave_out_the_requantization_after_a_data_move():
    """Q(x) -> DQ -> Transpose -> Q at the same scale rounds nothing new: counted once; at
    another scale it rounds again; a weight's DequantizeLinear of a constant is a rounding."""
    onnxrt = pytest.importorskip("fwbench.runtimes.onnxrt")
    from onnx import helper

    def model(second_scale: str) -> list:
        return [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
            helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
            helper.make_node("Transpose", ["xd"], ["xt"]),
            helper.make_node("QuantizeLinear", ["xt", second_scale, "z"], ["tq"]),
            helper.make_node("DequantizeLinear", ["tq", second_scale, "z"], ["td"]),
            helper.make_node("DequantizeLinear", ["wq", "s", "z"], ["wd"]),
            helper.make_node("MatMul", ["td", "wd"], ["y"]),
        ]

    constants = {
        "s": np.float32(0.1),
        "same": np.float32(0.1),
        "other": np.float32(0.2),
        "z": np.uint8(0),
        "wq": np.ones((2, 2), np.int8),
    }
    same = onnxrt._roundings(model("same"), constants)
    assert [(value, stored) for value, _, _, stored in same] == [("xq", True), ("wq", False)]
    other = onnxrt._roundings(model("other"), constants)
    assert [value for value, _, _, _ in other] == ["xq", "tq", "wq"]


def test_a_static_quantizations_calibration_set_is_seeded_and_never_the_check_input():
    from fwbench.model.weights import make_calibration, make_input

    spec = build_spec("cnn", {})
    first, again = make_calibration(spec), make_calibration(spec)
    assert len(first) > 1 and all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert first[0].shape == spec.input_shape(first[0].shape[0])
    check = make_input(spec, first[0].shape[0], 0)
    assert not any(np.array_equal(batch, check) for batch in first)


def test_both_int8_precisions_compute_in_int8_on_paths_of_their_own():
    from fwbench.precisions import arithmetic_of

    assert arithmetic_of(INT8) == arithmetic_of(INT8_STATIC) == "int8"
    assert paths.precision_tag(INT8_STATIC) == "-int8-static"
    assert paths.precision_of_tag("-int8-static") == INT8_STATIC
    limits = HardwareLimits(1e11, 1e10, "test", int8_peak_ops_per_s=4e11)
    assert limits.peak_of(INT8_STATIC) == limits.peak_of(INT8) == 4e11
    spec = build_spec("mlp", MLP)
    static, dynamic = cost_model.cost(spec, 8, INT8_STATIC), cost_model.cost(spec, 8, INT8)
    assert static.weight_bytes == dynamic.weight_bytes and static.bytes < dynamic.bytes
    with pytest.raises(ValueError, match="int8_dynamic"):
        arithmetic_of("int8_dynamic")


# ---- torch: oneDNN's verbose log -----------------------------------------------------------

# As oneDNN 3.12 printed it for a PT2E-quantized conv and linear packaged by AOTInductor.
ONEDNN_LOG = """onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71049cd)
onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx10_1_512_amx,forward_inference,\
src:u8::blocked:acdb::f0 wei:s8:a:blocked:Acdb16a::f8:zpm1 dst:u8::blocked:acdb::f0,\
attr-scratchpad:user,alg:convolution_direct,mb4_ic3oc16_ih8oh8kh3,0.03
onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx10_1_512,undef,\
src:f32:a:blocked:ab::f0 wei:f32:a:blocked:ab::f0 dst:f32:a:blocked:ab::f0,,,4x1024:1024x10,0.01
onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,\
src:f32::blocked:ab::f0 dst:u8::blocked:ab::f0,,,4x1024,0.002
onednn_verbose,v1,primitive,exec,cpu,rnn,ref:any,forward_inference,\\
src_layer:f32::blocked:abc::f0 src_iter:f32::blocked:abcd::f0 dst_layer:f32::blocked:abc::f0,,,\\
l1t4mb2sic8slc8dhc8dic8,0.01
onednn_verbose,v1,primitive,create:cache_miss,cpu,matmul,brg_matmul:avx10_1_512,undef,\
src:f32:a:blocked:ab::f0 dst:f32:a:blocked:ab::f0,,,4x1024:1024x10,0.5
""".replace("\\\n", "")


def test_onednns_verbose_log_gives_its_products_time_by_source_dtype_and_the_isa():
    from fwbench.frameworks.kernel_precision import of_onednn_log, onednn_executions

    executions = onednn_executions(ONEDNN_LOG)  # executions only, not primitive creations
    assert [e[:4] for e in executions] == [
        ("convolution", "brg_conv_fwd:avx10_1_512_amx", "int8", "int8"),
        ("matmul", "brg_matmul:avx10_1_512", "float32", "float32"),
        ("reorder", "jit:uni", "float32", "int8"),
        ("rnn", "ref:any", "float32", "float32"),  # its tensors: src_layer, dst_layer
    ]
    found = of_onednn_log(ONEDNN_LOG, "int8", calls=1)
    assert found.shares == pytest.approx({"int8": 0.6, "float32": 0.4})
    assert found.basis == KERNEL_TIME and found.casts == 1  # the f32 -> u8 reorder
    assert "brg_conv_fwd:avx10_1_512_amx" in found.note() and "verbose log" in found.note()


def test_stdout_captured_takes_what_c_code_writes_to_file_descriptor_one():
    import ctypes

    from fwbench.host.onednn import stdout_captured

    libc = ctypes.CDLL(None)
    before = os.fstat(1)
    with stdout_captured() as captured:
        libc.printf(b"from C, buffered\n")
        os.write(1, b"straight to the descriptor\n")
    assert "from C, buffered" in captured[0] and "straight to the descriptor" in captured[0]
    with pytest.raises(RuntimeError), stdout_captured() as failed:
        os.write(1, b"before the error\n")
        raise RuntimeError("inside")
    assert "before the error" in failed[0]
    after = os.fstat(1)  # descriptor 1 is what it was, even after an error inside
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


# ---- LiteRT's products and steps, read from the file --------------------------------------


def test_a_litert_products_flop_is_two_multiply_adds_per_output_element_and_depth():
    litert = pytest.importorskip("fwbench.runtimes.litert")
    dense = litert.Product("FULLY_CONNECTED", 0, 1, 2)
    assert dense.flop({0: (8, 64), 1: (32, 64), 2: (8, 32)}) == 2 * 8 * 32 * 64
    conv = litert.Product("CONV_2D", 0, 1, 2)  # filter OHWI
    assert conv.flop({0: (2, 10, 10, 8), 1: (16, 3, 3, 8), 2: (2, 10, 10, 16)}) == (
        2 * (2 * 10 * 10 * 16) * (3 * 3 * 8)
    )
    scores = litert.Product("BATCH_MATMUL", 0, 1, 2, adjoint=True)  # contracts axis -2
    assert scores.flop({0: (2, 5, 7), 1: (2, 5, 9), 2: (2, 7, 9)}) == 2 * (2 * 7 * 9) * 5


def test_a_dynamic_step_is_half_the_step_the_kernel_takes_for_each_row_over_the_rms():
    litert = pytest.importorskip("fwbench.runtimes.litert")
    rows = np.array([[1.0, -1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0]])  # a zero row is exact
    rms = math.sqrt((1 + 1 + 0.25) / 4)
    assert litert._dynamic_step(rows, asymmetric=True) == pytest.approx((2 / 255) / (2 * rms))
    assert litert._dynamic_step(rows, asymmetric=False) == pytest.approx((1 / 127) / (2 * rms))
    dense = litert.Product("FULLY_CONNECTED", 0, 1, 2)
    assert dense.rows(np.zeros((2, 3, 4)), {0: (2, 3, 4)}).shape == (6, 4)  # per dot product
    conv = litert.Product("CONV_2D", 0, 1, 2)
    assert conv.rows(np.zeros((2, 5, 5, 3)), {0: (2, 5, 5, 3)}).shape == (2, 75)  # per image


def test_a_stored_step_centres_each_channel_on_its_zero_point():
    """As LiteRT stores a weight: zero points per channel of its quantized dimension."""
    q = np.array([[1, 3], [-2, 2]], np.int8)
    assert integer_step(q, np.array([1, 0]), 0) == pytest.approx(1 / (2 * math.sqrt(3)))
    assert integer_step(q, np.array([0, 0]), 1) == pytest.approx(1 / (2 * math.sqrt(18 / 4)))


# ---- end to end: export job, checks, cell ---------------------------------------------------


def quantized_path(workdir: str, framework: str, mode: str, precision: str) -> None:
    """The quantized export job (an export mode's), the checks' row for it and a timed cell at
    batch 4, as the workflow runs them; done.json holds the manifest's path and the rows."""
    from fwbench import frameworks
    from fwbench.measure import checks
    from fwbench.measure.bench import run_cell

    root = Path(workdir)
    plan = plan_of(
        {
            "frameworks": [framework],
            "modes": {framework: ["eager", mode]},
            "architectures": ["mlp"],
            "dims": {"mlp": MLP},
            "batch_sizes": [4],
            "bench": {"warmup": 1, "repeats": 3, "min_sample_s": 0.0, "processes": 1},
            "precision": {"low": [precision], "batches": [4]},
        }
    )
    wildcards = {"system": "local", "framework": framework, "mode": mode, "arch": "mlp"}
    tag = paths.precision_tag(precision)
    wildcards |= {"version": plan.version("local", framework), "precision_tag": tag}
    if frameworks.is_export_mode(framework, mode):
        manifest = export_and_run_cell(plan, wildcards, 4, root)
        artifacts = checks.artifacts_by_cell([str(manifest)])
    else:  # quantized in the cell itself
        request = plan.cell_request(wildcards | {"batch": 4})
        request.lock, manifest, artifacts = str(root / "lock"), None, {}
        run_cell(request, root / "b4.nc")
    rows = checks.equivalence_rows(
        framework=framework,
        archs=["mlp"],
        dims={"mlp": MLP},
        seed=0,
        batch=4,
        tolerance=1e-4,
        modes=[mode],
        artifacts=artifacts,
        precisions={"mlp": {mode: [precision]}},
    )
    done = {"manifest": str(manifest), "rows": rows}
    (root / "done.json").write_text(json.dumps(done, default=str))


# What each quantized path's manifest and kernel evidence say of its quantization.
QUANTIZED_BY = {
    ("onnxrt", INT8): ("quantize_dynamic", "ONNX Runtime's profile"),
    ("onnxrt", INT8_STATIC): ("quantize_static", "ONNX Runtime's profile"),
    ("litert", INT8): ("dynamic-range quantization", "the .tflite file's matrix products"),
    ("litert", INT8_STATIC): ("full-integer quantization", "the .tflite file's matrix products"),
    ("aoti", INT8_STATIC): ("quantized by PT2E", "oneDNN's verbose log"),
    ("compiled", INT8_STATIC): (None, "oneDNN's verbose log"),
}


@pytest.mark.parametrize(
    "framework, mode, precision",
    [
        ("torch", "onnxrt", INT8),  # tensorflow's onnxrt: the same quantizer, test_runtimes' export
        ("tensorflow", "litert", INT8),
        ("torch", "onnxrt", INT8_STATIC),
        ("tensorflow", "litert", INT8_STATIC),
        ("torch", "aoti", INT8_STATIC),
        ("torch", "compiled", INT8_STATIC),
    ],
)
def test_a_quantized_path_checks_within_its_bound_and_runs_int8_products(
    tmp_path, framework, mode, precision
):
    args = (str(tmp_path), framework, mode, precision)
    in_fresh_process("test_quantize", "quantized_path", *args)
    done = json.loads((tmp_path / "done.json").read_text())
    how, evidence = QUANTIZED_BY[mode, precision]
    cell = read_cell(tmp_path / "b4.nc")
    assert cell.attrs["status"] == "ok", cell.attrs.get("error_message")
    if mode == "compiled":  # PT2E in the cell, then torch.compile with freezing
        settings = json.loads(cell.attrs["compile_details"])["settings"]
        assert settings["quantization"]["quantize_s"] > 0 and settings["inductor_freezing"]
        manifest = None
    else:
        manifest = read_manifest(done["manifest"])
        assert manifest["status"] == "ok", manifest.get("error_message")
        assert manifest["precision"] == precision and how in manifest["how"]
    if mode == "onnxrt":  # a job step of its own; LiteRT's converter quantizes as it converts
        assert manifest["quantize_s"] > 0
        assert manifest["details"]["quantization"]["integer_products"]
    if mode == "aoti":  # PT2E in the export job, before AOTInductor packages the result
        assert manifest["details"]["quantization"]["quantize_s"] > 0
    if precision == INT8_STATIC and manifest:  # the seeded set, never the check's input
        assert manifest["calibration"]["seed"] == 0 and manifest["calibration"]["batches"] > 0
    assert float(cell["low_precision_share"]) > 0.9, cell.attrs["kernel_precision"]
    assert evidence in cell.attrs["kernel_precision"]
    (row,) = [row for row in done["rows"] if row["precision"] == precision]
    assert row["pass"], {k: row[k] for k in ("max_rel_err", "bound", "basis")}  # its own scales
    assert "scales" in row["basis"] and row["max_rel_err"] < row["bound"] < 0.5
    assert row["max_rel_err"] > 1e-4  # the quantization's error, beyond float32's tolerance
    print(framework, mode, row["max_rel_err"], row["bound"], cell.attrs["kernel_precision"])


@pytest.mark.torch
def test_torchs_onnx_export_annotates_shapes_that_quantize_dynamic_refuses(tmp_path):
    """The workaround in runtimes.onnxrt.without_shape_annotations: fails (and so flags it)
    once torch's exporter writes annotations ONNX's strict shape inference accepts."""
    pytest.importorskip("onnxruntime")
    in_fresh_process("test_quantize", "quantize_raw_torch_export", str(tmp_path))
    assert "Inferred shape and existing shape differ" in (tmp_path / "error.txt").read_text()


def quantize_raw_torch_export(workdir: str) -> None:
    from onnxruntime.quantization import quantize_dynamic

    from fwbench.model.weights import make_weights

    spec = build_spec("mlp", MLP)
    frameworks.load("torch").set_threads(1)
    exported = frameworks.load("torch", frameworks.EXPORT_PART).export(
        spec, make_weights(spec, 0), "onnxrt", "cpu", str(Path(workdir) / "mlp")
    )
    try:
        quantize_dynamic(exported.file, str(Path(workdir) / "int8.onnx"))
        error = "quantized without the workaround"
    except Exception as raised:
        error = f"{type(raised).__name__}: {raised}"
    (Path(workdir) / "error.txt").write_text(error)


# ---- torch's PT2E ---------------------------------------------------------------------------


def _captured_same_conv():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchao")
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding="same"), torch.nn.ReLU()).eval()
    example = torch.zeros(2, 3, 6, 6)
    batch = torch.export.Dim("batch", min=1)
    captured = torch.export.export(conv, (example,), dynamic_shapes=({0: batch},)).module()
    return torch, conv, captured


@pytest.mark.torch
def test_torchaos_x86_quantizer_refuses_a_same_padded_convolution_that_explicit_padding_fixes():
    """The behaviour frameworks.torch.quantize.explicit_same_padding works around: when this
    quantizer takes aten.conv2d.padding, the first assertion fails and the workaround goes."""
    torch, conv, captured = _captured_same_conv()
    import torchao.quantization.pt2e.quantizer.x86_inductor_quantizer as x86

    from fwbench.frameworks.torch.quantize import explicit_same_padding

    quantizer = x86.X86InductorQuantizer()
    quantizer.set_global(x86.get_default_x86_inductor_quantization_config())
    with pytest.raises(ValueError, match="is not an aten conv2d operator"):
        quantizer.annotate(captured)
    torch, conv, captured = _captured_same_conv()
    x = torch.randn(5, 3, 6, 6)
    rewritten = explicit_same_padding(captured)
    targets = {node.target for node in rewritten.graph.nodes}
    assert torch.ops.aten.conv2d.default in targets
    assert torch.ops.aten.conv2d.padding not in targets
    torch.testing.assert_close(rewritten(x), conv(x))  # the same function
    quantizer.annotate(rewritten)  # and the quantizer takes it
