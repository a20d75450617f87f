"""The torch adapter computes the reference function in every mode and reports honestly."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fwbench import reference, specs  # noqa: E402
from fwbench.frameworks import MODES, CompileInfo, torch_infer  # noqa: E402
from fwbench.weights import make_input, make_weights  # noqa: E402

TOLERANCE = 1e-4  # normwise relative error, float32 against the float64 reference
BATCH = 2
SMALL_DIMS = {
    "mlp": {"input": 20, "hidden": [32]},
    "cnn": {"channels": 3, "height": 8, "width": 8, "conv_channels": [4, 8], "dense": [16]},
    "rnn": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "lstm": {"input": 8, "hidden": 16, "layers": 2, "seq_len": 5},
    "transformer": {"d_model": 16, "heads": 4, "ff": 32, "layers": 2, "seq_len": 6},
}
CASES = [(arch, mode) for arch in specs.ARCHITECTURES for mode in MODES["torch"]]
CUDA = torch.cuda.is_available()


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch_infer.set_threads(1)


@dataclass(frozen=True)
class Run:
    relative_error: float
    compile_info: CompileInfo


@functools.cache
def small_run(arch: str, mode: str, device: str = "cpu") -> Run:
    """Build, call twice on batch 2 (the second call is the steady state the benchmark times)
    and record; cached, so that each model is compiled once per test session."""
    spec = specs.build_spec(arch, SMALL_DIMS[arch])
    weights, x = make_weights(spec), make_input(spec, BATCH)
    runner = torch_infer.build(spec, weights, mode, device)
    prepared = runner.prepare(x)
    runner.sync(runner(prepared))
    output = runner(prepared)
    runner.sync(output)
    _, relative = reference.max_errors(runner.to_numpy(output), reference.forward(spec, weights, x))
    return Run(relative, runner.compile_info())


def small_runner(arch: str, mode: str = "eager") -> tuple[torch_infer.TorchRunner, np.ndarray]:
    spec = specs.build_spec(arch, SMALL_DIMS[arch])
    runner = torch_infer.build(spec, make_weights(spec), mode, "cpu")
    return runner, make_input(spec, BATCH)


@pytest.mark.parametrize(("arch", "mode"), CASES)
def test_output_matches_reference_on_small_dims(arch: str, mode: str) -> None:
    assert small_run(arch, mode).relative_error <= TOLERANCE


@pytest.mark.parametrize("arch", specs.ARCHITECTURES)
def test_output_matches_reference_with_default_dims_in_eager(arch: str) -> None:
    spec = specs.build_spec(arch)
    weights, x = make_weights(spec), make_input(spec, BATCH)
    runner = torch_infer.build(spec, weights, "eager", "cpu")
    output = runner.to_numpy(runner(runner.prepare(x)))
    assert output.shape == (BATCH, spec.classes)
    _, relative = reference.max_errors(output, reference.forward(spec, weights, x))
    assert relative <= TOLERANCE


def test_a_wrong_weight_changes_the_output_beyond_tolerance() -> None:
    """The equivalence check can fail: one transposed-gate mistake is caught."""
    spec = specs.build_spec("lstm", SMALL_DIMS["lstm"])
    weights, x = make_weights(spec), make_input(spec, BATCH)
    hidden = spec.hidden
    swapped = dict(weights)
    # Swap the input and forget gates of layer 0: a plausible layout bug.
    w_ih = weights["layer0.W_ih"].copy()
    w_ih[:, :hidden], w_ih[:, hidden : 2 * hidden] = w_ih[:, hidden : 2 * hidden], w_ih[:, :hidden]
    swapped["layer0.W_ih"] = w_ih
    runner = torch_infer.build(spec, swapped, "eager", "cpu")
    output = runner.to_numpy(runner(runner.prepare(x)))
    _, relative = reference.max_errors(output, reference.forward(spec, weights, x))
    assert relative > TOLERANCE


@pytest.mark.parametrize(("arch", "mode"), CASES)
def test_compile_info_says_compiled_exactly_in_compiled_mode(arch: str, mode: str) -> None:
    info = small_run(arch, mode).compile_info
    if mode == "compiled":
        assert info.compiled
        assert info.graph_count == 1  # after two calls: the second reused the graph
        assert (info.graph_breaks, info.fallbacks) == (0, 0)
        assert "allow_rnn=True" in info.how
    else:
        assert not info.compiled
        assert info.graph_count == 0


@pytest.mark.parametrize("arch", specs.ARCHITECTURES)
def test_dynamo_explain_finds_one_graph_with_the_compiled_settings(arch: str) -> None:
    runner, x = small_runner(arch, "compiled")  # sets allow_rnn as the compiled mode does
    with torch.inference_mode():
        explained = torch._dynamo.explain(runner.module)(runner.prepare(x))
    assert explained.graph_count >= 1
    assert explained.graph_count == small_run(arch, "compiled").compile_info.graph_count


def test_compile_info_reports_an_lstm_that_dynamo_leaves_eager() -> None:
    """torch's default (allow_rnn=False) silently runs nn.LSTM eager: compile_info must say so."""
    runner, x = small_runner("lstm", "compiled")
    with torch._dynamo.config.patch(allow_rnn=False):
        runner(runner.prepare(x))
    info = runner.compile_info()
    assert not info.compiled
    assert (info.graph_count, info.fallbacks) == (0, 1)
    assert any("LSTM" in reason for reason in info.details["break_reasons"])


