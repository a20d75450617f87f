"""Precision bfloat16 in the framework adapters: every mode that runs it (frameworks.
mode_precisions) really computes in bf16 (its weights, dtype policy or artifact say so), and its
output, returned as float32, is within a loose bound of the float64 reference and is not the
float32 runner's; a precision a mode does not run is refused by name before anything is built;
where ONNX Runtime has no bf16 kernel its own error reaches the caller unchanged.

A framework that is not installed skips its cases.
"""

from __future__ import annotations

import functools
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks import BFLOAT16, FLOAT32, INT8, INT8_STATIC, PRECISIONS, kernel_precision
from fwbench.frameworks.kernel_precision import FLOP, KERNEL_TIME
from fwbench.model import reference
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights
from fwbench.precisions import QUANTIZED

from adapter_cases import BATCH, SMALL_DIMS, TOLERANCE, adapter, mode_adapter, small_run

pytestmark = pytest.mark.per_framework

# Normwise relative error against float64 that a bf16 run (8-bit mantissa) stays within here;
# a float32 run stays within TOLERANCE, so an error above that shows the run was not float32.
BF16_TOLERANCE = 0.1
BF16_MODES = {
    "torch": ("eager", "compiled", "aoti", "onnxrt"),
    "jax": ("eager", "jit", "export"),
    "tensorflow": ("eager", "function", "xla", "onnxrt"),
}
# The (framework, mode, arch) runs checked against the reference. ONNX Runtime's CPU provider
# has no bf16 kernels, so the onnxrt modes are checked apart (below); an AOTInductor package
# takes ~13 s to compile.
CASES = [
    *[("torch", mode, arch) for mode in ("eager", "compiled") for arch in ("mlp", "cnn")],
    ("torch", "eager", "transformer"),
    ("torch", "aoti", "mlp"),
    *[
        (fw, mode, arch)
        for fw in ("jax", "tensorflow")
        for mode in BF16_MODES[fw]
        if mode != "onnxrt"
        for arch in ("mlp", "cnn", "transformer")
    ],
]
# The bf16 modes whose runner builds the model from the weights (an export mode's artifact holds
# its own).
BUILT_MODES = [
    (fw, mode)
    for fw, modes in BF16_MODES.items()
    for mode in modes
    if not frameworks.is_export_mode(fw, mode)
]


@dataclass(frozen=True)
class Bf16Run:
    runner: Any
    raw: Any  # the call's own output, before to_numpy
    output: np.ndarray
    relative_error: float  # normwise, against the float64 reference


def _artifact(framework: str, mode: str, arch: str, precision: str, directory: str) -> str:
    """`arch` on SMALL_DIMS exported for `mode` in `precision` into `directory`."""
    spec = build_spec(arch, SMALL_DIMS[arch])
    exported = frameworks.load(framework, frameworks.EXPORT_PART).export(
        spec, make_weights(spec), mode, "cpu", os.path.join(directory, arch), precision=precision
    )
    assert exported.details["precision"] == precision
    return exported.file


def _runner(framework: str, mode: str, arch: str, precision: str) -> Any:
    """The mode's runner of `arch` on SMALL_DIMS (the weights small_run's model holds) in
    `precision`; an export mode's from an artifact exported in that precision first."""
    spec = build_spec(arch, SMALL_DIMS[arch])
    if not frameworks.is_export_mode(framework, mode):
        return adapter(framework).build(spec, make_weights(spec), mode, "cpu", precision=precision)
    loaded = mode_adapter(framework, mode)  # skips where the framework is not installed
    directory = tempfile.mkdtemp(prefix=f"fwbench-test-{framework}-{mode}-{precision}-")
    artifact = _artifact(framework, mode, arch, precision, directory)
    return loaded.build(spec, None, mode, "cpu", artifact=artifact, precision=precision)


