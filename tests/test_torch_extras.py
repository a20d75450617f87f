"""What only the torch adapter has: dynamo's account of compilation (allow_rnn, graph breaks,
the shared compile_info helper), FlopCounterMode's exact counts and blind spots, torch's own
thread API, its STREAM probe, and CUDA (skipped without a GPU).

What every adapter does is in tests/test_adapter_contract.py.
"""

from __future__ import annotations

import pytest

from fwbench import frameworks
from fwbench.frameworks.protocols import StreamProbe
from fwbench.model import reference
from fwbench.model.specs import ARCHITECTURES, build_spec
from fwbench.model.weights import make_input, make_weights

from adapter_cases import BATCH, SMALL_DIMS, TOLERANCE, lazy_import, small_run, small_runner

pytestmark = pytest.mark.torch
torch = lazy_import("torch")
torch_infer = lazy_import("fwbench.frameworks.torch.infer")
compile_info = lazy_import("fwbench.frameworks.torch.compile_info")
CUDA_CASES = [(arch, mode) for arch in ARCHITECTURES for mode in frameworks.MODES["torch"]]


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch_infer.set_threads(1)


# ---- dynamo --------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_compiled_mode_says_it_lets_dynamo_trace_recurrences(arch: str) -> None:
    assert "allow_rnn=True" in small_run("torch", arch, "compiled").compile_info.how


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_dynamo_explain_finds_one_graph_with_the_compiled_settings(arch: str) -> None:
    runner, x = small_runner("torch", arch, "compiled")  # sets allow_rnn as compiled mode does
    with torch.inference_mode():
        explained = torch._dynamo.explain(runner.module)(runner.prepare(x))
    assert explained.graph_count >= 1
    assert explained.graph_count == small_run("torch", arch, "compiled").compile_info.graph_count


def _compiled_variant(arch: str, options: dict):
    spec = build_spec(arch, SMALL_DIMS[arch])
    weights, x = make_weights(spec), make_input(spec, BATCH)
    runner = torch_infer.build(spec, weights, "compiled_variant", "cpu", options)
    prepared = runner.prepare(x)
    runner(prepared)
    output = runner.to_numpy(runner(prepared))
    return runner, output, reference.forward(spec, weights, x)


def test_a_compiled_variant_with_freezing_computes_the_reference_and_says_how() -> None:
    runner, output, expected = _compiled_variant("mlp", {"freezing": True, "fullgraph": True})
    _, relative = reference.max_errors(output, expected)
    assert relative < TOLERANCE
    info = runner.compile_info()
    assert info.compiled and "fullgraph=True" in info.how and "freezing=True" in info.how


def test_unknown_compile_options_and_options_for_eager_raise_naming_them() -> None:
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    with pytest.raises(ValueError, match="backend"):
        torch_infer.build(spec, make_weights(spec), "compiled", "cpu", {"backend": "eager"})
    with pytest.raises(ValueError, match="eager takes no compile options"):
        torch_infer.build(spec, make_weights(spec), "eager", "cpu", {"freezing": True})


def test_compile_info_lists_the_ops_inductor_left_to_eager_kernels():
    # recorded where inductor compiles, as a cell's process 0 does into its empty cache (the
    # session's inductor cache starts empty: conftest)
    # The MLP lowers fully: its GEMMs are library calls (extern_kernels.addmm) in both paths.
    mlp = small_run("torch", "mlp", "compiled").compile_info
    assert mlp.eager_ops == "" and "extern_kernels.addmm" in mlp.details["library_ops"]
    # The LSTM's recurrence and the transformer's encoder layers stay the eager aten kernels.
    lstm = small_run("torch", "lstm", "compiled").compile_info
    assert lstm.eager_ops == "torch.ops.aten.mkldnn_rnn_layer.default ×2", lstm.details
    transformer = small_run("torch", "transformer", "compiled").compile_info.eager_ops
    assert "_transformer_encoder_layer_fwd" in transformer