def test_compile_info_before_the_first_compiled_call_raises() -> None:
    runner, _ = small_runner("mlp", "compiled")
    with pytest.raises(RuntimeError, match="after the first call"):
        runner.compile_info()


def test_counter_flops_equals_the_hand_count_for_the_mlp() -> None:
    runner, x = small_runner("mlp")
    hand_count = 2 * BATCH * (20 * 32 + 32 * 10)  # input 20, hidden 32, classes 10
    flops, note = runner.counter_flops(runner.prepare(x))
    assert flops == hand_count
    assert "FlopCounterMode" in note


def test_counter_flops_equals_the_hand_count_for_the_cnn() -> None:
    runner, x = small_runner("cnn")
    conv = 2 * BATCH * (8 * 8 * 4 * 3 * 9 + 4 * 4 * 8 * 4 * 9)  # out pixels × cout × cin × k²
    dense = 2 * BATCH * (8 * 2 * 2 * 16 + 16 * 10)
    assert runner.counter_flops(runner.prepare(x))[0] == conv + dense


def test_counter_flops_equals_the_hand_count_for_the_elman_rnn() -> None:
    runner, x = small_runner("rnn")
    steps, hidden = 5, 16
    per_step = (8 * hidden + hidden * hidden) + (hidden * hidden + hidden * hidden)
    hand_count = 2 * BATCH * (steps * per_step + hidden * 10)
    assert runner.counter_flops(runner.prepare(x))[0] == hand_count


@pytest.mark.parametrize(
    ("arch", "blind_module"), [("lstm", "rnn (LSTM)"), ("transformer", "self_attn")]
)
def test_counter_flops_gives_a_reason_instead_of_a_short_count(
    arch: str, blind_module: str
) -> None:
    runner, x = small_runner(arch)
    flops, reason = runner.counter_flops(runner.prepare(x))
    assert flops is None
    assert blind_module in reason


def test_unknown_mode_raises_naming_it() -> None:
    spec = specs.build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'jit'"):
        torch_infer.build(spec, make_weights(spec), "jit", "cpu")


def test_unknown_device_raises_naming_it() -> None:
    spec = specs.build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="'tpu'"):
        torch_infer.build(spec, make_weights(spec), "eager", "tpu")


def test_input_of_the_wrong_shape_raises_naming_the_shape() -> None:
    runner, _ = small_runner("cnn")
    with pytest.raises(ValueError, match=r"\(2, 8, 8, 3\)"):
        runner.prepare(np.zeros((2, 8, 8, 3), dtype=np.float32))  # NHWC, not NCHW


def test_peak_device_memory_is_none_on_cpu() -> None:
    runner, _ = small_runner("mlp")
    assert runner.peak_device_memory_bytes() is None


def test_set_threads_applies_and_reports_the_count() -> None:
    settings = torch_infer.set_threads(1)
    assert settings["torch.num_threads"] == torch.get_num_threads() == 1
    assert settings["torch.num_interop_threads"] == torch.get_num_interop_threads()
    with pytest.raises(ValueError, match="0"):
        torch_infer.set_threads(0)


def test_importing_the_adapter_loads_neither_jax_nor_tensorflow() -> None:
    script = (
        "import sys\n"
        "from fwbench import specs, weights\n"
        "from fwbench.frameworks import torch_infer\n"
        "spec = specs.build_spec('mlp', {'input': 4, 'hidden': [4]})\n"
        "runner = torch_infer.build(spec, weights.make_weights(spec), 'eager', 'cpu')\n"
        "runner(runner.prepare(weights.make_input(spec, 2)))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'jax', 'jaxlib',"
        " 'tensorflow', 'keras'}))\n"
    )
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    assert result.stdout.split("\n")[-2] == "['torch']"


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize(("arch", "mode"), CASES)
def test_output_matches_reference_on_cuda(arch: str, mode: str) -> None:
    assert small_run(arch, mode, "cuda").relative_error <= TOLERANCE


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_peak_device_memory_on_cuda_holds_at_least_the_weights() -> None:
    spec = specs.build_spec("mlp")
    weights = make_weights(spec)
    runner = torch_infer.build(spec, weights, "eager", "cuda")
    output = runner(runner.prepare(make_input(spec, BATCH)))
    runner.sync(output)
    assert runner.peak_device_memory_bytes() >= sum(w.nbytes for w in weights.values())