@functools.cache
def bf16_run(framework: str, mode: str, arch: str) -> Bf16Run:
    """A bfloat16 runner called twice on small_run's input (the second call is the one kept)."""
    spec = build_spec(arch, SMALL_DIMS[arch])
    x = make_input(spec, BATCH)
    runner = _runner(framework, mode, arch, BFLOAT16)
    prepared = runner.prepare(x)
    runner.sync(runner(prepared))
    raw = runner(prepared)
    runner.sync(raw)
    output = runner.to_numpy(raw)
    expected = reference.forward(spec, make_weights(spec), x)
    return Bf16Run(runner, raw, output, reference.max_errors(output, expected)[1])


def _weight_dtypes(framework: str, runner: Any) -> set[str]:
    """The dtypes the runner holds its weights in; for Keras with every layer's policy's
    compute and variable dtypes."""
    if framework == "torch":
        return {str(p.dtype).removeprefix("torch.") for p in runner.module.parameters()}
    if framework == "jax":
        return {str(p.dtype) for p in runner.params.values()}
    model = runner._model
    policies = [layer.dtype_policy for layer in model.layers]
    return {w.dtype for w in model.weights} | {
        dtype for p in policies for dtype in (p.compute_dtype, p.variable_dtype)
    }


# ---- the registry ----------------------------------------------------------------------------


def test_each_mode_runs_float32_and_the_precisions_its_framework_names_for_it():
    assert PRECISIONS == (FLOAT32, BFLOAT16, INT8, INT8_STATIC)
    assert PRECISIONS == ("float32", "bfloat16", "int8", "int8_static")
    for framework, modes in frameworks.MODES.items():
        for mode in modes:
            expected = ("float32", "bfloat16") if mode in BF16_MODES[framework] else ("float32",)
            precisions = frameworks.mode_precisions(framework, mode)
            floats = tuple(p for p in precisions if p not in QUANTIZED)
            assert floats == expected, (framework, mode)
    assert frameworks.mode_precisions("tensorflow", "litert") == ("float32", "int8", "int8_static")
    assert frameworks.mode_precisions("torch", "compiled_max_autotune") == (
        "float32",
        "bfloat16",
        "int8_static",
    )


def test_each_deployment_path_s_first_quantization_is_the_one_its_users_pick_first():
    # the default sweep's (config precision.quantization: first): the runtimes' dynamic
    # quantization, torch's PT2E (static only); a mode that quantizes nothing has none
    first = {
        (framework, mode): frameworks.first_quantization(framework, mode)
        for framework, modes in frameworks.MODES.items()
        for mode in modes
        if frameworks.first_quantization(framework, mode)
    }
    assert first == {
        ("torch", "compiled"): INT8_STATIC,
        ("torch", "aoti"): INT8_STATIC,
        ("torch", "onnxrt"): INT8,
        ("tensorflow", "litert"): INT8,
        ("tensorflow", "onnxrt"): INT8,
    }
    assert frameworks.first_quantization("torch", "compiled_max_autotune") == INT8_STATIC
    assert frameworks.first_quantization("jax", "export") is None
    # the first among those a config names (precision.low)
    assert frameworks.first_quantization("torch", "onnxrt", among=[INT8_STATIC]) == INT8_STATIC
    assert frameworks.first_quantization("torch", "onnxrt", among=[BFLOAT16]) is None


def test_every_precision_a_framework_names_is_a_known_one_for_one_of_its_modes():
    for info in frameworks.FRAMEWORKS.values():
        assert set(info.precisions) <= set(info.modes), info.name
        for extras in info.precisions.values():
            assert set(extras) <= set(PRECISIONS) - {FLOAT32}, info.name


def test_check_precision_returns_it_or_raises_naming_it_the_mode_and_the_modes_precisions():
    assert frameworks.check_precision("jax", "export", "bfloat16") == "bfloat16"
    assert frameworks.check_precision("torch", "compiled_max", "bfloat16") == "bfloat16"
    message = "precision 'bfloat16' is not one of tensorflow/litert's: float32"
    with pytest.raises(ValueError, match=re.escape(message)):
        frameworks.check_precision("tensorflow", "litert", "bfloat16")
    message = "precision 'float16' is not one of torch/compiled_max's: float32, bfloat16"
    with pytest.raises(ValueError, match=re.escape(message)):
        frameworks.check_precision("torch", "compiled_max", "float16")
    with pytest.raises(ValueError, match="mode 'jit' does not exist for torch"):
        frameworks.check_precision("torch", "jit", "float32")


