"""What every framework's adapter does, checked alike for torch, jax and tensorflow: it computes
the float64 reference function in every mode, says truly whether it compiled, follows the
protocols of fwbench.frameworks.protocols, rejects what it cannot run by name, and loads no
other framework.

What only one framework has is in tests/test_<framework>_extras.py. A framework that is not
installed skips its cases.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.frameworks.base import BaseRunner
from fwbench.frameworks.protocols import (
    CompileInfo,
    ExportAdapter,
    HardwareProbe,
    InferenceAdapter,
    Runner,
    StreamProbe,
    TrainingAdapter,
)
from fwbench.host.harness import time_calls
from fwbench.model import reference
from fwbench.model.specs import ARCHITECTURES, build_spec
from fwbench.model.weights import make_input, make_weights

from adapter_cases import (
    BATCH,
    FRAMEWORK_MODULES,
    FRAMEWORKS,
    SMALL_DIMS,
    TOLERANCE,
    adapter,
    build_runner,
    fresh_process,
    run,
    small_run,
    small_runner,
)
from conftest import layer_of

pytestmark = pytest.mark.per_framework

MODES = frameworks.MODES
# The (framework, arch, mode) a deployment path cannot convert, with the converter's message:
# LiteRT's builtin ops have no dynamic-length recurrence (the Keras RNN's TensorList), so the
# TFLite converter asks for Flex ops, which fwbench does not enable (test below).
UNSUPPORTED = {
    ("tensorflow", arch, "litert"): "TensorListReserve.*requires element_shape to be static"
    for arch in ("rnn", "lstm")
}
CASES = [
    (fw, arch, mode)
    for fw in FRAMEWORKS
    for arch in ARCHITECTURES
    for mode in MODES[fw]
    if (fw, arch, mode) not in UNSUPPORTED
]
# Default dims are the benchmark's sizes: run in the one mode each framework's old suite used,
# because compiling every one of them would take minutes here.
DEFAULT_DIMS_MODE = {"torch": "eager", "jax": "jit", "tensorflow": "eager"}
FOREIGN_MODE = {"torch": "jit", "jax": "compiled", "tensorflow": "jit"}
# Where each framework's set_threads reports the intra-op thread count it applied.
THREADS_KEY = {
    "torch": "torch.num_threads",
    "jax": "requested",
    "tensorflow": "intra_op_parallelism_threads",
}
PACKAGES = Path(frameworks.__file__).parent
# beyond the PARTS every package has (cache_seed: the host probe, FrameworkInfo.cache_seed_module)
EXTRA_MODULES = {"torch": {"compile_info.py", "quantize.py", "cache_seed.py"}}
INTERFACES = {"infer": InferenceAdapter, "train": TrainingAdapter, "hardware": HardwareProbe}


@functools.cache
def _torch_on_one_thread() -> None:
    adapter("torch").set_threads(1)


@pytest.fixture(autouse=True)
def torch_on_one_thread(request) -> None:
    """Run torch on one thread, as a one-thread benchmark job does, in torch's layer (a test of
    another layer imports no torch). (TF accepts its thread settings only before its first op,
    so its set_threads is checked in a fresh process.)"""
    if layer_of(request.node) == "torch" and importlib.util.find_spec("torch"):
        _torch_on_one_thread()


def _parameters(function: Any) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def _methods(protocol: type) -> list[str]:
    """The methods a protocol class and its protocol bases declare."""
    return [
        name
        for cls in protocol.__mro__
        if cls.__module__ == "fwbench.frameworks.protocols"
        for name, value in vars(cls).items()
        if inspect.isfunction(value) and (not name.startswith("_") or name == "__call__")
    ]


def _assert_provides(implementation: Any, protocol: type) -> None:
    """`implementation` has every member of `protocol`, each method with its parameters."""
    assert isinstance(implementation, protocol), f"{implementation!r} is no {protocol.__name__}"
    for name in _methods(protocol):
        assert _parameters(getattr(implementation, name)) == _parameters(getattr(protocol, name))


# ---- the package -----------------------------------------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_framework_package_holds_the_same_modules(framework: str) -> None:
    names = {path.name for path in (PACKAGES / framework).glob("*.py")}
    expected = {"__init__.py"} | {f"{part}.py" for part in frameworks.PARTS}
    if frameworks.FRAMEWORKS[framework].export_modes:
        expected.add(f"{frameworks.EXPORT_PART}.py")
    assert names - EXTRA_MODULES.get(framework, set()) == expected


@pytest.mark.parametrize("part", list(INTERFACES))
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_module_of_a_framework_package_provides_its_interface(
    framework: str, part: str
) -> None:
    pytest.importorskip(framework)
    _assert_provides(frameworks.load(framework, part), INTERFACES[part])


@pytest.mark.parametrize(
    "framework", [fw for fw in FRAMEWORKS if frameworks.FRAMEWORKS[fw].export_modes]
)
def test_a_framework_with_export_modes_has_an_export_adapter(framework: str) -> None:
    pytest.importorskip(framework)
    _assert_provides(frameworks.load(framework, frameworks.EXPORT_PART), ExportAdapter)


@pytest.mark.parametrize(
    "framework", [fw for fw in FRAMEWORKS if not frameworks.FRAMEWORKS[fw].export_modes]
)
def test_a_framework_without_export_modes_has_no_export_part(framework: str) -> None:
    with pytest.raises(ValueError, match=f"{framework} has no export modes"):
        frameworks.load(framework, frameworks.EXPORT_PART)


@pytest.mark.parametrize(
    "framework", [fw for fw in FRAMEWORKS if frameworks.FRAMEWORKS[fw].stream_probe]
)
def test_a_framework_said_to_run_stream_has_a_stream_probe(framework: str) -> None:
    pytest.importorskip(framework)
    _assert_provides(frameworks.load(framework, "hardware"), StreamProbe)


def test_load_refuses_an_unknown_framework_or_part_naming_it() -> None:
    with pytest.raises(ValueError, match="'mxnet'"):
        frameworks.load("mxnet")
    with pytest.raises(ValueError, match="'kernels'"):
        frameworks.load("torch", "kernels")


# ---- the reference function ------------------------------------------------------------------


@pytest.mark.parametrize(("framework", "arch", "mode"), CASES)
def test_every_mode_computes_the_reference_function_on_small_dims(
    framework: str, arch: str, mode: str
) -> None:
    result = small_run(framework, arch, mode)
    assert isinstance(result.output, np.ndarray)
    assert result.output.dtype == np.float32
    assert result.output.shape == result.expected.shape == (BATCH, result.expected.shape[1])
    assert result.relative_error <= TOLERANCE, f"normwise relative error {result.relative_error}"


@pytest.mark.parametrize(("framework", "arch", "mode"), sorted(UNSUPPORTED))
def test_a_path_that_cannot_convert_a_model_raises_the_converters_reason(
    framework: str, arch: str, mode: str
) -> None:
    # Fails (and so flags the table above) once the converter learns the model.
    with pytest.raises(Exception, match=UNSUPPORTED[(framework, arch, mode)]):
        small_run(framework, arch, mode)


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_default_dims_compute_the_reference_function(framework: str, arch: str) -> None:
    spec = build_spec(arch)
    result = run(framework, arch, DEFAULT_DIMS_MODE[framework], None)
    assert result.output.shape == (BATCH, spec.classes)
    assert result.relative_error <= TOLERANCE, f"normwise relative error {result.relative_error}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_wrong_weight_changes_the_output_beyond_tolerance(framework: str) -> None:
    """The equivalence check can fail: swapping the input and forget gates of the first LSTM
    layer (a plausible layout bug) is caught."""
    spec = build_spec("lstm", SMALL_DIMS["lstm"])
    weights = make_weights(spec)
    hidden = spec.hidden
    w_ih = weights["layer0.W_ih"].copy()
    w_ih[:, :hidden], w_ih[:, hidden : 2 * hidden] = w_ih[:, hidden : 2 * hidden], w_ih[:, :hidden]
    runner, x = small_runner(framework, "lstm", weights=weights | {"layer0.W_ih": w_ih})
    output = runner.to_numpy(runner(runner.prepare(x)))
    _, relative = reference.max_errors(output, reference.forward(spec, weights, x))
    assert relative > TOLERANCE


@pytest.mark.parametrize("arch", ["cnn", "lstm"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_outputs_keep_the_batch_order(framework: str, arch: str) -> None:
    """Layout conversions (NHWC, time-major) must not mix samples: each row of a batch-3 call
    equals that sample run alone (in the first compiled mode)."""
    runner, x = small_runner(framework, arch, MODES[framework][1], batch=3)
    together = runner.to_numpy(runner(runner.prepare(x)))
    alone = [runner.to_numpy(runner(runner.prepare(x[i : i + 1])))[0] for i in range(3)]
    np.testing.assert_allclose(together, np.stack(alone), rtol=1e-5, atol=1e-6)


EXPORT_CASES = [(fw, m) for fw in FRAMEWORKS for m in frameworks.FRAMEWORKS[fw].export_modes]


@pytest.mark.parametrize(("framework", "mode"), EXPORT_CASES)
def test_an_artifact_takes_any_batch(framework: str, mode: str) -> None:
    """An artifact is exported once per architecture (a dynamic batch dimension) and serves
    every batch of the sweep: batches 1 and 5 compute the reference function."""
    spec = build_spec("cnn", SMALL_DIMS["cnn"])
    weights = make_weights(spec)
    runner = build_runner(framework, spec, weights, mode, "cpu")
    for batch in (1, 5):
        x = make_input(spec, batch)
        output = runner.to_numpy(runner(runner.prepare(x)))
        _, relative = reference.max_errors(output, reference.forward(spec, weights, x))
        assert output.shape == (batch, spec.classes) and relative <= TOLERANCE, relative


@pytest.mark.parametrize(("framework", "mode"), EXPORT_CASES)
def test_an_export_mode_needs_its_artifact_and_other_modes_refuse_one(
    framework: str, mode: str, tmp_path: Path
) -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    missing = str(tmp_path / "missing.bin")
    with pytest.raises(FileNotFoundError, match=re.escape(f"{framework}/{mode} needs its")):
        adapter(framework).build(spec, None, mode, "cpu", artifact=missing)
    (tmp_path / "some.bin").write_bytes(b"0")
    with pytest.raises(ValueError, match="is no export mode and takes no artifact"):
        adapter(framework).build(
            spec, make_weights(spec), "eager", "cpu", artifact=str(tmp_path / "some.bin")
        )


# ---- what the runner says about itself -------------------------------------------------------


@pytest.mark.parametrize(("framework", "arch", "mode"), CASES)
def test_compile_info_says_compiled_exactly_in_the_compiled_modes(
    framework: str, arch: str, mode: str
) -> None:
    info = small_run(framework, arch, mode).compile_info
    assert isinstance(info, CompileInfo)
    assert info.how
    if mode == "eager":
        assert not info.compiled
        assert info.graph_count == 0
    else:
        assert info.compiled, info
        assert info.graph_count == 1, info  # after two calls: the second reused the graph
    assert (info.graph_breaks, info.fallbacks) == (0, 0), info


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_adapter_and_its_runner_follow_the_protocols(framework: str) -> None:
    module = adapter(framework)
    _assert_provides(module, InferenceAdapter)
    assert module.COUNTER_SCOPE in ("matmul", "all")
    result = small_run(framework, "mlp", "eager")
    _assert_provides(result.runner, Runner)
    assert result.runner.sync(result.runner(result.prepared)) is None


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_counter_flops_gives_a_count_and_how_or_none_and_why(framework: str, arch: str) -> None:
    runner, x = small_runner(framework, arch)
    flops, note = runner.counter_flops(runner.prepare(x))
    assert isinstance(note, str) and note
    assert flops is None or (isinstance(flops, float) and flops > 0), (flops, note)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_counter_flops_leaves_the_compiled_callable_alone(framework: str) -> None:
    """The counter traces or runs the forward apart: the runner still holds one graph."""
    runner, x = small_runner(framework, "mlp", MODES[framework][1])
    prepared = runner.prepare(x)
    runner.sync(runner(prepared))
    runner.counter_flops(prepared)
    runner.sync(runner(prepared))
    info = runner.compile_info()
    assert info.compiled and info.graph_count == 1, info


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_peak_device_memory_is_none_on_cpu(framework: str) -> None:
    assert small_run(framework, "mlp", "eager").runner.peak_device_memory_bytes() is None


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_null_call_adds_one_to_a_one_element_tensor_and_is_cheap(framework: str) -> None:
    adapter = frameworks.load(framework)
    null = adapter.null_call("cpu")
    with null.context():
        output = null.call()
        null.sync(output)
    assert np.asarray(output).reshape(-1).tolist() == [1.0]
    timing = time_calls(
        null.call, null.sync, warmup=5, repeats=50, quiet_probe_s=0.0, context=null.context
    )
    # a dispatch floor, not a model: far below a millisecond on any machine that runs the suite
    assert 0 < np.median(timing.latency_s) < 1e-3


# ---- what the adapter refuses ----------------------------------------------------------------


@pytest.mark.parametrize(
    "framework", [fw for fw in FRAMEWORKS if not frameworks.takes_compile_options(fw)]
)
def test_frameworks_without_compile_options_refuse_them_naming_them(framework: str) -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    message = f"{framework} modes take no compile options, got ['freezing']"
    with pytest.raises(ValueError, match=re.escape(message)):
        adapter(framework).build(spec, make_weights(spec), "eager", "cpu", {"freezing": True})


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_unknown_mode_raises_naming_it(framework: str) -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    mode = FOREIGN_MODE[framework]
    message = f"mode '{mode}' does not exist for {framework}; its modes: "
    with pytest.raises(ValueError, match=re.escape(message)):
        adapter(framework).build(spec, make_weights(spec), mode, "cpu")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_unknown_device_raises_the_same_message_naming_it(framework: str) -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match=re.escape("unknown device 'tpu'; known: cpu, cuda")):
        adapter(framework).build(spec, make_weights(spec), "eager", "tpu")
    with pytest.raises(ValueError, match=re.escape("unknown device 'tpu'; known: cpu, cuda")):
        adapter(framework).null_call("tpu")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_cuda_without_a_visible_gpu_is_the_same_error_naming_framework_and_device(
    framework: str,
) -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    try:
        adapter(framework).build(spec, make_weights(spec), "eager", "cuda")
    except RuntimeError as error:
        assert re.fullmatch(
            rf"device 'cuda' requested but {framework} \S+ sees no CUDA device", str(error)
        ), error
    else:
        pytest.skip(f"{framework} sees a GPU here")


@pytest.mark.parametrize(
    ("arch", "shape"),
    [("cnn", (2, 8, 8, 3)), ("mlp", (2, 21))],  # the CNN input in NHWC, not NCHW; one too wide
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_input_of_the_wrong_shape_raises_the_same_message_naming_both_shapes(
    framework: str, arch: str, shape: tuple[int, ...]
) -> None:
    runner, x = small_runner(framework, arch)
    message = f"{arch} input must be float32 of shape {x.shape}, got float32 of shape {shape}"
    with pytest.raises(ValueError, match=re.escape(message)):
        runner.prepare(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_input_of_another_dtype_raises_the_same_message_naming_it(framework: str) -> None:
    runner, x = small_runner(framework, "mlp")
    message = f"mlp input must be float32 of shape {x.shape}, got float64 of shape {x.shape}"
    with pytest.raises(ValueError, match=re.escape(message)):
        runner.prepare(x.astype(np.float64))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_runner_is_built_on_the_shared_base(framework: str) -> None:
    runner, _ = small_runner(framework, "mlp")
    assert isinstance(runner, BaseRunner)
    assert framework == runner.FRAMEWORK


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_set_threads_rejects_a_non_positive_count_naming_it(framework: str) -> None:
    with pytest.raises(ValueError, match="0"):
        adapter(framework).set_threads(0)
    with pytest.raises(ValueError, match="True"):
        adapter(framework).set_threads(True)


# ---- a fresh process, as a benchmark job runs it ---------------------------------------------


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_fwbench_frameworks_itself_imports_no_framework(framework: str) -> None:
    assert fresh_process(framework)["before_import"] == []


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_importing_and_running_the_adapter_loads_only_its_own_framework(framework: str) -> None:
    report = fresh_process(framework)
    for stage in ("after_import", "after_run"):
        assert framework in report[stage]
        assert set(report[stage]) <= FRAMEWORK_MODULES[framework], report


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_set_threads_before_the_first_op_returns_the_count_it_set(framework: str) -> None:
    assert fresh_process(framework)["threads"][THREADS_KEY[framework]] == 1