def test_the_eager_op_recorder_leaves_inductors_caches_on(tmp_path):
    # a later process (or a rounds worker) starts from a copy of process 0's cache: with a
    # pass inductor cannot key (any but a CustomSchedulerPass with a uuid) both caches bypass,
    # and its "warm" first call compiled from scratch
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json; from adapter_cases import small_run; "
        "print(json.dumps(small_run('torch', 'mlp', 'compiled').compile_info.details))"
    )
    env = os.environ | {
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path),
        "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), *sys.path]),
    }

    def process():  # a fresh one each time, as a cell's processes are
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout.strip().splitlines()[-1])

    cold, warm = process(), process()
    assert cold["inductor"].get("fxgraph_cache_miss") == 1, cold
    assert warm["inductor"].get("fxgraph_cache_hit") == 1, warm
    assert warm["aot_autograd"].get("autograd_cache_hit") == 1, warm


def test_compile_info_reports_an_lstm_that_dynamo_leaves_eager() -> None:
    """torch's default (allow_rnn=False) silently runs nn.LSTM eager: compile_info must say so."""
    runner, x = small_runner("torch", "lstm", "compiled")
    with torch._dynamo.config.patch(allow_rnn=False):
        runner(runner.prepare(x))
    info = runner.compile_info()
    assert not info.compiled
    assert (info.graph_count, info.fallbacks) == (0, 1)
    assert any("LSTM" in reason for reason in info.details["break_reasons"])


def test_compile_info_before_the_first_compiled_call_raises() -> None:
    runner, _ = small_runner("torch", "mlp", "compiled")
    with pytest.raises(RuntimeError, match="after the first call"):
        runner.compile_info()


def test_compiled_details_hold_dynamos_counts_and_the_numerics_settings() -> None:
    details = small_run("torch", "mlp", "compiled").compile_info.details
    assert details["frames"] >= 1 and details["ops_captured"] >= 1
    assert details["break_reasons"] == []
    assert details["torch"] == torch.__version__
    assert "float32_matmul_precision" in details["settings"]
    assert {"inductor", "aot_autograd"} <= set(details)