# ---- what a runner and an export refuse ------------------------------------------------------


@pytest.mark.parametrize("framework", list(frameworks.MODES))
def test_a_runner_refuses_a_precision_its_mode_does_not_run_before_building_anything(framework):
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    message = f"precision 'float16' is not one of {framework}/eager's: float32, bfloat16"
    with pytest.raises(ValueError, match=re.escape(message)):  # before the missing weights
        adapter(framework).build(spec, None, "eager", "cpu", precision="float16")


@pytest.mark.tensorflow
def test_litert_refuses_bfloat16_before_it_looks_for_an_artifact():
    pytest.importorskip("ai_edge_litert")
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    message = "precision 'bfloat16' is not one of tensorflow/litert's: float32"
    with pytest.raises(ValueError, match=re.escape(message)):
        mode_adapter("tensorflow", "litert").build(spec, None, "litert", "cpu", precision=BFLOAT16)


@pytest.mark.tensorflow
def test_an_export_refuses_a_precision_its_mode_does_not_run_and_writes_nothing(tmp_path):
    pytest.importorskip("tensorflow")
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    exporter = frameworks.load("tensorflow", frameworks.EXPORT_PART)
    message = "precision 'bfloat16' is not one of tensorflow/litert's: float32"
    with pytest.raises(ValueError, match=re.escape(message)):
        exporter.export(spec, make_weights(spec), "litert", "cpu", str(tmp_path / "m"), BFLOAT16)
    assert list(tmp_path.iterdir()) == []


# ---- bfloat16 runs ---------------------------------------------------------------------------


@pytest.mark.parametrize(("framework", "mode"), BUILT_MODES)
def test_a_bf16_runner_holds_its_weights_in_bf16(framework, mode):
    result = bf16_run(framework, mode, "mlp")
    assert _weight_dtypes(framework, result.runner) == {"bfloat16"}
    assert result.runner.precision == BFLOAT16
    if framework == "tensorflow":  # the policy was Keras's while the model was built, only
        import keras

        assert keras.config.dtype_policy().name == "float32"


@pytest.mark.parametrize(("framework", "mode", "arch"), CASES)
def test_a_bf16_run_computes_the_reference_loosely_in_bf16_and_returns_float32(
    framework, mode, arch
):
    result = bf16_run(framework, mode, arch)
    assert "bfloat16" in str(result.raw.dtype)  # the call's own output, exported modes' too
    assert result.output.dtype == np.float32
    assert result.output.shape == (BATCH, build_spec(arch, SMALL_DIMS[arch]).classes)
    assert TOLERANCE < result.relative_error <= BF16_TOLERANCE, result.relative_error
    assert not np.array_equal(result.output, small_run(framework, arch, mode).output)


@pytest.mark.jax
def test_a_jax_export_in_bf16_takes_a_bf16_argument():
    result = bf16_run("jax", "export", "mlp")
    from jax import export as jax_export

    exported = jax_export.deserialize(bytearray(Path(result.runner.artifact).read_bytes()))
    assert [str(aval.dtype) for aval in exported.in_avals] == ["bfloat16"]


# ---- ONNX Runtime ----------------------------------------------------------------------------


def _onnx_input_type(path: str) -> int:
    import onnx

    return onnx.load(path).graph.input[0].type.tensor_type.elem_type


def _onnxrt_refusal(framework: str, arch: str, directory: Path) -> tuple[str, BaseException]:
    """A bf16 artifact for onnxrt and the error building its runner raised."""
    loaded = mode_adapter(framework, "onnxrt")
    artifact = _artifact(framework, "onnxrt", arch, BFLOAT16, str(directory))
    spec = build_spec(arch, SMALL_DIMS[arch])
    with pytest.raises(Exception) as error:
        loaded.build(spec, None, "onnxrt", "cpu", artifact=artifact, precision=BFLOAT16)
    assert type(error.value).__module__.startswith("onnxruntime"), repr(error.value)
    return artifact, error.value


