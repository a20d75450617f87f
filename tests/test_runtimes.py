"""Deployment runtimes (fwbench.runtimes): the artifact's layout read from the artifact, the
versions each runtime mode depends on, the threads each session gets, and every path end to
end: export job → checks against the reference → a timed cell, or the export's recorded
reason."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.io.artifact_file import read_manifest
from fwbench.io.cell_file import read_cell
from fwbench.runtimes.layout import permutation

from conftest import in_fresh_process
from plans import export_and_run_cell, plan_of

pytestmark = pytest.mark.per_framework

DIMS = {
    "mlp": {"input": 16, "hidden": [8], "classes": 4},
    "cnn": {
        "channels": 3,
        "height": 8,
        "width": 6,
        "conv_channels": [4],
        "kernel": 3,
        "dense": [8],
        "classes": 4,
    },
    "lstm": {"input": 5, "hidden": 6, "layers": 1, "seq_len": 4, "classes": 3},
}
PATHS = [("torch", "onnxrt"), ("tensorflow", "onnxrt"), ("tensorflow", "litert")]
RUNTIME_NAMES = {"onnxrt": "ONNX Runtime", "litert": "LiteRT"}
THREADS_KEYS = {"onnxrt": "onnxruntime.intra_op_num_threads", "litert": "litert.num_threads"}


# ---- the artifact's layout -----------------------------------------------------------------


def test_the_layout_is_read_from_the_artifacts_input_shape():
    assert permutation((2, 16), (None, 16)) == (0, 1)
    assert permutation((2, 3, 8, 6), (None, 3, 8, 6)) == (0, 1, 2, 3)
    assert permutation((2, 3, 8, 6), (None, 8, 6, 3)) == (0, 2, 3, 1)  # TensorFlow's NHWC
    assert permutation((2, 4, 5), (4, None, 5)) == (1, 0, 2)  # time-major
    assert permutation((2, 4, 5), (2, 4, 5)) == (0, 1, 2)  # a static batch that fits


def test_an_artifact_input_of_no_known_layout_is_refused_naming_both_shapes():
    with pytest.raises(ValueError, match=r"\[None, 7\] is no known layout .* \[2, 16\]"):
        permutation((2, 16), (None, 7))
    with pytest.raises(ValueError, match="no known layout"):
        permutation((3, 16), (2, 16))  # the artifact's batch is fixed at another size


# ---- versions and registry -----------------------------------------------------------------


def test_a_runtimes_version_is_part_of_its_modes_requests_only():
    versions = {"torch": "2.13.0", "onnxruntime": "1.31.1", "onnx": "1.23.2", "onnxscript": "0.7"}
    assert frameworks.mode_versions("torch", "onnxrt", versions) == versions
    assert frameworks.mode_versions("torch", "eager", versions) == {"torch": "2.13.0"}
    assert frameworks.mode_versions("torch", "aoti", versions) == {"torch": "2.13.0"}
    tf = {"tensorflow-cpu": "2.21.0", "keras": "3", "ai-edge-litert": "2.3.0", "tf2onnx": "1.17"}
    assert "ai-edge-litert" not in frameworks.mode_versions("tensorflow", "onnxrt", tf)
    assert "tf2onnx" not in frameworks.mode_versions("tensorflow", "litert", tf)
    assert frameworks.mode_versions("tensorflow", "xla", tf) == {
        "tensorflow-cpu": "2.21.0",
        "keras": "3",
    }


def test_an_onnxruntime_upgrade_changes_the_onnxrt_requests_alone():
    config = {
        "frameworks": ["torch"],
        "modes": {"torch": ["eager", "onnxrt"]},
        "architectures": ["mlp"],
        "batch_sizes": [1],
    }
    cell = {"system": "local", "framework": "torch", "arch": "mlp", "batch": 1}
    requests = {}
    for ort in ("1.31.1", "1.32.0"):
        plan = plan_of(config, versions={"torch": {"torch": "2.13.0", "onnxruntime": ort}})
        requests[ort] = {
            mode: plan.cell_request(cell | {"version": "2.13.0", "mode": mode}).settings_hash()
            for mode in ("eager", "onnxrt")
        }
    assert requests["1.31.1"]["eager"] == requests["1.32.0"]["eager"]
    assert requests["1.31.1"]["onnxrt"] != requests["1.32.0"]["onnxrt"]


def test_a_torchao_upgrade_changes_torchs_int8_static_requests_alone():
    versions = {"torch": "2.13.0", "onnxruntime": "1.31.1", "torchao": "0.18.0"}
    int8_static = frameworks.mode_versions("torch", "aoti", versions, "int8_static")
    assert int8_static == {"torch": "2.13.0", "torchao": "0.18.0"}
    assert frameworks.mode_versions("torch", "aoti", versions) == {"torch": "2.13.0"}
    assert "torchao" in frameworks.mode_versions("torch", "compiled", versions, "int8_static")
    assert "torchao" not in frameworks.mode_versions("torch", "compiled", versions, "bfloat16")
    assert "torchao" not in frameworks.mode_versions("torch", "onnxrt", versions, "int8_static")
    assert "torchao" in frameworks.DISTRIBUTIONS["torch"][1]  # recorded where installed
    config = {
        "frameworks": ["torch"],
        "modes": {"torch": ["aoti"]},
        "architectures": ["mlp"],
        "batch_sizes": [32],
        "precision": {"low": ["int8_static"]},
    }
    cell = {"system": "local", "framework": "torch", "mode": "aoti", "arch": "mlp", "batch": 32}
    requests = {}
    for torchao in ("0.18.0", "0.19.0"):
        plan = plan_of(config, versions={"torch": {"torch": "2.13.0", "torchao": torchao}})
        requests[torchao] = {
            precision: (
                plan.cell_request(cell | {"version": "2.13.0", "precision": precision}).to_json(),
                plan.export_request(cell | {"version": "2.13.0", "precision": precision}).to_json(),
            )
            for precision in ("float32", "int8_static")
        }
    assert requests["0.18.0"]["float32"] == requests["0.19.0"]["float32"]
    old_new = zip(requests["0.18.0"]["int8_static"], requests["0.19.0"]["int8_static"], strict=True)
    for old, new in old_new:
        assert old != new


@pytest.mark.torch
def test_a_runtime_modes_cells_load_the_runtime_not_the_framework():
    pytest.importorskip("onnxruntime")
    adapter = frameworks.load_inference("torch", "onnxrt")
    assert type(adapter).__module__ == "fwbench.runtimes.base"
    assert frameworks.load_inference("torch", "eager").__name__ == "fwbench.frameworks.torch.infer"
    with pytest.raises(RuntimeError, match="set_threads before build"):
        adapter.build(None, None, "onnxrt", "cpu", artifact="x.onnx")


def test_an_onnx_runtime_session_gets_exactly_the_cells_threads():
    pytest.importorskip("onnxruntime")
    from fwbench.runtimes import onnxrt

    settings = onnxrt.thread_settings(3)
    assert settings["onnxruntime.intra_op_num_threads"] == 3
    assert settings["onnxruntime.inter_op_num_threads"] == 1
    assert settings["onnxruntime.execution_mode"] == "sequential"
    assert settings["onnxruntime.allow_spinning"] == "1"
    floor = onnxrt.null_call("cpu", 1)
    assert float(floor.call()[0][0]) == 1.0  # the one-Add model: 0 + 1
    session = onnxrt.Session(onnxrt._one_add_model(), "cpu", 1)
    assert "CPUExecutionProvider" in session.timed.get_provider_options()  # as recorded


def test_litert_floor_is_a_one_add_model_in_an_interpreter_on_the_cells_threads():
    pytest.importorskip("ai_edge_litert")
    from fwbench.runtimes import litert

    assert litert.thread_settings(2)["litert.num_threads"] == 2
    floor = litert.null_call("cpu", 2)
    assert float(floor.call()[0]) == 1.0  # the one-ADD model: 0 + 1
    trace = litert.profile(floor.call, 3)  # no profiler: the run runs, one launch a call
    assert trace.dispatches == 3 and not trace.kernels_visible and trace.events == 0
    with pytest.raises(RuntimeError, match="no CUDA path"):
        litert.null_call("cuda", 2)


def test_onnx_runtimes_profile_reads_a_twin_and_leaves_the_timed_session_unprofiled():
    pytest.importorskip("onnxruntime")
    from fwbench.runtimes import onnxrt

    floor = onnxrt.null_call("cpu", 1)
    calls = 7

    def run() -> None:
        for _ in range(calls):
            floor.call()

    trace = onnxrt.profile(run, calls)
    assert trace.calls == calls and trace.dispatches == calls  # one launch per run
    assert trace.kernel_count() == calls  # the one Add node, once per run
    assert trace.events >= 2 * calls  # each run's own event and its node's, at least
    assert all(s.run == s.timed.run for s in onnxrt.Session.live)  # timed again, unprofiled


def _ort_run(ts: float, nodes: list[tuple[str, float, float]]) -> list[dict]:
    run = {"ph": "X", "cat": "Session", "name": "model_run", "ts": ts, "dur": 100}
    return [run] + [
        {"ph": "X", "cat": "Node", "name": name, "ts": start, "dur": dur}
        for name, start, dur in nodes
    ]


def test_an_ort_trace_keeps_the_last_runs_and_reads_node_kernel_times_as_kernels():
    pytest.importorskip("onnxruntime")
    from fwbench.runtimes.onnxrt import trace_of

    warm = _ort_run(0, [("a_kernel_time", 10, 50)])
    timed = _ort_run(1000, [("a_kernel_time", 1010, 20), ("a_fence_before", 1005, 1)])
    timed += _ort_run(2000, [("a_kernel_time", 2010, 30), ("b_kernel_time", 2050, 10)])
    trace = trace_of(warm + timed, calls=2)
    assert trace.dispatches == 2 and trace.kernel_count() == 3
    assert trace.kernel_ns() == pytest.approx((20 + 30 + 10) * 1e3)  # µs in, ns out
    assert trace.events == 6  # both runs' own events and their four node events
    assert len(trace.spans) == 6  # every event of the two runs; the runs cover them
    assert trace.in_framework_ns() == pytest.approx(200e3)
    with pytest.raises(RuntimeError, match="holds 3 runs, not 4"):
        trace_of(warm + timed, calls=4)


# ---- every path, end to end ----------------------------------------------------------------


def _config(framework: str, mode: str, archs: list[str]) -> dict:
    return {
        "frameworks": [framework],
        "modes": {framework: ["eager", mode]},
        "architectures": archs,
        "dims": {arch: DIMS[arch] for arch in archs},
        "batch_sizes": [1, 3],
        "bench": {"warmup": 1, "repeats": 3, "min_sample_s": 0.0, "processes": 1},
    }


def export_and_time(workdir: str | Path, framework: str, mode: str, arch: str) -> None:
    """The export job, then the cell at batch 3 that runs its artifact (b3.nc), then the
    checks' equivalence rows, in workdir: the three jobs of the workflow. done.json names the
    manifest and holds the rows."""
    from fwbench.measure import checks

    workdir = Path(workdir)

    plan = plan_of(_config(framework, mode, [arch]))
    wildcards = {"system": "local", "framework": framework, "mode": mode, "arch": arch}
    wildcards["version"] = plan.version("local", framework)
    manifest = export_and_run_cell(plan, wildcards, 3, workdir)
    rows = checks.equivalence_rows(
        framework=framework,
        archs=[arch],
        dims=DIMS,
        seed=0,
        batch=2,
        tolerance=1e-4,
        modes=[mode],
        artifacts=checks.artifacts_by_cell([str(manifest)]),
    )
    done = {"manifest": str(manifest), "rows": rows}
    (workdir / "done.json").write_text(json.dumps(done, default=str))


def _export_and_cell(tmp_path: Path, framework: str, mode: str, arch: str):
    """export_and_time in a fresh process, as the workflow runs each job (TensorFlow takes
    its threads once per process); its manifest, cell and equivalence rows."""
    in_fresh_process("test_runtimes", "export_and_time", str(tmp_path), framework, mode, arch)
    done = json.loads((tmp_path / "done.json").read_text())
    return Path(done["manifest"]), read_cell(tmp_path / "b3.nc"), done["rows"]


@pytest.mark.parametrize(("framework", "mode"), PATHS)
@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_each_runtime_path_exports_checks_and_times_its_artifact(tmp_path, framework, mode, arch):
    manifest, cell, rows = _export_and_cell(tmp_path, framework, mode, arch)
    document = read_manifest(manifest)
    assert document["status"] == "ok", document.get("error_message")
    assert cell.attrs["status"] == "ok", cell.attrs.get("error_message")
    assert np.isfinite(cell["latency_s"]).all() and float(cell["compiled"]) == 1.0
    assert RUNTIME_NAMES[mode] in cell.attrs["compile_how"]
    assert f'{THREADS_KEYS[mode]}": 1' in cell.attrs["framework_threads"]  # the cell's, exactly
    assert rows[0]["pass"], rows
    if mode == "onnxrt":  # the attribution pass: ORT's profiler on a twin session
        assert "twin of the timed session" in cell.attrs["attribution"]
        assert float(cell["attr_dispatches"]) == 1.0 and float(cell["attr_kernel_regions"]) >= 1
        # The nodes' recorded time; less the in-event cost it may be 0 for a tiny model.
        assert float(cell["attr_kernel_raw_s"]) > 0 and float(cell["attr_kernel_s"]) >= 0
    else:  # no profiler: one launch per call at the one-ADD floor, kernels not seen
        assert cell.attrs["attribution"].startswith("LiteRT's Python interpreter has no")
        assert float(cell["attr_dispatches"]) == 1.0 and float(cell["attr_floor_s"]) > 0
        assert np.isnan(float(cell["attr_kernel_s"])) and float(cell["null_call_s"]) > 0


@pytest.mark.tensorflow
def test_a_recurrence_litert_cannot_convert_is_a_recorded_failure_with_the_converters_reason(
    tmp_path,
):
    manifest, cell, rows = _export_and_cell(tmp_path, "tensorflow", "litert", "lstm")
    document = read_manifest(manifest)
    assert document["status"] == "failed" and document["error_type"] == "ConverterError"
    assert "TensorList" in document["error_message"]
    assert cell.attrs["status"] == "failed" and "the export failed" in cell.attrs["error_message"]
    assert not rows[0]["pass"] and "the export failed" in rows[0]["error"]