def test_the_shared_helper_counts_graphs_and_breaks_since_its_snapshot() -> None:
    """compile_info_since is what the runner and the trainer both report: a graph break splits
    a function into two graphs, and the break's reason is kept."""

    def broken(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    torch._dynamo.reset()
    start = compile_info.counter_snapshot()
    compiled = torch.compile(broken, backend="eager")
    with pytest.raises(RuntimeError, match="after the first call"):
        compile_info.compile_info_since(start, how="not called yet")
    compiled(torch.ones(3))
    info = compile_info.compile_info_since(start, how="a test", details={"extra": 1})
    assert info.compiled and info.how == "a test"
    assert (info.graph_count, info.graph_breaks, info.fallbacks) == (2, 1, 0)
    assert len(info.details["break_reasons"]) >= 1
    assert info.details["extra"] == 1 and info.details["torch"] == torch.__version__


# ---- FlopCounterMode ---------------------------------------------------------------------------


def test_counter_flops_equals_the_hand_count_for_the_mlp() -> None:
    runner, x = small_runner("torch", "mlp")
    hand_count = 2 * BATCH * (20 * 32 + 32 * 10)  # input 20, hidden 32, classes 10
    flops, note = runner.counter_flops(runner.prepare(x))
    assert flops == hand_count
    assert "FlopCounterMode" in note


def test_counter_flops_equals_the_hand_count_for_the_cnn() -> None:
    runner, x = small_runner("torch", "cnn")
    conv = 2 * BATCH * (8 * 8 * 4 * 3 * 9 + 4 * 4 * 8 * 4 * 9)  # out pixels × cout × cin × k²
    dense = 2 * BATCH * (8 * 2 * 2 * 16 + 16 * 10)
    assert runner.counter_flops(runner.prepare(x))[0] == conv + dense


def test_counter_flops_equals_the_hand_count_for_the_elman_rnn() -> None:
    runner, x = small_runner("torch", "rnn")
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
    runner, x = small_runner("torch", arch)
    flops, reason = runner.counter_flops(runner.prepare(x))
    assert flops is None
    assert blind_module in reason


# ---- threads and hardware ----------------------------------------------------------------------


def test_set_threads_applies_and_reports_the_count() -> None:
    settings = torch_infer.set_threads(1)
    assert settings["torch.num_threads"] == torch.get_num_threads() == 1
    assert settings["torch.num_interop_threads"] == torch.get_num_interop_threads()


def test_the_hardware_probe_also_runs_stream_and_names_the_gpu() -> None:
    assert isinstance(frameworks.load("torch", "hardware"), StreamProbe)


# ---- CUDA --------------------------------------------------------------------------------------


def needs_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")


@pytest.mark.parametrize(("arch", "mode"), CUDA_CASES)
def test_output_matches_reference_on_cuda(arch: str, mode: str) -> None:
    needs_cuda()
    assert small_run("torch", arch, mode, "cuda").relative_error <= TOLERANCE


def test_peak_device_memory_on_cuda_holds_at_least_the_weights() -> None:
    needs_cuda()
    spec = build_spec("mlp")
    weights = make_weights(spec)
    runner = torch_infer.build(spec, weights, "eager", "cuda")
    output = runner(runner.prepare(make_input(spec, BATCH)))
    runner.sync(output)
    assert runner.peak_device_memory_bytes() >= sum(w.nbytes for w in weights.values())


def test_inductors_isa_probe_builds_into_an_empty_cache_and_a_seeded_one_reuses_it(tmp_path):
    # fwbench.measure.compile_cache seeds every cold cache of torch's compiled and aoti cells
    # with this probe: when inductor stops building it into its cache directory, or rebuilds
    # it in a seeded one, the seed is of no use (and this fails)
    import json
    import os
    import shutil
    import subprocess
    import sys

    def probe(cache, *argv):
        env = os.environ | {"TORCHINDUCTOR_CACHE_DIR": str(cache)}
        done = subprocess.run(
            [sys.executable, *argv], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip().splitlines()[-1]

    seed = tmp_path / "seed"
    made = json.loads(probe(seed, "-m", "fwbench.frameworks.torch.cache_seed"))

    def files(cache):
        return sorted(str(path.relative_to(cache)) for path in cache.rglob("*"))

    assert any(name.endswith(".so") for name in files(seed)) and made["probe_s"] > 0
    shutil.copytree(seed, tmp_path / "copy")
    again = "from torch._inductor import cpu_vec_isa; print(cpu_vec_isa.pick_vec_isa())"
    assert probe(tmp_path / "copy", "-c", again) == made["isa"]
    assert files(tmp_path / "copy") == files(seed)  # nothing built again


def test_a_process_serving_several_batches_compiles_each_shape_static() -> None:
    """A rounds worker builds the compiled mlp at several batches in one process: each batch
    gets a static graph of its own, as its cell's, never dynamo's automatic dynamic-shape one
    (a dynamic graph would serve a third batch without compiling again)."""
    spec = build_spec("mlp", SMALL_DIMS["mlp"])
    weights = make_weights(spec)
    runners = [torch_infer.build(spec, weights, "compiled", "cpu") for _ in range(3)]
    graphs = []
    for runner, batch in zip(runners, (2, 4, 3), strict=True):
        with runner.timing_context():
            runner.call_in_context(runner.prepare(make_input(spec, batch)))
        graphs.append(compile_info.counter_snapshot())
    assert "dynamic=False" in runners[0].compile_info().how
    unique = [snapshot["stats"]["unique_graphs"] for snapshot in graphs]
    assert unique[2] > unique[1] > unique[0], unique  # the third batch compiled too