@pytest.mark.torch
@pytest.mark.parametrize(
    ("arch", "message"),
    [
        ("mlp", "NOT_IMPLEMENTED : Could not find an implementation for Gemm(13)"),
        ("cnn", "Type 'tensor(bfloat16)' of input parameter (x) of operator (Conv)"),
    ],
)
def test_torch_exports_bf16_onnx_that_onnx_runtimes_cpu_provider_refuses_in_its_own_words(
    arch, message, tmp_path
):
    # Fails (and so flags this) once ONNX Runtime's CPU provider, or ONNX's Conv, takes bf16.
    onnx = pytest.importorskip("onnx")
    artifact, error = _onnxrt_refusal("torch", arch, tmp_path)
    assert _onnx_input_type(artifact) == onnx.TensorProto.BFLOAT16
    assert message in str(error), error


@pytest.mark.tensorflow
def test_tf2onnx_writes_a_bf16_input_as_float16_which_onnx_runtime_refuses_in_its_own_words(
    tmp_path,
):
    # tf2onnx 1.17 maps TF's bfloat16 to ONNX's FLOAT16 (tf_utils), the weights stay BFLOAT16:
    # fails (and so flags this) once it writes bf16.
    onnx = pytest.importorskip("onnx")
    artifact, error = _onnxrt_refusal("tensorflow", "mlp", tmp_path)
    assert _onnx_input_type(artifact) == onnx.TensorProto.FLOAT16
    message = "bound to different types (tensor(float16) and tensor(bfloat16) in node"
    assert message in str(error), error


def _identity_model(path: Path, width: int, element: int) -> str:
    """An ONNX model whose output is its (batch, width) input, of ONNX element type `element`."""
    from onnx import helper, save

    x, y = (helper.make_tensor_value_info(n, element, ["batch", width]) for n in ("x", "y"))
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id", [x], [y])
    opset = [helper.make_opsetid("", 17)]
    save(helper.make_model(graph, opset_imports=opset, ir_version=8), str(path))
    return str(path)


@pytest.mark.torch
def test_an_onnx_runtime_runner_feeds_and_reads_bf16_and_its_profile_runs_the_same_call(
    tmp_path,
):
    """On a bf16 model ONNX Runtime's CPU provider runs (Identity): the input arrives rounded
    to bf16 and leaves as float32, also through the profiling twin; a float32 runner of the
    bf16 artifact fails with ONNX Runtime's own type error."""
    onnx = pytest.importorskip("onnx")
    import ml_dtypes

    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    artifact = _identity_model(tmp_path / "id.onnx", spec.input, onnx.TensorProto.BFLOAT16)
    loaded = mode_adapter("torch", "onnxrt")
    runner = loaded.build(spec, None, "onnxrt", "cpu", artifact=artifact, precision=BFLOAT16)
    x = make_input(spec, BATCH)
    prepared = runner.prepare(x)
    output = runner.to_numpy(runner(prepared))
    rounded = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    assert output.dtype == np.float32 and np.array_equal(output, rounded)
    assert not np.array_equal(output, x)
    trace = loaded.profile(lambda: [runner(prepared) for _ in range(3)], 3)
    assert trace.dispatches == 3 and trace.kernel_count() == 3  # one Identity node per run
    assert runner.session.run == runner.session.timed.run_with_ort_values
    float32 = loaded.build(spec, None, "onnxrt", "cpu", artifact=artifact)
    with pytest.raises(Exception, match=re.escape("Actual: (tensor(float))")):
        float32(float32.prepare(x))


# ---- did the low-precision kernels run (frameworks.kernel_precision) --------------------------

# What each mode's bf16 work computed in on a CPU, as its evidence reads it: XLA's CPU backend
# converts bf16 operands to f32 around its dots and convolutions (jax in every mode, and
# TensorFlow's xla); torch and TensorFlow's graph executor run bf16 kernels. A framework
# version that changes this fails here.
UPCAST_MODES = {("jax", "eager"), ("jax", "jit"), ("jax", "export"), ("tensorflow", "xla")}


@pytest.mark.parametrize(("framework", "mode", "arch"), CASES)
def test_a_bf16_cell_says_what_its_work_computed_in_and_flags_an_upcast(framework, mode, arch):
    run = bf16_run(framework, mode, arch)
    spec = build_spec(arch, SMALL_DIMS[arch])
    found = run.runner.kernel_precision(run.runner.prepare(make_input(spec, BATCH)))
    assert found.low == BFLOAT16 and found.basis in (KERNEL_TIME, FLOP)
    if (framework, mode) == ("torch", "aoti"):  # its generated kernels never reach the profiler
        # where inductor has a bf16 GEMM template (AMX, AVX-512 bf16) nothing is seen; on an
        # AVX2 CPU (Zen 3) it calls aten's mm, which the profiler sees in bf16
        assert not found.upcast() and "AOTInductor" in found.note()
        assert math.isnan(found.share) or found.share > 0.9, found.note()
        return
    assert found.upcast() == ((framework, mode) in UPCAST_MODES), found.note()
    if found.upcast():
        assert found.shares.get(FLOAT32, 0) > 0.5 and "ran instead: float32" in found.note()
        assert found.casts > 0  # the converts XLA inserted
    else:
        assert found.share >= 0.9, found.note()


@pytest.mark.torch
def test_a_large_bf16_gemm_is_found_in_bf16_and_the_same_gemm_forced_to_float32_is_flagged():
    torch = pytest.importorskip("torch")
    from fwbench.frameworks.torch.profiling import kernel_precision

    linear = torch.nn.Linear(1024, 1024).to(torch.bfloat16)
    x = torch.randn(256, 1024).to(torch.bfloat16)
    with torch.inference_mode():
        native = kernel_precision(lambda: linear(x), BFLOAT16)
        forced = kernel_precision(lambda: linear.float()(x.float()).to(torch.bfloat16), BFLOAT16)
    assert native.share == 1.0 and not native.upcast() and native.casts == 0
    assert forced.upcast() and forced.shares[FLOAT32] > 0.5 and forced.casts >= 1


def test_the_hlo_reader_types_each_product_by_its_operands_and_counts_its_flop():
    hlo = """HloModule m
%fused (param_0: bf16[8,16]) -> f32[8,16] {
  %param_0 = bf16[8,16]{1,0} parameter(0)
  ROOT %convert.1 = f32[8,16]{1,0} convert(%param_0)
}
ENTRY %main (a: bf16[8,16], b: bf16[16,4], c: f32[16,4]) -> f32[8,4] {
  %a = bf16[8,16]{1,0} parameter(0)
  %b = bf16[16,4]{1,0} parameter(1)
  %c = f32[16,4]{1,0} parameter(2)
  %low = bf16[8,4]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %up = f32[8,16]{1,0} fusion(%a), kind=kLoop, calls=%fused
  %wide = f32[8,4]{1,0} dot(f32[8,16]{1,0} %up, f32[16,4]{1,0} %c), lhs_contracting_dims={1}
  %x = bf16[1,8,8,3]{3,2,1,0} parameter(3)
  %k = bf16[3,3,3,5]{3,2,1,0} parameter(4)
  ROOT %conv = bf16[1,8,8,5]{3,2,1,0} convolution(%x, %k), dim_labels=b01f_01io->b01f
}
"""
    products, casts = kernel_precision.hlo_products(hlo)
    assert products == [
        ("bfloat16", 2 * 8 * 4 * 16),
        ("float32", 2 * 8 * 4 * 16),
        ("bfloat16", 2 * 64 * 5 * 27),
    ]
    assert casts == 1
    found = kernel_precision.of_hlo(hlo, BFLOAT16, "test")
    assert found.share == pytest.approx((1024 + 17280) / (2048 + 17280)) and not found.upcast()
